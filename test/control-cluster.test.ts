import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/control/open.js';
import { connectHttp, connectHttpModern, TestClient } from './helpers/client.js';
import { callTool, createKey, modernRpc, openMcpSession, rpc, runCli, startCluster, type Cluster, type Node } from './helpers/control.js';
import { isRunning, pidFrom, waitFor } from './helpers/procs.js';
import { tempDir } from './helpers/programs.js';

/** Two debugkit nodes on loopback sharing one PostgreSQL store. */
let cluster: Cluster;
let storeUrl: string;
let a: Node;
let b: Node;
/** The nodes' --root: where a task's recording writes its mocks. */
let root: string;

beforeAll(async () => {
  root = tempDir('debugkit-cluster-');
  cluster = await startCluster(['--root', root]);
  ({ storeUrl, a, b } = cluster);
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('several nodes, one PostgreSQL store', () => {
  it('a key created on one machine works on every node; its rate limit is shared', async () => {
    const k = await createKey(['--store', storeUrl], 'shared', 'gdb:read', ['--rate', '8/hour']);
    // Each initialize is a request: 2 of 8.
    const [sa, sb] = await Promise.all([openMcpSession(a.url, k.key), openMcpSession(b.url, k.key)]);
    const seen: Array<[string, number, string | null]> = [];
    for (let i = 0; i < 5; i++) {
      const [url, sid, name] = i % 2 === 0 ? [a.url, sa, 'a'] : [b.url, sb, 'b'];
      const r = await callTool(url, k.key, sid, 'list_sessions');
      seen.push([name, r.status, r.headers.get('x-ratelimit-remaining')]);
    }
    expect(seen).toEqual([
      ['a', 200, '5'],
      ['b', 200, '4'],
      ['a', 200, '3'],
      ['b', 200, '2'],
      ['a', 200, '1'],
    ]);
    // A call for A's session sent to B is forwarded to A and counted once, where it is served.
    const forwarded = await callTool(b.url, k.key, sa, 'list_sessions');
    expect([forwarded.status, forwarded.headers.get('x-ratelimit-remaining')]).toEqual([200, '0']);
    for (const [url, sid] of [
      [a.url, sa],
      [b.url, sb],
    ] as const) {
      const over = await callTool(url, k.key, sid, 'list_sessions');
      expect(over.status).toBe(429);
      expect(over.body.error).toMatchObject({ code: -32002, data: { limit: 8, used: 8 } });
    }
  });

  it('counters are atomic under concurrent calls on both nodes', async () => {
    const k = await createKey(['--store', storeUrl], 'burst', 'gdb:read', ['--rate', '12/hour']);
    const [sa, sb] = await Promise.all([openMcpSession(a.url, k.key), openMcpSession(b.url, k.key)]); // 2 of 12
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => callTool(i % 2 ? a.url : b.url, k.key, i % 2 ? sa : sb, 'list_sessions')));
    expect(answers.filter((r) => r.status === 200).length).toBe(10);
    expect(answers.filter((r) => r.status === 429).length).toBe(6);
  });

  it('a session opened on node A is usable through node B (SDK client and plain requests)', async () => {
    const k = await createKey(['--store', storeUrl], 'roaming', 'gdb', ['--rate', 'unlimited']);
    const onA = await connectHttp(a.url, k.key);
    const sid = (onA.client.transport as StreamableHTTPClientTransport).sessionId!;
    const { id } = await onA.ok('open');
    // The same MCP session, reached through node B: B forwards to A, which holds the gdb process.
    const transport = new StreamableHTTPClientTransport(new URL(b.url), { sessionId: sid, requestInit: { headers: { Authorization: `Bearer ${k.key}` } } });
    const viaB = new TestClient(new Client({ name: 'via-b', version: '1' }));
    await viaB.client.connect(transport);
    const printed = await viaB.ok('call', { id, command: 'print 20+22' });
    expect(printed.output).toContain('42');
    const plain = await callTool(b.url, k.key, sid, 'list_sessions');
    expect(plain.status).toBe(200);
    expect(JSON.stringify(plain.body.result.structuredContent)).toContain(id);
    // Another key cannot reach the session through either node.
    const other = await createKey(['--store', storeUrl], 'other', 'gdb', ['--rate', 'unlimited']);
    expect((await callTool(b.url, other.key, sid, 'list_sessions')).status).toBe(404);
    await onA.ok('close', { id });
    await onA.close();
  });

  it('a debug session opened statelessly (2026-07-28) on node A is usable through node B by its id', async () => {
    const k = await createKey(['--store', storeUrl], 'stateless', 'gdb', ['--rate', 'unlimited']);
    // No MCP session to follow: node A records the gdb session's id with itself when it opens it.
    const onA = await connectHttpModern(a.url, k.key);
    const { id } = await onA.ok('open');
    // A plain JSON-RPC request (kindly-debugger's curl form) on node B naming that id is answered by node A.
    const plain = await rpc(b.url, k.key, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'call', arguments: { id, command: 'print 20+22' } } });
    expect(plain.status).toBe(200);
    expect(JSON.stringify(plain.body.result)).toContain('42');
    // The 2026-07-28 SDK client on node B reaches it too.
    const onB = await connectHttpModern(b.url, k.key);
    expect((await onB.ok('call', { id, command: 'print 6*7' })).output).toContain('42');
    // Another key naming the same id is not forwarded: node B does not know the session.
    const other = await createKey(['--store', storeUrl], 'stranger', 'gdb', ['--rate', 'unlimited']);
    const stranger = await rpc(b.url, other.key, { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'call', arguments: { id, command: 'print 1' } } });
    expect(JSON.stringify(stranger.body)).not.toContain('"$1 = 1');
    expect(JSON.stringify(stranger.body)).toMatch(/not found|unknown|no session/i);
    await onA.ok('close', { id });
    await Promise.all([onA.close(), onB.close()]);
  });

  it("a task started on node A is polled and cancelled through node B; another key's tasks/get on node B is told the task is unknown", async () => {
    const k = await createKey(['--store', storeUrl], 'tasker', 'mocks,mocks:run', ['--rate', 'unlimited']);
    const pidFile = path.join(root, 'cluster-task.pid');
    // A recording of a program that sleeps: still running after the 2 s grace, so node A answers a task handle.
    const created = await modernRpc(a.url, k.key, 'tools/call', {
      name: 'keploy_mock_record',
      arguments: { command: `/bin/sh -c 'echo $$ > ${pidFile}; exec sleep 60'`, path: 'keploy-cluster-task' },
    });
    expect(created.result, JSON.stringify(created).slice(0, 600)).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId: string = created.result.taskId;
    const pid = await pidFrom(pidFile);
    // Node B holds no such task: it forwards the key's tasks/get to node A, which answers it.
    const polled = await modernRpc(b.url, k.key, 'tasks/get', { taskId });
    expect(polled.result, JSON.stringify(polled).slice(0, 600)).toMatchObject({ taskId, status: 'working' });
    // Another key naming the task on node B is not forwarded (the store row is the first key's): unknown.
    const other = await createKey(['--store', storeUrl], 'not-tasker', 'mocks,mocks:run', ['--rate', 'unlimited']);
    const stranger = await modernRpc(b.url, other.key, 'tasks/get', { taskId });
    expect(stranger.error).toMatchObject({ code: -32602, message: expect.stringMatching(/^unknown task /) });
    // The owner cancels it through node B: node A aborts the recording, and its program ends.
    const cancelled = await modernRpc(b.url, k.key, 'tasks/cancel', { taskId });
    expect(cancelled.result, JSON.stringify(cancelled).slice(0, 600)).toMatchObject({ resultType: 'complete' });
    for (const node of [b, a]) expect((await modernRpc(node.url, k.key, 'tasks/get', { taskId })).result).toMatchObject({ taskId, status: 'cancelled' });
    expect(await waitFor(() => !isRunning(pid), 15_000)).toBe(true);
  }, 60_000);

  it("a batch naming sessions of two nodes is refused, and counted against the key's rate first (attack 18l: refused uncounted, 170,000 store lookups ran free)", async () => {
    const k = await createKey(['--store', storeUrl], 'mixed', 'gdb', ['--rate', '4/hour']);
    const onA = await connectHttpModern(a.url, k.key);
    const { id } = await onA.ok('open');
    const call = (n: number, session: string) => ({ jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'call', arguments: { id: session, command: 'print 1' } } });
    const mixed = await rpc(b.url, k.key, [call(1, id), call(2, 'held-by-none')]);
    expect(mixed.status).toBe(400);
    expect(mixed.body.error).toMatchObject({
      code: -32600,
      message: expect.stringMatching(/^Invalid Request: a batch cannot be served by one node: its calls name debug sessions or tasks held by node \S+ and this node/),
    });
    // The open (1) and that batch (2) used 3 of the 4: the next batch is over the rate, and refused for it.
    const over = await rpc(b.url, k.key, [call(3, id), call(4, 'held-by-none')]);
    expect(JSON.stringify(over.body)).toContain('-32002');
    await onA.close();
  });

  it('a key revoked on one machine stops working on every node within a second', async () => {
    const k = await createKey(['--store', storeUrl], 'leaver', 'gdb:read', ['--rate', 'unlimited']);
    const [sa, sb] = await Promise.all([openMcpSession(a.url, k.key), openMcpSession(b.url, k.key)]);
    expect((await runCli(['keys', 'revoke', 'leaver', '--store', storeUrl])).code).toBe(0);
    for (const [url, sid] of [
      [a.url, sa],
      [b.url, sb],
    ] as const) {
      // Refused once the node's cache of the key (KEY_CACHE_MS, a second) has lapsed.
      let r = await callTool(url, k.key, sid, 'list_sessions');
      await waitFor(
        () => r.status === 401,
        3_000,
        50,
        async () => void (r = await callTool(url, k.key, sid, 'list_sessions')),
      );
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe(-32001);
    }
  });

  it('the audit chain holds the calls of both nodes and verifies', async () => {
    const exported = await runCli(['audit', 'export', '--store', storeUrl]);
    const entries = exported.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(new Set(entries.map((e) => e.node))).toEqual(new Set(['node-a', 'node-b']));
    expect(entries.map((e) => e.seq)).toEqual(entries.map((_, i) => i + 1));
    // Both nodes hash with the one audit key (here a shared data directory; in production, the file the operator gives each node).
    const verify = await runCli(['audit', 'verify', '--store', storeUrl, '--data-dir', cluster.dataDir]);
    expect(verify.stdout).toMatch(new RegExp(`audit chain OK: ${entries.length} entries verified`));
    expect(verify.stdout).toMatch(/keyed: every entry is hashed with the audit key/);
    expect(verify.code).toBe(0);
    // Going on from a verified entry walks only what came after it, and re-reads that entry.
    const store = await openStore(storeUrl, cluster.dataDir, { purpose: 'inspect' });
    try {
      const whole = await store.verifyAudit();
      expect(whole).toMatchObject({ ok: true, from_seq: 1, head_seq: entries.length, checked: entries.length });
      const mid = entries[entries.length - 3];
      expect(await store.verifyAudit({ seq: mid.seq, hash: mid.hash })).toMatchObject({ ok: true, from_seq: mid.seq + 1, checked: 2, head: whole.head });
      expect(await store.verifyAudit({ seq: mid.seq, hash: 'f'.repeat(64) })).toMatchObject({ ok: false, first_broken: { seq: mid.seq, reason: expect.stringMatching(/changed/) } });
    } finally {
      await store.close();
    }
  });

  it('a call for a session on a node that died is answered with that node, not lost', async () => {
    const k = await createKey(['--store', storeUrl], 'orphan', 'gdb:read', ['--rate', 'unlimited']);
    const sid = await openMcpSession(a.url, k.key);
    const exited = new Promise((r) => a.proc.once('exit', r));
    a.proc.kill('SIGKILL'); // no clean shutdown: its sessions stay recorded in the store
    await exited;
    const r = await callTool(b.url, k.key, sid, 'list_sessions');
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ message: expect.stringMatching(/^Session is held by node node-a \(http:\/\/127\.0\.0\.1:\d+\/mcp\), which did not answer/), data: { node: 'node-a' } });
  });
});
