// Issue 17, the attack on the finished change across two nodes sharing PostgreSQL: what a key
// tried against another key's sessions, rows and records through the other node. The one that
// succeeded (crash signatures shared through the store) is refused since; all stay as regression tests.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, createKey, openMcpSession, rpc, startCluster, type Cluster, type Node } from './helpers/control.js';
import { compileC, tempDir } from './helpers/programs.js';

let cluster: Cluster;
let storeUrl: string;
let a: Node;
let b: Node;
let root: string;

beforeAll(async () => {
  root = tempDir('debugkit-attack17-cluster-');
  compileC(root, 'basic');
  compileC(root, 'dbg_crash');
  cluster = await startCluster(['--root', root]);
  ({ storeUrl, a, b } = cluster);
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
});

let nextId = 1;
type Answer = { error?: { code: number; message: string; data?: any }; result?: any };

async function call(node: Node, key: string, name: string, args: object, headers: Record<string, string> = {}): Promise<Answer> {
  return (await rpc(node.url, key, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } }, headers)).body;
}

function shape(answer: Answer, id: string): string {
  return JSON.stringify({ error: answer.error, result: answer.result }).split(id).join('ID');
}

const keys = (scopes: string, ...names: string[]) => Promise.all(names.map((n) => createKey(['--store', storeUrl], n, scopes, ['--rate', 'unlimited'])));

describe('two nodes: what one key left on one node, another key tries through the other', () => {
  it("another key's stateless gdb session, named through the other node, answers as an unknown id (regression)", async () => {
    const [ka, kb] = await keys('gdb', 'c-gdb-a', 'c-gdb-b');
    const opened = await call(a, ka!.key, 'open', {});
    const id = opened.result.structuredContent.content.id as string;
    const unknown = '00000000-0000-4000-8000-000000000000';
    for (const node of [a, b]) {
      const theirs = await call(node, kb!.key, 'call', { id, command: 'print 1' });
      const none = await call(node, kb!.key, 'call', { id: unknown, command: 'print 1' });
      expect(shape(theirs, id)).toBe(shape(none, unknown));
    }
    // Its owner reaches it through either node.
    expect(JSON.stringify(await call(b, ka!.key, 'call', { id, command: 'print 6*7' }))).toContain('42');
    await call(b, ka!.key, 'close', { id });
  });

  it("another key's MCP session id, sent to the other node, with or without a forged forwarding header: 404 (regression)", async () => {
    const [ka, kb] = await keys('gdb', 'c-mcp-a', 'c-mcp-b');
    const sid = await openMcpSession(a.url, ka!.key);
    for (const headers of [{}, { 'X-Debugkit-Forwarded': 'forged', 'X-Debugkit-Via': 'node-a' }] as Array<Record<string, string>>) {
      const viaB = await callTool(b.url, kb!.key, sid, 'list_sessions', {}, headers);
      expect(viaB.status, JSON.stringify(viaB.body)).toBe(404);
      const viaA = await callTool(a.url, kb!.key, sid, 'list_sessions', {}, headers);
      expect(viaA.status).toBe(404);
    }
    // Its owner reaches it through node b (forwarded).
    const mine = await callTool(b.url, ka!.key, sid, 'list_sessions', {});
    expect(mine.status, JSON.stringify(mine.body)).toBe(200);
  });

  it('a forged forwarding header does not stop a session being found on its node, nor let another key in (regression)', async () => {
    const [ka] = await keys('gdb', 'c-fwd-a');
    const opened = await call(a, ka!.key, 'open', {});
    const id = opened.result.structuredContent.content.id as string;
    // With a wrong node secret, node b forwards to node a as usual.
    const viaB = await call(b, ka!.key, 'call', { id, command: 'print 7*6' }, { 'X-Debugkit-Forwarded': 'not-the-secret' });
    expect(JSON.stringify(viaB)).toContain('42');
    await call(a, ka!.key, 'close', { id });
  });

  it('the rate limit is one counter over both nodes (regression)', async () => {
    const k = await createKey(['--store', storeUrl], 'c-rate', 'gdb:read', ['--rate', '4/hour']);
    const codes: Array<number | undefined> = [];
    for (const node of [a, b, a, b, a, b]) {
      const r = await rpc(node.url, k.key, { jsonrpc: '2.0', id: nextId++, method: 'tools/list', params: {} });
      codes.push(r.body.error?.code);
    }
    expect(codes.filter((c) => c === -32002).length).toBe(2);
  });

  it('debugger_find_similar_bugs on the other node shows a key only its own crashes (found by the attack: the signatures were shared by every key through the store)', async () => {
    const [ka] = await keys('debugger', 'c-crash-a');
    const [kb] = await keys('debugger:read', 'c-crash-b');
    const launched = await call(a, ka!.key, 'debugger_launch', { program: 'dbg_crash', session_id: 'acme-cluster-secret' });
    expect(launched.result?.isError, JSON.stringify(launched)).toBeFalsy();
    await call(a, ka!.key, 'debugger_continue', { session_id: 'acme-cluster-secret' });
    await call(a, ka!.key, 'debugger_detach', { session_id: 'acme-cluster-secret' });
    const seen = JSON.stringify(await call(b, kb!.key, 'debugger_find_similar_bugs', {}));
    expect(seen, "key B on node b reads key A's crash from node a").not.toContain('acme-cluster-secret');
    expect(seen).not.toContain(path.join(root, 'dbg_crash'));
  });
});
