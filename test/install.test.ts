import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * What a stranger does without the npm name: `npm pack`, then `npm install -g ./debugkit-x.y.z.tgz`
 * (here into a temporary prefix), then the installed `debugkit` started by a real MCP client.
 * The tarball is packed from the dist/ that `npm test` has just built (--ignore-scripts: packing
 * must not rebuild dist/ under the other test files running beside this one).
 */
const run = promisify(execFile);
const repo = path.resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { name: string; version: string };

let tmp: string;
let prefix: string;
let bin: string;
let packed: Array<{ path: string; mode: number }>;
const timings: Record<string, number> = {};

async function timed<T>(what: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await work();
  } finally {
    timings[what] = (Date.now() - started) / 1000;
  }
}

const npm = () => ({ cwd: tmp, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false' } });
let tarball: string;

beforeAll(async () => {
  if (!existsSync(path.join(repo, 'dist/cli.js'))) throw new Error('dist/ is not built: run npm run build (npm test does)');
  tmp = mkdtempSync(path.join(os.tmpdir(), 'debugkit-install-'));
  prefix = path.join(tmp, 'prefix');
  bin = path.join(prefix, 'bin');
  const out = await timed('pack', () => run('npm', ['pack', repo, '--ignore-scripts', '--json', '--pack-destination', tmp], npm()));
  const [info] = JSON.parse(out.stdout) as Array<{ filename: string; files: Array<{ path: string; mode: number }> }>;
  packed = info!.files;
  tarball = path.join(tmp, info!.filename);
}, 120_000);

/**
 * The install, once for the tests that run the installed command. --prefer-offline: what the npm
 * cache holds is not asked for again. better-sqlite3 builds from source when no prebuilt binary
 * can be fetched (g++, make, python3: the README says so); that is most of the time it takes.
 */
async function install(): Promise<void> {
  await timed('install', () => run('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', tarball], { ...npm(), timeout: 900_000 }));
  console.log(`npm pack ${timings.pack} s, npm install -g of the tarball ${timings.install} s`);
}

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/**
 * Every file the code reads beside itself at run time, as the package lays it out: each
 * `new URL('./x', import.meta.url)` (the gdb wrapper and references, python's boot directory,
 * package.json) and each worker module, from every source file that ships.
 */
function runtimeFiles(dir = path.join(repo, 'src')): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      found.push(...runtimeFiles(full));
      continue;
    }
    if (!entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) continue;
    const shipped = path.join('dist', path.relative(path.join(repo, 'src'), full)).replace(/\.ts$/, '.js');
    // Code only: a comment may show the pattern without reading anything.
    const text = readFileSync(full, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    // The literal part of the URL (a template's text before its first ${...}: a directory).
    for (const [, , url] of text.matchAll(/new URL\(\s*(['`])([^'`]+)\1\s*,\s*import\.meta\.url\s*\)/g)) {
      const literal = url!.split('${')[0]!;
      found.push(path.posix.normalize(path.posix.join(path.posix.dirname(shipped), literal)));
    }
    for (const [, worker] of text.matchAll(/workerEntry\(import\.meta\.url, '([^']+)'\)/g)) found.push(path.posix.join(path.posix.dirname(shipped), `${worker}.js`));
  }
  return found;
}

describe('the packed tarball', () => {
  it('holds the licence, the code and every file the server reads at run time, and nothing stale', () => {
    const paths = packed.map((f) => f.path);
    for (const file of ['LICENSE', 'README.md', 'package.json', 'dist/cli.js']) expect(paths).toContain(file);
    const needed = runtimeFiles();
    expect(needed).toEqual(expect.arrayContaining(['dist/toolsets/gdb/exec-wrapper.sh', 'dist/toolsets/gdb/docs/', 'dist/toolsets/python/boot', 'package.json']));
    for (const file of needed) {
      const inside = file.endsWith('/') ? file : `${file}/`;
      expect(
        paths.some((p) => p === file || p.startsWith(inside)),
        `${file} is read at run time but not in the tarball`,
      ).toBe(true);
    }
    expect(paths).toContain('dist/toolsets/python/boot/sitecustomize.py');
    const wrapper = packed.find((f) => f.path === 'dist/toolsets/gdb/exec-wrapper.sh')!;
    expect(wrapper.mode & 0o111, 'exec-wrapper.sh must be executable').not.toBe(0);
    expect(paths.filter((p) => p.includes('__pycache__') || /\.test\.js$/.test(p))).toEqual([]);
    // Every compiled file has its source: nothing left in dist/ from files since removed.
    const orphans = paths
      .filter((p) => p.startsWith('dist/') && /\.(js|d\.ts)(\.map)?$/.test(p))
      .filter((p) => !existsSync(path.join(repo, 'src', p.slice('dist/'.length).replace(/\.(js|d\.ts)(\.map)?$/, '.ts'))));
    expect(orphans).toEqual([]);
  });
});

describe('the tarball installed with npm install -g', () => {
  beforeAll(install, 960_000);

  it("debugkit --version is package.json's version", async () => {
    const { stdout } = await run(path.join(bin, 'debugkit'), ['--version']);
    expect(stdout.trim()).toBe(pkg.version);
  });

  it('serves tools/list over stdio to a real MCP client, and its tools work (docs, gdb through the exec wrapper)', async () => {
    const root = mkdtempSync(path.join(tmp, 'root-'));
    const data = mkdtempSync(path.join(tmp, 'data-'));
    copyFileSync('/bin/echo', path.join(root, 'say'));
    // The command a client config names: the installed debugkit, started from PATH.
    const transport = new StdioClientTransport({
      command: 'debugkit',
      args: ['--root', root, '--data-dir', data],
      env: { ...(process.env as Record<string, string>), PATH: `${bin}:${process.env.PATH}` },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'install-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      // One tool of each toolset.
      for (const name of ['open', 'python_start_session', 'kubectl', 'keploy_list_mocks', 'debugger_launch']) expect(names).toContain(name);
      expect(client.getServerVersion()?.version).toBe(pkg.version);

      // The gdb references are files postbuild copies into dist/.
      const doc = await client.readResource({ uri: 'gdb://commands/reference' });
      expect((doc.contents[0] as { text: string }).text).toMatch(/^# /);

      // gdb starts the program through dist/toolsets/gdb/exec-wrapper.sh, which hands its stdout back apart.
      const call = async (name: string, args: Record<string, unknown>) => {
        const r = await client.callTool({ name, arguments: args });
        const s = r.structuredContent as { type: string; content: any };
        if (s?.type !== 'ok') throw new Error(`${name} failed: ${JSON.stringify(r.content)}`);
        return s.content;
      };
      const { id } = await call('open', { program: 'say', args: ['installed', 'ok'] });
      const ran = await call('call', { id, command: 'run' });
      expect(ran.state).toBe('exited');
      expect(ran.program_output.stdout).toBe('installed ok\n');
      await call('close', { id });
    } finally {
      await client.close();
    }
  });

  it('its doctor names the installed debugkit command in the client configuration it prints', async () => {
    const result = await run(path.join(bin, 'debugkit'), ['doctor', '--root', '/srv/project'], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } }).catch((err: { stdout: string }) => err);
    expect(result.stdout).toMatch(/"command": "debugkit",\s*"args": \[\s*"--root",\s*"\/srv\/project"\s*\]/);
  });
});
