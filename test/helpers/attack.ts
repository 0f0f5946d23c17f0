// What the attack tests share (test/attack-17*.test.ts): a node with one key per scope, a key
// holder's plain JSON-RPC call, and gdb attacks checked by their effect on the host.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { expect } from 'vitest';
import { boundPromise } from '../../src/core/wait.js';
import { MODERN_PROTOCOL } from './client.js';
import { createKey, rpc, startNode, tempDataDir, type Node } from './control.js';
import { stopHard } from './stall.js';

/** A node started on its own store, with one key per named scope list. */
export interface KeyedServer {
  node: Node;
  data: Awaited<ReturnType<typeof tempDataDir>>;
  /** The store flags, for `keys`/`audit` commands on the same store. */
  store: string[];
  keys: Record<string, { key: string; id: string }>;
}

/** Starts `debugkit serve` on `root` with `flags`, after creating a key for each of `scopes` (name: scope list). */
export async function startKeyedServer(root: string, scopes: Record<string, string>, flags: string[], env: NodeJS.ProcessEnv = {}): Promise<KeyedServer> {
  const data = await tempDataDir();
  const store = ['--data-dir', data.dir];
  const keys: KeyedServer['keys'] = {};
  for (const [name, list] of Object.entries(scopes)) keys[name] = await createKey(store, name, list, ['--rate', 'unlimited']);
  const node = await startNode([...store, '--root', root, ...flags], env);
  return { node, data, store, keys };
}

export async function stopKeyedServers(servers: Array<KeyedServer | undefined>): Promise<void> {
  for (const s of servers) {
    await s?.node.stop();
    await s?.data.cleanup();
  }
}

/** Stops a keyed server the hard way (its loop may be held) and removes its workspace. */
export async function stopAttackServer(s: KeyedServer | undefined, root: string | undefined): Promise<void> {
  await stopHard(s?.node.proc);
  await stopKeyedServers([s]);
  if (root) rmSync(root, { recursive: true, force: true });
}

export type Answer = { error?: { code: number; message: string; data?: any }; result?: any };

let nextId = 1;

/** A JSON-RPC id not used before in this test process. */
export const nextRequestId = (): number => nextId++;

/** A plain JSON-RPC tools/call (no MCP session): the key's stateless client. */
export async function plainCall(s: KeyedServer, key: string, name: string, args: object): Promise<Answer> {
  return (await rpc(s.node.url, key, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } })).body;
}

/** The same as a 2026-07-28 request (the _meta envelope and its headers). */
export async function modernCall(s: KeyedServer, key: string, name: string, args: object): Promise<Answer> {
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL,
    'io.modelcontextprotocol/clientInfo': { name: 'attack', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const headers = { 'MCP-Protocol-Version': MODERN_PROTOCOL, 'Mcp-Method': 'tools/call', 'Mcp-Name': name };
  return (await rpc(s.node.url, key, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args, _meta: envelope } }, headers)).body;
}

/** The error's message, or the result's text content (and its structured content, with `structured`). */
export function answerText(answer: Answer, { structured = false } = {}): string {
  if (answer.error) return answer.error.message;
  const content = (answer.result?.content ?? []).map((c: { text?: string }) => c.text ?? '').join('');
  return structured ? `${content}\n${JSON.stringify(answer.result?.structuredContent ?? {})}` : content;
}

/** Refused: -32003 for the scope, or the policy's "refused:" for the flag. */
export function refused(answer: Answer, opts: { structured?: boolean } = {}): boolean {
  return answer.error?.code === -32003 || /refused: /.test(answerText(answer, opts));
}

/** Opens a gdb session (with the root's `program` loaded, when given) and returns its id. */
export async function gdbSession(s: KeyedServer, key: string, program?: string): Promise<string> {
  const answer = await plainCall(s, key, 'open', program ? { program } : {});
  const id = answer.result?.structuredContent?.content?.id;
  if (typeof id !== 'string') throw new Error(`open failed: ${JSON.stringify(answer)}`);
  return id;
}

/** A gdb command an attacker sends, and what it must not do to the host. */
export interface GdbAttack {
  name: string;
  /** Commands the attacker may legitimately send first (a breakpoint, a run). */
  before?: string[];
  attack: (marker: string, victim: string) => string;
  /** Commands after the attack that make gdb act on it (a run reaching the breakpoint). */
  after?: (marker: string, victim: string) => string[];
  /** What must not happen on the host: a marker file created, a victim file changed. */
  effect: 'marker' | 'victim' | 'none';
  /** Open the session with the root's `basic` program loaded. */
  program?: boolean;
}

export interface AttackRun {
  answer: Answer;
  marker: string;
  victim: string;
  original: string;
}

let attackNo = 0;

/**
 * Runs one attack in a fresh gdb session: a marker path and a victim file (with known content)
 * in `host`, outside the root; `send` replaces the plain call (another transport).
 */
export async function runGdbAttack(s: KeyedServer, key: string, host: string, a: GdbAttack, send?: (id: string, command: string) => Promise<Answer>): Promise<AttackRun> {
  const n = ++attackNo;
  const marker = path.join(host, `marker-${n}`);
  const victim = path.join(host, `victim-${n}`);
  const original = `precious data of victim ${n}, outside the root\n`;
  writeFileSync(victim, original);
  const id = await gdbSession(s, key, a.program ? 'basic' : undefined);
  const sendOne = send ?? ((sid: string, command: string) => plainCall(s, key, 'call', { id: sid, command }));
  for (const c of a.before ?? []) await sendOne(id, c);
  const answer = await sendOne(id, a.attack(marker, victim));
  for (const c of a.after?.(marker, victim) ?? []) await sendOne(id, c);
  await plainCall(s, key, 'close', { id });
  return { answer, marker, victim, original };
}

export function expectNoEffect(a: GdbAttack, r: AttackRun): void {
  if (a.effect === 'marker') expect(existsSync(r.marker), `${a.name}: gdb ran a host command`).toBe(false);
  if (a.effect === 'victim') expect(readFileSync(r.victim, 'utf8'), `${a.name}: a file outside the root was changed`).toBe(r.original);
}

// Liveness as another key sees it: its pings while an attacker's request is pending (attack-18b, 18c).

/** One ping of `key`, its round trip in ms (a ping the server drops counts as the time until it was dropped, and is noted). */
export const dropped: string[] = [];
export async function ping(s: KeyedServer, key: string): Promise<number> {
  const t = performance.now();
  try {
    const r = await rpc(s.node.url, key, { jsonrpc: '2.0', id: 1, method: 'ping' });
    if (r.status !== 200) dropped.push(`status ${r.status}`);
  } catch (err) {
    dropped.push(`${String(err)} (${String((err as { cause?: unknown }).cause)}) after ${(performance.now() - t).toFixed(0)} ms`);
  }
  return performance.now() - t;
}

/** The idle baseline: the slowest of 10 pings after 3 warm-up ones. */
export async function idleBaseline(s: KeyedServer, key: string): Promise<number> {
  dropped.length = 0;
  for (let i = 0; i < 3; i++) await ping(s, key);
  const rtts: number[] = [];
  for (let i = 0; i < 10; i++) rtts.push(await ping(s, key));
  return Math.max(...rtts);
}

/** Pings with `key` until `pending` settles (10 ms apart); the slowest round trip. */
export async function slowestPingWhile(s: KeyedServer, key: string, pending: { promise: Promise<unknown>; done: () => boolean }): Promise<{ slowest: number; count: number }> {
  const rtts: number[] = [];
  const settled = pending.promise.catch(() => undefined);
  while (!pending.done()) {
    rtts.push(await ping(s, key));
    await boundPromise(settled, { timeoutMs: 10 }); // a pause between pings, cut short when `pending` settles
  }
  return { slowest: Math.max(0, ...rtts), count: rtts.length };
}

/** One ping of `key` on a connection of its own (no keep-alive): its status, or how it failed (bounded by `timeoutMs`). */
export function freshPing(s: KeyedServer, key: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const req = http.request(s.node.url, { method: 'POST', agent: false, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(String(res.statusCode)));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer in ${timeoutMs / 1000} s`)));
    req.on('error', (e) => resolve(`error: ${e.message}`));
    req.end(body);
  });
}
