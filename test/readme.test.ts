import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { CLI, privateDataDir } from './helpers/client.js';

/**
 * The README's install and client snippets, checked against what each client documents and
 * started where they can be. Sources of the formats:
 * - Claude Desktop (claude_desktop_config.json) and Cursor (.cursor/mcp.json): `mcpServers`, each
 *   server `{command, args, env}` (stdio); Cursor also `{url, headers}` with `${env:NAME}`
 *   (cursor.com/docs/mcp). Claude Desktop's file starts stdio servers only.
 * - mcp-remote's README (geelen/mcp-remote): `npx -y mcp-remote URL --header "Authorization:${AUTH}"`
 *   with `AUTH` in `env`; plain http only for localhost and 127.0.0.1 unless --allow-http.
 * - VS Code (.vscode/mcp.json): `servers`, each with `type` "stdio" (`command`, `args`) or "http"
 *   (`url`, `headers`); `${input:ID}` names an entry of `inputs` (`promptString`).
 * - Claude Code: `claude mcp add [options] NAME -- COMMAND [ARGS...]`, and
 *   `claude mcp add --transport http NAME URL --header "Name: value"`.
 */
const repo = path.resolve(import.meta.dirname, '..');
const readme = readFileSync(path.join(repo, 'README.md'), 'utf8');

/** Fenced blocks of one language, with the paragraph just before each. */
function blocks(lang: string): Array<{ before: string; text: string }> {
  const found: Array<{ before: string; text: string }> = [];
  const fence = new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g');
  for (let m = fence.exec(readme); m; m = fence.exec(readme)) {
    found.push({ before: readme.slice(Math.max(0, m.index - 400), m.index), text: m[1]! });
  }
  return found;
}

const clientSection = readme.slice(readme.indexOf('## Client configuration'), readme.indexOf('\n## ', readme.indexOf('## Client configuration') + 5));

type Server = { command?: string; args?: string[]; env?: Record<string, string>; url?: string; headers?: Record<string, string>; type?: string };

describe('README: installing', () => {
  it('says plainly that the npm name is not published, and runs nothing through it', () => {
    expect(readme).toMatch(/npm name `debugkit` is not published yet/);
    for (const { text } of [...blocks('sh'), ...blocks('json'), ...blocks('text')]) {
      expect(text).not.toMatch(/npx\s+(-y\s+)?debugkit\b/);
      expect(text).not.toMatch(/"-y",\s*"debugkit"/);
      expect(text).not.toMatch(/"command":\s*"npx",\s*"args":\s*\[\s*"(-y",\s*")?debugkit"/);
    }
  });

  it('gives the commands that work today: pack, install -g of the tarball, the installed command', () => {
    const install = blocks('sh')
      .map((b) => b.text)
      .join('\n');
    expect(install).toMatch(/^npm pack\b/m);
    expect(install).toMatch(/^npm install -g \.\/debugkit-\d+\.\d+\.\d+\.tgz/m);
    const version = (JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { version: string }).version;
    expect(install).toContain(`debugkit-${version}.tgz`);
    expect(readme).toMatch(/node \/abs\/path\/to\/debugkit\/dist\/cli\.js/);
    expect(readme).toContain('io.github.debugkit/debugkit');
    expect(readme).toMatch(/Publishing is pending/);
  });
});

describe("README: client configuration, each against its client's format", () => {
  const json = blocks('json').filter((b) => clientSection.includes(b.text));
  const parsed = json.map((b) => ({ ...b, config: JSON.parse(b.text) as { mcpServers?: Record<string, Server>; servers?: Record<string, Server>; inputs?: Array<{ id: string; type: string }> } }));

  it('every JSON snippet parses and is a Claude Desktop/Cursor or a VS Code configuration', () => {
    expect(parsed.length).toBeGreaterThanOrEqual(5);
    for (const { config } of parsed) expect(Boolean(config.mcpServers) !== Boolean(config.servers)).toBe(true);
  });

  it("mcpServers entries are stdio {command, args, env} or Cursor's {url, headers}; the Claude Desktop HTTP one goes through mcp-remote", () => {
    for (const { config, before } of parsed.filter((p) => p.config.mcpServers)) {
      for (const server of Object.values(config.mcpServers!)) {
        const keys = Object.keys(server).sort();
        if (server.url) {
          expect(keys.every((k) => ['headers', 'url'].includes(k))).toBe(true);
          expect(before).toMatch(/Cursor/);
          expect(before.slice(before.lastIndexOf('\n\n'))).not.toMatch(/Claude Desktop/);
          expect(server.headers?.Authorization).toMatch(/^Bearer \$\{env:[A-Z_]+\}$/);
        } else {
          expect(keys.every((k) => ['args', 'command', 'env'].includes(k))).toBe(true);
          expect(typeof server.command).toBe('string');
          expect(Array.isArray(server.args)).toBe(true);
        }
      }
    }
    const bridge = parsed.flatMap((p) => Object.values(p.config.mcpServers ?? {})).find((s) => s.args?.includes('mcp-remote'));
    expect(bridge, 'no mcp-remote snippet for Claude Desktop').toBeDefined();
    expect(bridge!.command).toBe('npx');
    const [yes, pkg, url, flag, header] = bridge!.args!;
    expect([yes, pkg, flag]).toEqual(['-y', 'mcp-remote', '--header']);
    expect(new URL(url!).hostname).toMatch(/^(localhost|127\.0\.0\.1)$/);
    const variable = /^Authorization:\$\{([A-Z_]+)\}$/.exec(header!)?.[1];
    expect(variable, `header ${header}`).toBeDefined();
    expect(bridge!.env?.[variable!]).toMatch(/^Bearer \S+$/);
  });

  it('VS Code servers have a type, and every ${input:...} names an input', () => {
    const vscode = parsed.find((p) => p.config.servers)!.config;
    for (const server of Object.values(vscode.servers!)) {
      expect(['stdio', 'http']).toContain(server.type);
      if (server.type === 'stdio') {
        expect(typeof server.command).toBe('string');
        expect(Array.isArray(server.args)).toBe(true);
      } else {
        expect(server.url).toMatch(/^https?:\/\//);
      }
      for (const [, id] of JSON.stringify(server).matchAll(/\$\{input:([^}]+)\}/g)) expect(vscode.inputs?.map((i) => i.id)).toContain(id);
    }
  });

  it('claude mcp add lines put options before the name and the command after --', () => {
    const lines = clientSection.split('\n').filter((l) => l.startsWith('claude mcp add'));
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const line of lines) {
      const [head, command] = line.replace(/\s+#.*$/, '').split(' -- ');
      if (command !== undefined) {
        expect(head).toMatch(/^claude mcp add( --[a-z-]+ \S+)* [\w-]+$/);
        expect(command).toMatch(/debugkit|dist\/cli\.js/);
      } else {
        expect(head).toMatch(/^claude mcp add --transport http [\w-]+ https?:\/\/\S+ --header "Authorization: Bearer \$[A-Z_]+"$/);
      }
    }
  });

  it('the checkout snippet starts debugkit as it is written (with this checkout for /opt/debugkit)', async () => {
    const stdio = parsed.flatMap((p) => Object.values(p.config.mcpServers ?? {})).find((s) => s.args?.[0]?.endsWith('/dist/cli.js'))!;
    expect(stdio.args![0]).toBe('/opt/debugkit/dist/cli.js');
    const args = stdio.args!.map((a) => a.replace('/opt/debugkit/dist/cli.js', CLI).replace('/path/to/project', repo));
    const transport = new StdioClientTransport({ command: process.execPath, args: [...args, ...privateDataDir([])], stderr: 'pipe' });
    const client = new Client({ name: 'readme-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.length).toBeGreaterThan(10);
    } finally {
      await client.close();
    }
  });
});
