import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, privateDataDir } from './helpers/client.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'debugkit-doctor-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** `debugkit doctor` from the built CLI, with PATH as given. */
function doctor(PATH: string, args: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, 'doctor', ...args], { env: { ...process.env, PATH }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** A directory of links to the named system commands, to build a PATH that has only them. */
function binWith(name: string, commands: Record<string, string>, scripts: Record<string, string> = {}): string {
  const dir = path.join(tmp, name);
  mkdirSync(dir, { recursive: true });
  for (const [as, target] of Object.entries(commands)) symlinkSync(target, path.join(dir, as));
  for (const [as, text] of Object.entries(scripts)) {
    writeFileSync(path.join(dir, as), text);
    chmodSync(path.join(dir, as), 0o755);
  }
  return dir;
}

const NEEDED = { gdb: '/usr/bin/gdb', kubectl: '/usr/bin/kubectl', proxychains4: '/usr/bin/proxychains4', 'dpkg-query': '/usr/bin/dpkg-query', python3: '/usr/bin/python3' };

/** The line doctor printed for an engine. */
const lineOf = (out: string, engine: string) => out.split('\n').find((l) => new RegExp(`^(ok|MISSING)\\s+${engine.replace(/[+]/g, '\\+')}\\s`).test(l));

/** The lines of the section under a heading, up to the next blank line. */
function section(out: string, heading: RegExp): string {
  const lines = out.split('\n');
  const start = lines.findIndex((l) => heading.test(l));
  if (start < 0) return '';
  const end = lines.findIndex((l, i) => i > start && l.trim() === '');
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

describe('debugkit doctor', () => {
  it('a missing test-only tool is not a failure: exit 0, listed apart from what debugkit needs', async () => {
    // Everything debugkit needs, and none of gcc, rg, redis-server.
    const r = await doctor(binWith('needed-only', NEEDED));
    expect(r.stdout).toMatch(/What debugkit needs:/);
    expect(section(r.stdout, /What only debugkit's own tests need/)).toMatch(/^MISSING gcc\s/m);
    expect(section(r.stdout, /What debugkit uses when it is there/)).toMatch(/^MISSING ripgrep\s/m);
    expect(section(r.stdout, /What debugkit needs:/)).not.toMatch(/MISSING/);
    expect(r.stdout).toMatch(/Everything debugkit needs is present\./);
    expect(r.stdout).toMatch(/optional or test-only missing: not needed to run debugkit/);
    expect(r.code).toBe(0);
  });

  it("names Go's engines (issue 24) when they are there, and how to install them when not, without failing", async () => {
    const r = await doctor(binWith('with-go', { ...NEEDED, go: '/usr/bin/go', dlv: '/usr/bin/dlv' }));
    expect(lineOf(r.stdout, 'go')).toMatch(/^ok\s+go\s+go version go1\.\d+/);
    expect(lineOf(r.stdout, 'delve')).toMatch(/^ok\s+delve\s+Delve 1\.\d+\.\d+/);
    // TypeScript programs run through tsx, a dependency: always there after npm install.
    expect(section(r.stdout, /What debugkit needs:/)).toMatch(/^ok\s+tsx\s+tsx 4\.\d+\.\d+/m);
    const without = await doctor(binWith('without-go', NEEDED));
    expect(section(without.stdout, /What debugkit uses when it is there/)).toMatch(/^MISSING delve\s.*\n\s+install: apt-get install -y delve/m);
    expect(without.code).toBe(0);
  });

  it('a missing tool debugkit needs fails, naming it and its install command', async () => {
    const { kubectl: _left, ...rest } = NEEDED;
    const r = await doctor(binWith('no-kubectl', rest));
    expect(r.code).toBe(1);
    expect(section(r.stdout, /What debugkit needs:/)).toMatch(/^MISSING kubectl\s.*\n\s+install: apt-get install -y kubernetes-client/m);
    expect(r.stdout).toMatch(/1 that debugkit needs missing/);
  });

  it('checks the python3 the python toolset will run (the one on PATH), not a fixed one', async () => {
    // A python3 first on PATH that can import nothing outside the standard library (-I -S): the
    // python toolset would fail with it, although /usr/bin/python3 has debugpy.
    const bare = binWith('bare-python', {}, { python3: '#!/bin/sh\nexec /usr/bin/python3 -I -S "$@"\n' });
    const without = await doctor(`${bare}:${process.env.PATH}`);
    const line = lineOf(without.stdout, 'python3 + debugpy');
    expect(line).toMatch(/^MISSING/);
    expect(without.stdout).toMatch(/debugpy is not importable by python3/);
    expect(without.code).toBe(1);

    // A python3 that is a wrapper in another directory: doctor names that one, with its versions.
    const wrapped = binWith('wrapped-python', {}, { python3: '#!/bin/sh\nexec /usr/bin/python3 "$@"\n' });
    const ok = await doctor(`${wrapped}:${process.env.PATH}`);
    expect(lineOf(ok.stdout, 'python3 + debugpy')).toMatch(new RegExp(`^ok\\s+python3 \\+ debugpy\\s+Python 3\\.\\d+\\.\\d+, debugpy \\S+.*${wrapped}/python3$`));
  });

  it('prints a client configuration for this machine that starts this debugkit as it is', async () => {
    const root = mkdtempSync(path.join(tmp, 'root-'));
    // A PATH with no debugkit on it (node is started by its absolute path).
    const r = await doctor('/usr/bin:/bin', ['--root', root]);
    const json = r.stdout.slice(r.stdout.indexOf('{\n  "mcpServers"'));
    const config = JSON.parse(json.slice(0, json.indexOf('\n}\n') + 2)) as { mcpServers: { debugkit: { command: string; args: string[] } } };
    const server = config.mcpServers.debugkit;
    expect(server).toEqual({ command: process.execPath, args: [CLI, '--root', root] });
    expect(r.stdout).toContain(`claude mcp add debugkit -- ${process.execPath} ${CLI} --root ${root}`);
    expect(r.stdout).toContain('"${workspaceFolder}"');

    // Pasted into a client, it starts and serves (a private data directory kept out of $HOME).
    const transport = new StdioClientTransport({ command: server.command, args: [...server.args, ...privateDataDir([])], stderr: 'pipe' });
    const client = new Client({ name: 'doctor-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('open');
    } finally {
      await client.close();
    }
  });

  it('names the debugkit command when the one on PATH is this debugkit', async () => {
    const bin = binWith('with-debugkit', { debugkit: CLI });
    const r = await doctor(`${bin}:${process.env.PATH}`, ['--root', '/srv/project']);
    expect(r.stdout).toMatch(/"command": "debugkit",\s*"args": \[\s*"--root",\s*"\/srv\/project"\s*\]/);
    expect(r.stdout).toContain('claude mcp add debugkit -- debugkit --root /srv/project');
  });
});
