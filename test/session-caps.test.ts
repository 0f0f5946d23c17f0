// Session caps per key: one key's MCP sessions together hold at most --max-sessions-per-key
// sessions per toolset, so one key cannot fill the server's cap and lock every other key out.
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type TestClient } from './helpers/client.js';
import { createKey, startNode, tempDataDir, type Node } from './helpers/control.js';
import { descendants, waitFor } from './helpers/procs.js';
import { compileC, tempDir } from './helpers/programs.js';

let data: Awaited<ReturnType<typeof tempDataDir>>;
let node: Node | undefined;
let root: string;
let alice: { key: string; id: string };
let bob: { key: string; id: string };
const clients: TestClient[] = [];

const PER_KEY = (kind: string) =>
  `too many ${kind}s for this key: its clients have 3 open together, the per-key limit (--max-sessions-per-key). Close one (its close tool, in the MCP session that opened it), or end an MCP session of this key that holds some.`;

beforeAll(async () => {
  root = tempDir('debugkit-caps-');
  compileC(root, 'dbg_timetravel');
  data = await tempDataDir();
  const store = ['--data-dir', data.dir];
  alice = await createKey(store, 'alice', 'gdb,debugger', ['--rate', 'unlimited']);
  bob = await createKey(store, 'bob', 'gdb,debugger', ['--rate', 'unlimited']);
  node = await startNode([...store, '--root', root, '--toolsets', 'gdb,debugger', '--max-sessions', '2', '--max-sessions-per-key', '3']);
}, 60_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  const pid = node?.proc.pid;
  await node?.stop();
  if (pid) expect(descendants(pid)).toEqual([]);
  await data?.cleanup();
});

async function connect(key: string): Promise<TestClient> {
  const client = await connectHttp(node!.url, key);
  clients.push(client);
  return client;
}

describe('--max-sessions-per-key', () => {
  it('caps gdb sessions over all MCP sessions of one key, while another key still opens sessions', async () => {
    const [a1, a2, b] = [await connect(alice.key), await connect(alice.key), await connect(bob.key)];
    const first = await a1.ok('open', {});
    await a1.ok('open', {});
    expect(await a1.fails('open', {})).toMatch(/for this client: it has 2 open, the per-client limit \(--max-sessions\)/);
    await a2.ok('open', {});
    // A second MCP session of the same key does not get a fresh allowance.
    expect(await a2.fails('open', {})).toBe(PER_KEY('gdb session'));
    const a3 = await connect(alice.key);
    expect(await a3.fails('open', {})).toBe(PER_KEY('gdb session'));
    // Bob's key is not locked out by Alice's.
    await b.ok('open', {});
    // Closing one of Alice's frees a place for any of her MCP sessions.
    await a1.ok('close', { id: first.id });
    await a3.ok('open', {});
    expect(await a2.fails('open', {})).toBe(PER_KEY('gdb session'));
    // Ending an MCP session (DELETE) releases its sessions, and with them the key's places.
    const gdbs = () => descendants(node!.proc.pid!).filter((p) => /\bgdb\b.*--interpreter=mi3/.test(p.args)).length;
    expect(gdbs()).toBe(4);
    await (a1.client.transport as StreamableHTTPClientTransport).terminateSession();
    expect(await waitFor(() => gdbs() === 3, 10_000)).toBe(true);
    await a2.ok('open', {});
  });

  it('caps debugger sessions the same way (the debugger passes the key too)', async () => {
    const [a1, a2, b] = [await connect(alice.key), await connect(alice.key), await connect(bob.key)];
    const launch = (c: TestClient, session_id: string) => c.tool('debugger_launch', { program: 'dbg_timetravel', session_id });
    expect((await launch(a1, 'x')).isError).toBe(false);
    expect((await launch(a1, 'y')).isError).toBe(false);
    // session_id is unique per client: Alice's other MCP session has its own "x".
    expect((await launch(a2, 'x')).isError).toBe(false);
    const refused = await launch(a2, 'y');
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain(PER_KEY('debugger session'));
    const bobs = await launch(b, 'x');
    expect(bobs.isError).toBe(false);
    // One gdb per debugger session that was let in, none for the refused one.
    const debuggerGdbs = () => descendants(node!.proc.pid!).filter((p) => /\bgdb\b.*--interpreter=mi3.*--args .*dbg_timetravel/.test(p.args)).length;
    expect(debuggerGdbs()).toBe(4);
    for (const [c, id] of [
      [a1, 'x'],
      [a1, 'y'],
      [a2, 'x'],
      [b, 'x'],
    ] as const) {
      expect((await c.tool('debugger_detach', { session_id: id })).isError).toBe(false);
    }
    expect(await waitFor(() => debuggerGdbs() === 0, 10_000)).toBe(true);
    // Alice's places are free again.
    expect((await launch(a2, 'y')).isError).toBe(false);
    expect((await a2.tool('debugger_detach', { session_id: 'y' })).isError).toBe(false);
  }, 120_000);
});
