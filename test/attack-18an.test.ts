// Attack round 18an (issue 18): what one key could leave behind or hide through the MCP session layer.
// y1-1: a DELETE of an MCP session while its `open` was still starting (the audit entry, the program
// checks) left a gdb nobody could reach for up to its idle timeout (24 h at most); such orphans
// filled the server-wide session cap for every other key. The call's signal (aborted when its MCP
// session ends) now stops a session from being made, or ends the one that was starting.
// y1-2: a tools/call sent with another key's (or a made-up) MCP session id was charged to the
// caller's quota, answered 404, and left no audit entry: a leaked session id could be probed
// unseen. It now runs nothing, costs no quota, and the audit records the refusal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileC, tempDir } from './helpers/programs.js';
import { callTool, createKey, openMcpSession, runCli, startNode, tempDataDir, type Node } from './helpers/control.js';
import { descendants, waitFor } from './helpers/procs.js';

let data: Awaited<ReturnType<typeof tempDataDir>>;
let store: string[];
let node: Node;
let root: string;

beforeAll(async () => {
  data = await tempDataDir();
  store = ['--data-dir', data.dir];
  root = tempDir('debugkit-18an-');
  compileC(root, 'basic');
  node = await startNode([...store, '--root', root, '--toolsets', 'gdb', '--max-sessions-total', '3']);
}, 60_000);

afterAll(async () => {
  await node?.stop();
  await data?.cleanup();
});

const gdbsUnder = (pid: number) => descendants(pid).filter((p) => /\bgdb\b.*--interpreter=mi/.test(p.args));

describe('attack 18an', () => {
  it('y1-1: an MCP session deleted while its open starts leaves no gdb behind, and the server-wide cap stays free for other keys', async () => {
    const attacker = await createKey(store, 'y1-attacker', 'gdb');
    for (let round = 0; round < 8; round++) {
      const sid = await openMcpSession(node.url, attacker.key);
      const opening = callTool(node.url, attacker.key, sid, 'open', { program: 'basic', timeout: 86_400 }).catch((err: unknown) => err);
      // The DELETE goes out right behind the call, while its audit entry and program checks run.
      const gone = await fetch(node.url, { method: 'DELETE', headers: { Authorization: `Bearer ${attacker.key}`, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' } });
      expect(gone.status).toBeLessThan(500);
      await opening;
    }
    const left = await waitFor(() => gdbsUnder(node.proc.pid!).length === 0, 20_000);
    expect(left, JSON.stringify(gdbsUnder(node.proc.pid!))).toBe(true);
    // Another key, never involved, opens as many sessions as the server allows.
    const victim = await createKey(store, 'y1-victim', 'gdb');
    const sid = await openMcpSession(node.url, victim.key);
    for (let i = 0; i < 3; i++) {
      const opened = await callTool(node.url, victim.key, sid, 'open', { timeout: 60 });
      expect(opened.body.result?.isError, JSON.stringify(opened.body)).toBeFalsy();
    }
  }, 90_000);

  it("y1-2: a call naming another key's MCP session (or none that exists) is a 404 that costs no quota and is audited", async () => {
    const owner = await createKey(store, 'y1-owner', 'gdb:read');
    const prober = await createKey(store, 'y1-prober', 'gdb:read', ['--rate', 'unlimited', '--quota', '2/day']);
    const theirs = await openMcpSession(node.url, owner.key);
    for (const sid of [theirs, 'made-up-session-id', theirs]) {
      const probe = await callTool(node.url, prober.key, sid, 'list_sessions');
      expect(probe.status).toBe(404);
      expect(probe.body.error).toMatchObject({ code: -32001, message: expect.stringMatching(/^Session not found/) });
    }
    // The quota is whole: both of its calls still go through in the prober's own session.
    const mine = await openMcpSession(node.url, prober.key);
    for (let i = 0; i < 2; i++) expect((await callTool(node.url, prober.key, mine, 'list_sessions')).status).toBe(200);
    const entries = (await runCli(['audit', 'export', ...store])).stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const refused = entries.filter((e) => e.key_id === prober.id && e.event === 'denied' && e.tool === 'list_sessions');
    expect(refused.length, JSON.stringify(entries.filter((e) => e.key_id === prober.id))).toBe(3);
    expect(refused.map((e) => e.session)).toEqual([theirs, 'made-up-session-id', theirs]);
  });
});
