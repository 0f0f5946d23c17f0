import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { connectStdio, connectStdioModern, type ModernTestClient, type TestClient } from './helpers/client.js';
import { SKILL_MAX_CHARS } from '../src/server/skills.js';

// Issue 23, "the playbook, served": one skill for the whole server and one per toolset, served
// through the Skills extension (SEP-2640) to the v2 SDK's SkillsClient, which checks each file's
// size, digest and frontmatter against the listing; the same text as resources for clients
// without the extension, and as prompts for clients that know neither.

const ALL = ['debugkit', 'gdb', 'python-debugging', 'reverse-debugging', 'dependency-mocks', 'support-bundles'];
/** A tool's name in backquotes (parameters such as `start_line` are no tool). */
const TOOL_NAMES = /`((?:python|keploy|debugger|gdb|bundle|initialize|list|grep|read)_[a-z_]+|open|call|close|kubectl)`/g;

let modern: ModernTestClient;
let legacy: TestClient;
beforeAll(async () => {
  [modern, legacy] = await Promise.all([connectStdioModern(), connectStdio()]);
}, 60_000);
afterAll(async () => {
  await Promise.all([modern?.client.close(), legacy?.client.close()]);
});

describe('skills (io.modelcontextprotocol/skills)', () => {
  it('are listed and read, each verified by the SDK client, short enough to read whole', async () => {
    const skills = new SkillsClient(modern.client);
    expect(skills.supported).toBe(true);
    const { skills: entries } = await skills.list();
    expect(entries.map((e) => e.frontmatter.name).sort()).toEqual([...ALL].sort());
    const tools = new Set((await modern.client.listTools()).tools.map((t) => t.name));
    for (const entry of entries) {
      const file = await skills.read(entry);
      expect(file.verified, entry.uri).toBe(true);
      expect(file.text!.length, entry.uri).toBeLessThanOrEqual(SKILL_MAX_CHARS);
      expect(String(entry.frontmatter.description).length).toBeGreaterThan(40);
      // Every tool a skill names is one the server serves: a playbook that names a tool that is not there misleads.
      for (const [, name] of file.text!.matchAll(TOOL_NAMES)) expect(tools.has(name!), `${entry.uri} names ${name}`).toBe(true);
    }
  });

  it('are resources any client lists and reads', async () => {
    const { resources } = await legacy.client.listResources();
    const uris = resources.map((r) => r.uri);
    for (const name of ALL) expect(uris).toContain(`skill://${name}/SKILL.md`);
    const read = await legacy.client.readResource({ uri: 'skill://gdb/SKILL.md' });
    expect((read.contents[0] as { text: string }).text).toMatch(/^---\nname: gdb\n/);
  });

  it('are prompts of the same names, the skill without its frontmatter', async () => {
    const { prompts } = await legacy.client.listPrompts();
    expect(prompts.map((p) => p.name).sort()).toEqual([...ALL].sort());
    const got = await legacy.client.getPrompt({ name: 'python-debugging' });
    const text = (got.messages[0]!.content as { text: string }).text;
    expect(text).toMatch(/^# Python debugging\n/);
    expect(text).toContain('python_run_to_breakpoint');
  });
});

describe('only the toolsets served have their skill', () => {
  it('--toolsets gdb serves the overview and gdb', async () => {
    const only = await connectStdioModern({ args: ['--toolsets', 'gdb'] });
    try {
      const { skills } = await new SkillsClient(only.client).list();
      expect(skills.map((s) => s.frontmatter.name).sort()).toEqual(['debugkit', 'gdb']);
    } finally {
      await only.client.close();
    }
  });
});
