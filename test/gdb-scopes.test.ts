import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FILES, SHELL } from '../src/toolsets/gdb/test-support.js';
import { createKey, rpc, startNode, tempDataDir, type Node } from './helpers/control.js';

/**
 * One classifier decides what a gdb command reaches, and both the operator's flags and the key's
 * scopes ask it. Every refusal family's spellings (the policy's own corpus, quoting variants
 * included) go through a real server three ways: default flags (refused), flags on with a `gdb`
 * key (-32003 naming the scope), flags on with the scope (let through to gdb).
 */

interface Server {
  node: Node;
  data: Awaited<ReturnType<typeof tempDataDir>>;
  gdb: string;
  full: string;
}

const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'debugkit-gdb-scopes-')));
mkdirSync(path.join(root, 'sub'));
let closed: Server;
let open: Server;
let sleeper: ChildProcess;
let pid: number;

async function server(flags: string[]): Promise<Server> {
  const data = await tempDataDir();
  const store = ['--data-dir', data.dir];
  const gdb = await createKey(store, 'gdb-only', 'gdb', ['--rate', 'unlimited']);
  const full = await createKey(store, 'gdb-full', 'gdb,gdb:shell,gdb:attach', ['--rate', 'unlimited']);
  const node = await startNode([...store, '--root', root, ...flags]);
  return { node, data, gdb: gdb.key, full: full.key };
}

let nextId = 1;
async function call(s: Server, key: string, name: string, args: object): Promise<{ error?: { code: number; message: string; data?: any }; result?: any }> {
  const answer = await rpc(s.node.url, key, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } });
  return answer.body;
}

async function openSession(s: Server, key: string): Promise<string> {
  const answer = await call(s, key, 'open', {});
  const id = answer.result?.structuredContent?.content?.id;
  if (typeof id !== 'string') throw new Error(`open failed: ${JSON.stringify(answer)}`);
  return id;
}

function text(answer: { result?: any }): string {
  return (answer.result?.content ?? []).map((c: { text?: string }) => c.text ?? '').join('');
}

/** Spellings that reach another process: attach and /proc of a process the session did not start. */
const ATTACH = (p: number) => [
  `attach ${p}`,
  `att ${p}`,
  `at ${p}`,
  `-target-attach ${p}`,
  `info proc ${p}`,
  `i proc cmdline ${p}`,
  `thread apply all attach ${p}`,
  `-interpreter-exec console "attach ${p}"`,
  `with print pretty -- info proc ${p}`,
  `interpreter-exec console "info proc ${p}"`,
];

beforeAll(async () => {
  sleeper = spawn('sleep', ['600'], { stdio: 'ignore' });
  pid = sleeper.pid!;
  [closed, open] = await Promise.all([server([]), server(['--allow-gdb-shell', '--allow-attach'])]);
});

afterAll(async () => {
  sleeper?.kill('SIGKILL');
  for (const s of [closed, open]) {
    await s?.node.stop();
    await s?.data.cleanup();
  }
  rmSync(root, { recursive: true, force: true });
});

/** Every spelling of every family, sent by a `gdb` key: each is -32003 naming the scope it needs. */
async function expectScopeRefusals(s: Server): Promise<void> {
  const id = await openSession(s, s.gdb);
  for (const [scope, commands] of [
    ['gdb:shell', [...SHELL, ...FILES]],
    ['gdb:attach', ATTACH(pid)],
  ] as const) {
    for (const command of commands) {
      const answer = await call(s, s.gdb, 'call', { id, command });
      expect(answer.error?.code, command).toBe(-32003);
      expect(answer.error?.message, command).toContain(`needs scope ${scope}`);
      expect(answer.error?.data, command).toMatchObject({ required_scope: scope, tool: 'call' });
    }
  }
  // What it may do, it does.
  expect(text(await call(s, s.gdb, 'call', { id, command: 'print 6*7' }))).toContain('42');
}

describe('default flags: refused', () => {
  it('a key without the scope gets -32003 naming it, for every spelling', () => expectScopeRefusals(closed));

  it('a key with every scope is refused by the flag, which the error names', async () => {
    const id = await openSession(closed, closed.full);
    for (const [flag, commands] of [
      ['--allow-gdb-shell', [...SHELL, ...FILES]],
      ['--allow-attach', ATTACH(pid)],
    ] as const) {
      for (const command of commands) {
        const answer = await call(closed, closed.full, 'call', { id, command });
        expect(answer.error, command).toBeUndefined();
        expect(answer.result?.isError, command).toBe(true);
        expect(text(answer), command).toMatch(/refused: /);
        expect(text(answer), command).toContain(flag);
      }
    }
  });
});

describe('--allow-gdb-shell --allow-attach', () => {
  it('a gdb key gets -32003 naming the scope, for every spelling', () => expectScopeRefusals(open));

  it('a key with the scope is let through to gdb, which runs the command', async () => {
    const id = await openSession(open, open.full);
    const marks = [
      'shell touch m1',
      '!touch m2',
      'she touch m3',
      'with print pretty -- shell touch m4',
      '-interpreter-exec console "shell touch m5"',
      'interpreter-exec console "shell touch m6"',
      'thread apply all shell touch m7',
    ];
    for (const command of marks) {
      const answer = await call(open, open.full, 'call', { id, command });
      expect(answer.error, command).toBeUndefined();
      expect(text(answer), command).not.toMatch(/refused: /);
    }
    for (const m of ['m1', 'm2', 'm3', 'm4', 'm5', 'm6']) expect(existsSync(path.join(root, m)), m).toBe(true);
    for (const command of ["file '/bin/true'", 'file \\/bin/true', 'exec-file "/bin/true"']) {
      const answer = await call(open, open.full, 'call', { id, command });
      expect(answer.error, command).toBeUndefined();
      expect(answer.result?.isError, command).not.toBe(true);
      expect(text(await call(open, open.full, 'call', { id, command: 'info inferiors' })), command).toContain('/bin/true');
    }
    const attached = await call(open, open.full, 'call', { id, command: `attach ${pid}` });
    expect(attached.error).toBeUndefined();
    expect(text(attached)).not.toMatch(/refused: /);
    expect(text(await call(open, open.full, 'call', { id, command: `info proc ${pid}` }))).toContain(`process ${pid}`);
    expect(text(await call(open, open.full, 'call', { id, command: 'detach' }))).not.toMatch(/refused: /);
    await call(open, open.full, 'close', { id });
  });
});

// The audit reads a plain `shell`/`!` line of gdb as a host command line and hides its passwords. A
// key with gdb:shell could redefine `shell` (define, or a Python command of that name) so that what
// the audit hid ran as code: once a session ran a command that may do so, its shell lines are refused.
describe('a shell line in a session that may have redefined shell is refused (attack 18ak)', () => {
  it('after define, Python, eval or a nested interpreter, whatever they did; a fresh session runs shell lines', async () => {
    const redefiners = [
      // A Python command named shell: it would create ran-<last word> with what the audit hid as a password.
      String.raw`python exec("class S(gdb.Command):\n def __init__(s): super().__init__('shell', gdb.COMMAND_USER)\n def invoke(s, a, t): open('ran-' + a.split()[-1], 'w').close()\nS()")`,
      'python print(1)',
      'eval "echo %s\\n", "x"',
      'alias sh2 = shell',
      '-interpreter-exec console "python print(1)"',
    ];
    for (const [i, redefine] of redefiners.entries()) {
      const id = await openSession(open, open.full);
      const before = await call(open, open.full, 'call', { id, command: `shell touch fresh${i}` });
      expect(text(before), redefine).not.toMatch(/refused: /);
      expect(existsSync(path.join(root, `fresh${i}`)), redefine).toBe(true);
      await call(open, open.full, 'call', { id, command: redefine });
      for (const line of [`shell touch after${i}`, `!touch after${i}`, `  shell mysql -pX after${i}`]) {
        const refused = await call(open, open.full, 'call', { id, command: line });
        expect(text(refused), `${redefine} / ${line}`).toMatch(/refused: this session ran .* may have redefined gdb's shell command/);
      }
      for (const f of [`after${i}`, `ran-after${i}`]) expect(existsSync(path.join(root, f)), `${redefine}: ${f}`).toBe(false);
      await call(open, open.full, 'close', { id });
    }
  });
});

// A program whose .gnu_debuglink leads out of the root makes gdb read outside it when it loads:
// `open` asked only the operator's flag for it, `call file ...` both the flag and the key's scope.
describe('open: a program whose debug link leads out needs the gdb:shell scope too', () => {
  it('a gdb key gets -32003 naming the scope; a key with it opens the program; a plain program needs nothing', async () => {
    writeFileSync(path.join(root, 'dl.c'), 'int main(void) { return 0; }\n');
    execFileSync('gcc', ['-g', '-O0', '-o', path.join(root, 'dl-out'), path.join(root, 'dl.c')]);
    execFileSync('cp', [path.join(root, 'dl-out'), path.join(root, 'dl-plain')]);
    const link = Buffer.alloc(32);
    link.write('../outside/dl.debug', 'latin1');
    writeFileSync(path.join(root, 'dl-out.link'), link);
    execFileSync('objcopy', ['--add-section', `.gnu_debuglink=${path.join(root, 'dl-out.link')}`, path.join(root, 'dl-out')]);
    const refused = await call(open, open.gdb, 'open', { program: 'dl-out' });
    expect(refused.error?.code).toBe(-32003);
    expect(refused.error?.data).toMatchObject({ required_scope: 'gdb:shell', tool: 'open' });
    const opened = await call(open, open.full, 'open', { program: 'dl-out' });
    const id = opened.result?.structuredContent?.content?.id;
    expect(typeof id, JSON.stringify(opened)).toBe('string');
    await call(open, open.full, 'close', { id });
    const plain = await call(open, open.gdb, 'open', { program: 'dl-plain' });
    expect(typeof plain.result?.structuredContent?.content?.id, JSON.stringify(plain)).toBe('string');
    await call(open, open.gdb, 'close', { id: plain.result.structuredContent.content.id });
  });
});
