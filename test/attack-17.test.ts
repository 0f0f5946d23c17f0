// Issue 17, "A subagent attacks the finished change holding each scope in turn, over HTTP, stdio
// and two nodes": what was tried against one node (HTTP: plain JSON-RPC, 2025 sessions, 2026-07-28
// requests, batches, REST; and stdio). The attacks that succeeded (gdb spellings, crash signatures
// across keys, the server's environment, a recycled pid) are refused since; they and the ones that
// held stay as regression tests. (Its two audit findings, a redacted or padded command hiding what
// ran, belong to issue 18, the audit that cannot be made to lie.) Two nodes: test/attack-17-cluster.test.ts. The classifier's
// own cases: src/toolsets/gdb/policy.attack17.test.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODERN_PROTOCOL } from './helpers/client.js';
import {
  answerText,
  expectNoEffect,
  gdbSession,
  modernCall,
  nextRequestId,
  plainCall,
  refused,
  runGdbAttack,
  startKeyedServer,
  stopKeyedServers,
  type Answer,
  type GdbAttack,
  type KeyedServer,
} from './helpers/attack.js';
import { callTool, createKey, openMcpSession, rpc, runCli, startNode, tempDataDir } from './helpers/control.js';
import { compileC, tempDir } from './helpers/programs.js';
import { RawStdioServer } from './helpers/raw-stdio.js';

/** The workspace root, and a directory outside it standing for the rest of the host. */
const root = tempDir('debugkit-attack17-root-');
const host = tempDir('debugkit-attack17-host-');
/** The operator's full-scope key, given the documented way: in the environment. */
const MASTER = 'master-key-attack17-0123456789abcdef';

let closed: KeyedServer;
let open: KeyedServer;

const SCOPES: Record<string, string> = {
  gdb: 'gdb',
  gdbRead: 'gdb:read',
  gdbFull: 'gdb,gdb:shell,gdb:attach',
  python: 'python',
  pythonRead: 'python:read',
  bundlesRead: 'bundles:read',
  mocks: 'mocks',
  debugger: 'debugger',
  debuggerRead: 'debugger:read',
  debugger2: 'debugger',
};

beforeAll(async () => {
  compileC(root, 'basic');
  compileC(root, 'dbg_crash');
  [closed, open] = await Promise.all([startKeyedServer(root, SCOPES, [], { DEBUGKIT_API_KEY: MASTER }), startKeyedServer(root, SCOPES, ['--allow-gdb-shell', '--allow-attach'])]);
}, 120_000);

afterAll(async () => {
  await stopKeyedServers([closed, open]);
  rmSync(root, { recursive: true, force: true });
  rmSync(host, { recursive: true, force: true });
});

/** An answer (without its JSON-RPC id) with `id` written as ID: another key's thing must answer as a missing one does. */
function shape(answer: Answer, id: string): string {
  return JSON.stringify({ error: answer.error, result: answer.result }).split(id).join('ID');
}

/** Every audit entry of the store, as the operator exports them. */
async function auditOf(s: KeyedServer): Promise<any[]> {
  const r = await runCli(['audit', 'export', ...s.store]);
  return r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

// ---------------------------------------------------------------------------------------------
// gdb: commands gdb reads differently from the one classifier. Each attack names what it does to
// the host (a marker file created outside the root, a file outside the root changed) so the test
// checks the effect, not only the answer.
// ---------------------------------------------------------------------------------------------

const GDB_ATTACKS: GdbAttack[] = [
  { name: 'MI octal escape: "\\163hell" is "shell"', attack: (m) => `-interpreter-exec console "\\163hell touch ${m}"`, effect: 'marker' },
  { name: 'MI octal escape: "\\041" is "!"', attack: (m) => `-interpreter-exec console "\\041touch ${m}"`, effect: 'marker' },
  { name: 'CLI interpreter-exec nesting MI with an octal escape', attack: (m) => `interpreter-exec mi "-interpreter-exec console \\"\\\\163hell touch ${m}\\""`, effect: 'marker' },
  {
    name: '-break-commands with an octal escape, run at the stop',
    program: true,
    before: ['break add'],
    attack: (m) => `-break-commands 1 "\\163hell touch ${m}"`,
    after: () => ['run'],
    effect: 'marker',
  },
  { name: 'thread apply with the thread ID list "1.*"', program: true, before: ['break add', 'run'], attack: (m) => `thread apply 1.* shell touch ${m}`, effect: 'marker' },
  { name: "-inferior-tty-set: the program's output overwrites a file outside the root", program: true, attack: (_m, v) => `-inferior-tty-set ${v}`, after: () => ['run'], effect: 'victim' },
  { name: '-trace-save: truncates a file outside the root', attack: (_m, v) => `-trace-save ${v}`, effect: 'victim' },
  { name: '"expression" (gdb\'s alias of compile: runs gcc, injects code)', program: true, before: ['break add', 'run'], attack: () => 'expression code int x = 0;', effect: 'none' },
  { name: '"set solib-absolute-prefix" (gdb\'s alias of sysroot)', attack: () => 'set solib-absolute-prefix /', effect: 'none' },
  { name: '"record full restore" opens a file outside the root', attack: () => 'record full restore /etc/passwd', effect: 'none' },
];

describe('gdb, default flags, a `gdb` key: spellings the classifier misreads', () => {
  it.each(GDB_ATTACKS.map((a) => [a.name, a] as const))('%s: refused, and nothing happens on the host', async (_name, a) => {
    const r = await runGdbAttack(closed, closed.keys.gdb!.key, host, a);
    expectNoEffect(a, r);
    expect(refused(r.answer), `${a.name}: ${JSON.stringify(r.answer).slice(0, 400)}`).toBe(true);
  });
});

describe('gdb, --allow-gdb-shell --allow-attach, a `gdb` key (no gdb:shell): the same spellings', () => {
  it.each(GDB_ATTACKS.map((a) => [a.name, a] as const))('%s: -32003 naming gdb:shell, and nothing happens on the host', async (_name, a) => {
    const r = await runGdbAttack(open, open.keys.gdb!.key, host, a);
    expectNoEffect(a, r);
    expect(r.answer.error?.code, `${a.name}: ${JSON.stringify(r.answer).slice(0, 400)}`).toBe(-32003);
    expect(r.answer.error?.message).toContain('gdb:shell');
  });
});

describe('the MI octal escape through the other ways in', () => {
  const octal = GDB_ATTACKS[0]!;

  it('a 2026-07-28 request (the _meta envelope), default flags', async () => {
    const key = closed.keys.gdb!.key;
    const r = await runGdbAttack(closed, key, host, octal, (id, command) => modernCall(closed, key, 'call', { id, command }));
    expectNoEffect(octal, r);
    expect(refused(r.answer), JSON.stringify(r.answer)).toBe(true);
  });

  it('a 2025 MCP session, default flags', async () => {
    const key = closed.keys.gdb!.key;
    const sid = await openMcpSession(closed.node.url, key);
    const inSession = async (name: string, args: object): Promise<Answer> => (await callTool(closed.node.url, key, sid, name, args)).body;
    const opened = await inSession('open', {});
    const id = opened.result.structuredContent.content.id as string;
    const marker = path.join(host, 'marker-session');
    const answer = await inSession('call', { id, command: octal.attack(marker, '') });
    expect(existsSync(marker), 'gdb ran a host command').toBe(false);
    expect(refused(answer), JSON.stringify(answer)).toBe(true);
  });

  it('stdio with --no-allow-gdb-shell', async () => {
    const data = tempDir('debugkit-attack17-stdio-');
    const stdio = new RawStdioServer(['--root', root, '--no-allow-gdb-shell', '--no-allow-attach', '--data-dir', data, '--toolsets', 'gdb']);
    try {
      await stdio.initialize();
      const { id } = await stdio.tool('open', {});
      const marker = path.join(host, 'marker-stdio');
      const msg = await stdio.request('tools/call', { name: 'call', arguments: { id, command: octal.attack(marker, '') } });
      expect(existsSync(marker), 'gdb ran a host command').toBe(false);
      expect(JSON.stringify(msg)).toMatch(/refused: /);
    } finally {
      stdio.proc.kill('SIGTERM');
      await stdio.exited().catch(() => undefined);
      rmSync(data, { recursive: true, force: true });
    }
  });
});

describe('gdb: what the classifier holds (regression)', () => {
  it('plain spellings, nesting and quoting from the corpus stay refused for a gdb key with default flags, and nothing runs', async () => {
    const key = closed.keys.gdb!.key;
    const id = await gdbSession(closed, key);
    const marker = path.join(host, 'marker-held');
    for (const command of [
      `shell touch ${marker}`,
      `!touch ${marker}`,
      `pipe p 1 | touch ${marker}`,
      `-interpreter-exec console "shell touch ${marker}"`,
      `-interpreter-exec console "print 1" "shell touch ${marker}"`,
      `with print pretty -- shell touch ${marker}`,
      `thread apply all shell touch ${marker}`,
      `-interpreter-exec mi "-interpreter-exec console \\"shell touch ${marker}\\""`,
      `tty ${marker}`,
      `set inferior-tty ${marker}`,
      `tsave ${marker}`,
      `dump binary value ${marker} 1`,
      `set logging file ${marker}`,
      `file '${marker}'`,
      'info os processes',
      'info proc 1',
    ]) {
      const answer = await plainCall(closed, key, 'call', { id, command });
      expect(refused(answer), command).toBe(true);
    }
    expect(existsSync(marker)).toBe(false);
    await plainCall(closed, key, 'close', { id });
  });

  it('a batch mixing allowed calls and a forbidden one: only the forbidden one is -32003, it is audited as denied, the others run', async () => {
    const s = open;
    const key = s.keys.gdb!.key;
    const id = await gdbSession(s, key);
    const marker = path.join(host, 'marker-batch');
    const batch = [
      { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'call', arguments: { id, command: 'print 1' } } },
      { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'call', arguments: { id, command: `shell touch ${marker}` } } },
      { jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { name: 'call', arguments: { id, command: 'print 2' } } },
    ];
    const r = await rpc(s.node.url, key, batch);
    const byId = new Map((r.body as any[]).map((m) => [m.id, m]));
    expect(byId.get('b').error.code).toBe(-32003);
    expect(answerText(byId.get('a'))).toContain('1');
    expect(answerText(byId.get('c'))).toContain('2');
    expect(existsSync(marker)).toBe(false);
    const denied = (await auditOf(s)).filter((e) => e.key_id === s.keys.gdb!.id && e.event === 'denied' && JSON.stringify(e.args).includes('marker-batch'));
    expect(denied.length).toBe(1);
    await plainCall(s, key, 'close', { id });
  });

  it('a gdb:read key neither sees nor calls "call" or "open", by any path (plain, batch, session)', async () => {
    const s = closed;
    const key = s.keys.gdbRead!.key;
    const list = await rpc(s.node.url, key, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const names = list.body.result.tools.map((t: { name: string }) => t.name);
    expect(names).toContain('list_sessions');
    expect(names).not.toContain('call');
    expect(names).not.toContain('open');
    expect((await plainCall(s, key, 'open', {})).error?.code).toBe(-32003);
    const batch = await rpc(s.node.url, key, [
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_sessions', arguments: {} } },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'open', arguments: {} } },
    ]);
    expect((batch.body as any[]).find((m) => m.id === 2).error.code).toBe(-32003);
    const sid = await openMcpSession(s.node.url, key);
    expect((await callTool(s.node.url, key, sid, 'open', {})).body.error.code).toBe(-32003);
  });

  it('a tools/call sent as a notification (no id) runs nothing and is not counted', async () => {
    const s = closed;
    const key = s.keys.gdb!.key;
    const before = (await plainCall(s, key, 'list_sessions', {})).result.structuredContent.content.sessions.length;
    const r = await rpc(s.node.url, key, { jsonrpc: '2.0', method: 'tools/call', params: { name: 'open', arguments: {} } });
    expect(r.status).toBeGreaterThanOrEqual(200);
    const after = (await plainCall(s, key, 'list_sessions', {})).result.structuredContent.content.sessions.length;
    expect(after).toBe(before);
  });
});

// ---------------------------------------------------------------------------------------------
// Scopes of the other toolsets, aliases and REST.
// ---------------------------------------------------------------------------------------------

describe('capability scopes of the other toolsets (regression)', () => {
  it('debugger: "debugger/attach" (the contract alias) and debugger_attach need debugger:attach, alone, in a batch and in a 2026-07-28 request', async () => {
    const s = open;
    const key = s.keys.debugger!.key;
    for (const name of ['debugger/attach', 'debugger_attach']) {
      const single = await plainCall(s, key, name, { pid: process.pid, session_id: 'x' });
      expect(single.error?.code, name).toBe(-32003);
      expect(single.error?.message, name).toContain('debugger:attach');
    }
    const batch = await rpc(s.node.url, key, [
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'debugger/license_info', arguments: {} } },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'debugger/attach', arguments: { pid: process.pid } } },
    ]);
    const two = (batch.body as any[]).find((m) => m.id === 2);
    expect(two.error.code).toBe(-32003);
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL,
      'io.modelcontextprotocol/clientInfo': { name: 'attack', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const modern = await rpc(
      s.node.url,
      key,
      { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'debugger/attach', arguments: { pid: process.pid }, _meta: envelope } },
      { 'MCP-Protocol-Version': MODERN_PROTOCOL, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'debugger/attach' },
    );
    expect(modern.body.error?.code ?? modern.body.result?.isError, JSON.stringify(modern.body)).toBe(-32003);
  });

  it('bundles:read cannot add a bundle; mocks without mocks:run cannot run a command; python:read cannot start a REST session', async () => {
    const s = closed;
    expect((await plainCall(s, s.keys.bundlesRead!.key, 'initialize_bundle', { source: 'x.tar.gz' })).error?.code).toBe(-32003);
    const marker = path.join(host, 'marker-mocks');
    const rec = await plainCall(s, s.keys.mocks!.key, 'keploy_mock_record', { command: `touch ${marker}` });
    expect(rec.error?.code).toBe(-32003);
    expect(rec.error?.message).toContain('mocks:run');
    expect(existsSync(marker)).toBe(false);
    const res = await fetch(new URL('/sessions', s.node.url), {
      method: 'POST',
      headers: { Authorization: `Bearer ${s.keys.pythonRead!.key}`, 'Content-Type': 'application/json' },
      body: '{"entry":"x.py"}',
    });
    expect(res.status).toBe(403);
  });
});

// ---------------------------------------------------------------------------------------------
// Owners: what one key's calls leave behind.
// ---------------------------------------------------------------------------------------------

describe('owners', () => {
  it("another key's gdb session (stateless) answers exactly as an unknown id; list_sessions shows only the key's own", async () => {
    const s = closed;
    const a = s.keys.gdb!.key;
    const b = s.keys.gdbFull!.key;
    const id = await gdbSession(s, a);
    const theirs = await plainCall(s, b, 'call', { id, command: 'print 1' });
    const none = await plainCall(s, b, 'call', { id: '00000000-0000-4000-8000-000000000000', command: 'print 1' });
    expect(shape(theirs, id)).toBe(shape(none, '00000000-0000-4000-8000-000000000000'));
    const listed = (await plainCall(s, b, 'list_sessions', {})).result.structuredContent.content.sessions.map((x: { id: string }) => x.id);
    expect(listed).not.toContain(id);
    expect((await plainCall(s, b, 'close', { id })).result?.isError).toBe(true);
    expect(answerText(await plainCall(s, a, 'call', { id, command: 'print 6*7' }))).toContain('42');
    await plainCall(s, a, 'close', { id });
  });

  it('another key cannot POST to, stream from or DELETE an MCP session; the owner keeps it', async () => {
    const s = closed;
    const a = s.keys.gdb!.key;
    const b = s.keys.gdbFull!.key;
    const sid = await openMcpSession(s.node.url, a);
    const post = await callTool(s.node.url, b, sid, 'list_sessions', {});
    expect(post.status).toBe(404);
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(s.node.url, { method, headers: { Authorization: `Bearer ${b}`, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18', Accept: 'text/event-stream' } });
      expect(res.status, method).toBe(404);
      await res.body?.cancel();
    }
    const mine = await callTool(s.node.url, a, sid, 'list_sessions', {});
    expect(mine.status).toBe(200);
    expect(mine.body.result).toBeDefined();
  });

  it('a forged X-Debugkit-Forwarded header changes nothing: the key is still judged, counted and kept to its own', async () => {
    const s = closed;
    const sid = await openMcpSession(s.node.url, s.keys.gdb!.key);
    const forged = await callTool(s.node.url, s.keys.gdbFull!.key, sid, 'list_sessions', {}, { 'X-Debugkit-Forwarded': 'guess', 'X-Debugkit-Via': 'node-x' });
    expect(forged.status).toBe(404);
    const denied = await rpc(s.node.url, s.keys.gdbRead!.key, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'open', arguments: {} } }, { 'X-Debugkit-Forwarded': 'guess' });
    expect(denied.body.error.code).toBe(-32003);
  });

  it('debugger sessions named "default" are per key', async () => {
    const s = closed;
    const a = s.keys.debugger!.key;
    const b = s.keys.debugger2!.key;
    const launched = await plainCall(s, a, 'debugger_launch', { program: 'basic', session_id: 'default' });
    expect(launched.result?.isError, JSON.stringify(launched)).toBeFalsy();
    const theirs = await plainCall(s, b, 'debugger_get_stack_trace', { session_id: 'default' });
    const none = await plainCall(s, b, 'debugger_get_stack_trace', { session_id: 'never' });
    expect(shape(theirs, 'default')).toBe(shape(none, 'never'));
    const detachB = await plainCall(s, b, 'debugger_detach', { session_id: 'default' });
    expect(detachB.error ?? detachB.result?.isError).toBeTruthy();
    const mine = await plainCall(s, a, 'debugger_detach', { session_id: 'default' });
    expect(mine.result?.structuredContent?.session_id).toBe('default');
  });

  it("debugger_find_similar_bugs shows a key only its own crashes (found by the attack: every key's crash signatures, their session ids and program paths)", async () => {
    const s = closed;
    const a = s.keys.debugger!.key;
    // Key A's crash, in a session whose name says what it works on.
    const launched = await plainCall(s, a, 'debugger_launch', { program: 'dbg_crash', session_id: 'acme-secret-project' });
    expect(launched.result?.isError, JSON.stringify(launched)).toBeFalsy();
    const crashed = await plainCall(s, a, 'debugger_continue', { session_id: 'acme-secret-project' });
    expect(answerText(crashed)).toMatch(/SIGSEGV|signal/);
    await plainCall(s, a, 'debugger_detach', { session_id: 'acme-secret-project' });
    // Key B holds only debugger:read.
    const seen = await plainCall(s, s.keys.debuggerRead!.key, 'debugger_find_similar_bugs', {});
    const shown = JSON.stringify(seen);
    expect(shown, "key B reads key A's crash").not.toContain('acme-secret-project');
    expect(shown, "key B reads key A's program path").not.toContain(path.join(root, 'dbg_crash'));
  });

  it("debugger_get_comprehensive_audit answers with the caller's own entries only (regression)", async () => {
    const s = closed;
    await plainCall(s, s.keys.gdb!.key, 'list_sessions', {});
    const answer = await plainCall(s, s.keys.debuggerRead!.key, 'debugger_get_comprehensive_audit', {});
    const entries = answer.result.structuredContent.entries as Array<{ key_id: string }>;
    expect(entries.length).toBeGreaterThan(0);
    expect(new Set(entries.map((e) => e.key_id))).toEqual(new Set([s.keys.debuggerRead!.id]));
    // Nor how long the whole chain is (every key's activity): no count of all entries in the note.
    const note = String(answer.result.structuredContent.note);
    expect(note).toMatch(/^the audit chain verifies/);
    expect(note).not.toMatch(/\d+ (new|entries)|entries \d/);
  });
});

// ---------------------------------------------------------------------------------------------
// Secrets of the server reach a key through gdb.
// ---------------------------------------------------------------------------------------------

describe("the server's own secrets", () => {
  it("a `gdb` key does not read the operator's full-scope key from the server's environment (found by the attack: `show environment`)", async () => {
    const s = closed;
    const key = s.keys.gdb!.key;
    const id = await gdbSession(s, key);
    const shown = answerText(await plainCall(s, key, 'call', { id, command: 'show environment' }));
    await plainCall(s, key, 'close', { id });
    expect(shown, 'DEBUGKIT_API_KEY is in the environment gdb and every debuggee inherit').not.toContain(MASTER);
    // What it would give: every scope.
    const license = await plainCall(s, MASTER, 'debugger_license_info', {});
    expect(license.result.structuredContent.key.scopes).toEqual(['*']);
  });
});

// ---------------------------------------------------------------------------------------------
// A pid the session once started is "its own" forever: after the program exits, the pid is
// reused by another process, which the session then attaches to or reads without gdb:attach.
// pid_max is 32768 on this machine, so a busy server recycles pids within minutes; the test makes
// the reuse deterministic by setting ns_last_pid (root only) instead of waiting for it.
// ---------------------------------------------------------------------------------------------

const NS_LAST_PID = '/proc/sys/kernel/ns_last_pid';

/**
 * Starts `sleep 600` (argv[0] `name`) as pid `pid`, or undefined if another process holds the pid
 * or kept taking it first for 15 s (the other test files fork too: each try is a race with them).
 */
async function spawnAt(pid: number, name: string): Promise<ChildProcess | undefined> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline && !existsSync(`/proc/${pid}`)) {
    writeFileSync(NS_LAST_PID, String(pid - 1));
    const child = spawn('/bin/sleep', ['600'], { argv0: name, stdio: 'ignore' });
    if (child.pid === pid) return child;
    child.kill('SIGKILL');
    // The one that took the pid may still hold it: try again once the machine has moved on.
    await new Promise((r) => setImmediate(r));
  }
  return undefined;
}

describe("gdb: a recycled pid is not the session's own", () => {
  it('a `gdb` key, default flags: after its program exited, the process now holding that pid is neither read nor attached (found by the attack)', async () => {
    const s = closed;
    const key = s.keys.gdb!.key;
    const id = await gdbSession(s, key, 'basic');
    const ran = answerText(await plainCall(s, key, 'call', { id, command: 'run' }));
    const pid = Number(/process (\d+)\) exited/.exec(ran)?.[1]);
    expect(pid, ran).toBeGreaterThan(1);
    // Another tenant's process (here: a sleep whose command line carries its secret) gets that pid;
    // on a busy machine another process may have taken it already: then that one is the stranger.
    const victim = await spawnAt(pid, 'victim-secret-cmdline-4711');
    expect(victim !== undefined || existsSync(`/proc/${pid}`), `no process holds pid ${pid} and none could be placed there`).toBe(true);
    try {
      const read = await plainCall(s, key, 'call', { id, command: `info proc cmdline ${pid}` });
      const attach = await plainCall(s, key, 'call', { id, command: `attach ${pid}` });
      const attached = !refused(attach);
      if (attached) await plainCall(s, key, 'call', { id, command: 'detach' });
      const breaches: string[] = [];
      if (!refused(read)) breaches.push(`info proc cmdline ${pid} read another process's command line: ${answerText(read).slice(0, 200)}`);
      if (attached) breaches.push(`attach ${pid} attached to a process the session did not start: ${answerText(attach).slice(0, 200)}`);
      expect(breaches).toEqual([]);
    } finally {
      victim?.kill('SIGKILL');
      await plainCall(s, key, 'close', { id });
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Limits: ways around the caps and counters that were tried and held.
// ---------------------------------------------------------------------------------------------

describe('limits (regression)', () => {
  it('initialize spelled other ways (a 2026 header, inside a batch) neither passes the per-key MCP cap nor escapes the rate limit', async () => {
    const data = await tempDataDir();
    const store = ['--data-dir', data.dir];
    const capped = await createKey(store, 'capped', 'gdb', ['--rate', '8/hour']);
    const node = await startNode([...store, '--root', root, '--max-mcp-sessions-per-key', '2']);
    try {
      const init = (id: number) => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'flood', version: '1' } } });
      const sids: string[] = [];
      const statuses: number[] = [];
      for (const headers of [{}, { 'MCP-Protocol-Version': MODERN_PROTOCOL }, {}] as Array<Record<string, string>>) {
        const r = await rpc(node.url, capped.key, init(nextRequestId()), headers);
        statuses.push(r.status);
        const sid = r.headers.get('mcp-session-id');
        if (sid) sids.push(sid);
      }
      expect(sids.length).toBe(2);
      expect(statuses[2]).toBe(429);
      // A batch of initializes opens no session, and each of them is a request on the rate limit (3 + 5 of 8/hour).
      const batch = await rpc(node.url, capped.key, [init(901), init(902), init(903), init(904), init(905)]);
      expect(batch.headers.get('mcp-session-id')).toBeNull();
      const after = await rpc(node.url, capped.key, { jsonrpc: '2.0', id: nextRequestId(), method: 'tools/list', params: {} });
      expect(after.body.error?.code, JSON.stringify(after.body)).toBe(-32002);
    } finally {
      await node.stop();
      await data.cleanup();
    }
  });
});
