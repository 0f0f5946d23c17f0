// Debug sessions and their routing rows across nodes belong to the key (issue 17): two debugkit
// nodes on one PostgreSQL store; stateless requests (plain JSON-RPC, no MCP session) find a debug
// session on another node through its row in the store.
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../src/control/postgres.js';
import { createKey, rpc, startCluster, type Cluster, type Node } from './helpers/control.js';
import { waitFor } from './helpers/procs.js';
import { compileC, tempDir } from './helpers/programs.js';
import { PY_ROOT } from './helpers/python.js';

let cluster: Cluster;
let storeUrl: string;
let store: PostgresStore;
let a: Node;
let b: Node;

beforeAll(async () => {
  const root = tempDir('debugkit-owners-cluster-');
  compileC(root, 'dbg_loop');
  mkdirSync(path.join(root, 'src'));
  copyFileSync(path.join(PY_ROOT, 'src/calculator.py'), path.join(root, 'src/calculator.py'));
  cluster = await startCluster(['--root', root]);
  ({ storeUrl, a, b } = cluster);
  store = await PostgresStore.open(storeUrl);
}, 180_000);

afterAll(async () => {
  await store?.close();
  await cluster?.stop();
});

let nextId = 1;
/** A stateless tools/call on one node: the tool result, or the JSON-RPC error. */
async function call(node: Node, key: string, name: string, args: object): Promise<any> {
  const r = await rpc(node.url, key, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.error ? { error: r.body.error } : r.body.result;
}

/** The node ids of the routing rows naming debug session `id` (however the row is spelled). */
async function rowsFor(id: string): Promise<string[]> {
  const rows = (await (store as any).rows("SELECT node FROM debugkit_sessions WHERE id LIKE 'debug:%' AND (id = $1 OR id LIKE $2)", [`debug:${id}`, `debug:%:${id}`])) as Array<{ node: string }>;
  return rows.map((r) => r.node).sort();
}

/** Waits until the rows naming `id` are `nodes`; answers what they were last. */
async function rowsBecome(id: string, nodes: string[]): Promise<string[]> {
  let seen: string[] = [];
  await waitFor(
    () => JSON.stringify(seen) === JSON.stringify(nodes),
    10_000,
    100,
    async () => void (seen = await rowsFor(id)),
  );
  return seen;
}

describe('debug sessions across nodes belong to the key', () => {
  it('one key\'s session id ("default") never takes over another key\'s: each key reaches its own through either node', async () => {
    const [ka, kb, kc] = await Promise.all(['dbg-a', 'dbg-b', 'dbg-c'].map((n) => createKey(['--store', storeUrl], n, 'debugger', ['--rate', 'unlimited'])));
    const onA = await call(a, ka!.key, 'debugger_launch', { program: 'dbg_loop', session_id: 'default' });
    const onB = await call(b, kb!.key, 'debugger_launch', { program: 'dbg_loop', session_id: 'default' });
    expect(onA.isError, JSON.stringify(onA)).toBeFalsy();
    expect(onB.isError, JSON.stringify(onB)).toBeFalsy();
    const [pidA, pidB] = [onA.structuredContent.pid, onB.structuredContent.pid];
    expect(pidA).not.toBe(pidB);
    expect(await rowsBecome('default', ['node-a', 'node-b'])).toEqual(['node-a', 'node-b']);

    // A third key naming "default" on either node is answered as for an id no one used.
    for (const node of [a, b]) {
      const theirs = await call(node, kc!.key, 'debugger_get_stack_trace', { session_id: 'default' });
      const none = await call(node, kc!.key, 'debugger_get_stack_trace', { session_id: 'never-used' });
      expect(JSON.stringify(theirs).split('default').join('ID')).toBe(JSON.stringify(none).split('never-used').join('ID'));
    }

    // Each key reaches its own session through the other node, and detaching drops its row only.
    const viaB = await call(b, ka!.key, 'debugger_detach', { session_id: 'default' });
    expect(viaB.structuredContent, JSON.stringify(viaB)).toMatchObject({ session_id: 'default', pid: pidA });
    expect(await rowsBecome('default', ['node-b'])).toEqual(['node-b']);
    const viaA = await call(a, kb!.key, 'debugger_detach', { session_id: 'default' });
    expect(viaA.structuredContent, JSON.stringify(viaA)).toMatchObject({ session_id: 'default', pid: pidB });
    expect(await rowsBecome('default', [])).toEqual([]);
  });

  it("the store never lets a claim take over another key's row, nor a release drop it", async () => {
    await store.claimSession('row-test', { node: 'node-a', url: a.url, key_id: 'key_first' });
    await store.claimSession('row-test', { node: 'node-b', url: b.url, key_id: 'key_second' });
    expect(await store.locateSession('row-test')).toEqual({ node: 'node-a', url: a.url, key_id: 'key_first' });
    await store.releaseSession('row-test', 'key_second');
    expect(await store.locateSession('row-test')).toMatchObject({ key_id: 'key_first' });
    await store.claimSession('row-test', { node: 'node-b', url: b.url, key_id: 'key_first' }); // its own key moves it
    expect(await store.locateSession('row-test')).toMatchObject({ node: 'node-b', key_id: 'key_first' });
    await store.releaseSession('row-test', 'key_first');
    expect(await store.locateSession('row-test')).toBeUndefined();
  });

  it('closing a session drops its row, for every toolset (gdb close, python_end_session, debugger_detach)', async () => {
    const k = await createKey(['--store', storeUrl], 'closer', 'gdb,python,debugger', ['--rate', 'unlimited']);
    const opened = await call(a, k.key, 'open', {});
    const gdbId: string = opened.structuredContent.content.id;
    const started = await call(a, k.key, 'python_start_session', { entry: 'src/calculator.py' });
    const pyId: string = started.structuredContent.sessionId;
    const launched = await call(a, k.key, 'debugger_launch', { program: 'dbg_loop', session_id: 'closing-test' });
    expect(launched.isError, JSON.stringify(launched)).toBeFalsy();
    for (const id of [gdbId, pyId, 'closing-test']) expect(await rowsBecome(id, ['node-a'])).toEqual(['node-a']);
    // Closed through node B: forwarded to node A, which ends the session and drops the row.
    expect((await call(b, k.key, 'close', { id: gdbId })).isError).toBeFalsy();
    expect((await call(b, k.key, 'python_end_session', { sessionId: pyId })).isError).toBeFalsy();
    expect((await call(b, k.key, 'debugger_detach', { session_id: 'closing-test' })).isError).toBeFalsy();
    for (const id of [gdbId, pyId, 'closing-test']) expect(await rowsBecome(id, []), id).toEqual([]);
  });

  it('a session that ends idle drops its row (gdb open and debugger_launch with a 4 s timeout)', async () => {
    const k = await createKey(['--store', storeUrl], 'idler', 'gdb,debugger', ['--rate', 'unlimited']);
    // Each row is read right after its own call: a 1 s timeout shared by both raced the second call on a
    // loaded machine (the gdb session had idled out, rightly, before its row was first read).
    const opened = await call(b, k.key, 'open', { timeout: 4 });
    const gdbId: string = opened.structuredContent.content.id;
    expect(await rowsFor(gdbId)).toEqual(['node-b']);
    const launched = await call(b, k.key, 'debugger_launch', { program: 'dbg_loop', session_id: 'idle-test', timeout: 4 });
    expect(launched.isError, JSON.stringify(launched)).toBeFalsy();
    expect(await rowsFor('idle-test')).toEqual(['node-b']);
    for (const id of [gdbId, 'idle-test']) expect(await rowsBecome(id, []), id).toEqual([]);
    // The session is gone as well: the key's next call for it, through either node, finds nothing.
    const after = await call(a, k.key, 'debugger_get_stack_trace', { session_id: 'idle-test' });
    expect(JSON.stringify(after)).toMatch(/not attached|not found|no session/i);
  });
});
