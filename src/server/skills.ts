import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { McpServer } from '@modelcontextprotocol/server';
import { SkillsExtension, type SkillSource } from '@modelcontextprotocol/server/ext/skills';
import type { Skill } from '@modelcontextprotocol/core/ext/skills';

/**
 * debugkit's playbook for agents, served three ways from one set of files (src/skills/<name>/SKILL.md,
 * copied to dist/skills): as the Skills extension (io.modelcontextprotocol/skills: skills/list,
 * skills/get, `skill://<name>/SKILL.md` resources), as resources any client lists and reads, and as
 * MCP prompts of the same name for clients that know neither. One skill for the whole server and
 * one per toolset served.
 */

/** The skill of each toolset, by toolset name; `debugkit` is always served. */
const TOOLSET_SKILLS: Record<string, string> = {
  gdb: 'gdb',
  python: 'python-debugging',
  debugger: 'reverse-debugging',
  mocks: 'dependency-mocks',
  bundles: 'support-bundles',
};
export const OVERVIEW_SKILL = 'debugkit';

/** Most characters a skill's SKILL.md may hold (about 1,000 tokens): a playbook an agent reads whole. */
export const SKILL_MAX_CHARS = 4000;

export interface ServedSkill {
  name: string;
  description: string;
  uri: string;
  /** The whole SKILL.md, frontmatter included (what the resource serves). */
  text: string;
  /** The text after the frontmatter (what the prompt sends). */
  body: string;
}

const SKILLS_DIR = fileURLToPath(new URL('../skills/', import.meta.url));

/** The frontmatter's `name` and `description` and the body of a SKILL.md; throws naming what is missing. */
function parseSkill(file: string, text: string): { name: string; description: string; body: string } {
  const match = /^---\n([\s\S]*?)\n---\n/.exec(text);
  if (!match) throw new Error(`${file}: a SKILL.md starts with a --- frontmatter block`);
  const fields = new Map<string, string>();
  for (const line of match[1]!.split('\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  const name = fields.get('name');
  const description = fields.get('description');
  if (!name || !description) throw new Error(`${file}: the frontmatter needs a name and a description`);
  return { name, description, body: text.slice(match[0].length).trim() };
}

/** The skills for these toolsets (the overview first), read from disk once. */
export function loadSkills(toolsets: readonly string[], dir: string = SKILLS_DIR): ServedSkill[] {
  const names = [OVERVIEW_SKILL, ...toolsets.flatMap((t) => (TOOLSET_SKILLS[t] ? [TOOLSET_SKILLS[t]] : []))];
  return names.map((folder) => {
    const file = `${dir}${folder}/SKILL.md`;
    const text = readFileSync(file, 'utf8');
    const { name, description, body } = parseSkill(file, text);
    if (name !== folder) throw new Error(`${file}: its name is "${name}", not its folder's "${folder}"`);
    if (text.length > SKILL_MAX_CHARS) throw new Error(`${file}: ${text.length} characters, over the ${SKILL_MAX_CHARS} a skill may hold`);
    return { name, description, uri: `skill://${name}/SKILL.md`, text, body };
  });
}

/** The Skills extension over these skills: one catalog, attached to each client's server. */
export function skillsExtension(skills: readonly ServedSkill[]): SkillsExtension {
  const entries: Skill[] = skills.map((s) => {
    const bytes = Buffer.from(s.text, 'utf8');
    return {
      uri: s.uri,
      frontmatter: { name: s.name, description: s.description },
      resources: [{ uri: s.uri, digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}`, size: bytes.length }],
    };
  });
  const byUri = new Map(skills.map((s) => [s.uri, s]));
  const source: SkillSource = {
    list: () => Promise.resolve({ skills: entries }),
    get: (uri) => Promise.resolve(entries.find((e) => e.uri === uri)),
    read: (uri) => {
      const skill = byUri.get(uri);
      return Promise.resolve(skill ? { text: skill.text, mimeType: 'text/markdown' } : undefined);
    },
    // Clients without the extension find the same text in resources/list.
    listResources: () => Promise.resolve(skills.map((s) => ({ uri: s.uri, name: s.name, description: s.description, mimeType: 'text/markdown' }))),
  };
  return new SkillsExtension({ source, cacheHint: { ttlMs: 3_600_000, cacheScope: 'public' } });
}

/** The same skills as MCP prompts of the same names, for clients that know neither skills nor resources. */
export function registerSkillPrompts(server: McpServer, skills: readonly ServedSkill[]): void {
  for (const skill of skills) {
    server.registerPrompt(skill.name, { title: skill.name, description: skill.description }, () => ({
      description: skill.description,
      messages: [{ role: 'user' as const, content: { type: 'text' as const, text: skill.body } }],
    }));
  }
}
