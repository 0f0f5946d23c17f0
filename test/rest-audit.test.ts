import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditEntries, createKey, runCli, startNode, tempDataDir, type Node } from './helpers/control.js';
import { waitFor } from './helpers/procs.js';

// Attack g3-1: a REST call (the Python OpenAPI contract) whose client left before its answer was
// audited as "ok", or as an error without a word, while the same over MCP is "cancelled" with its
// reason. A REST call's end is now recorded as an MCP call's is.

let data: Awaited<ReturnType<typeof tempDataDir>>;
let root: string;
let node: Node;
let store: string[];

beforeAll(async () => {
  data = await tempDataDir();
  store = ['--data-dir', data.dir];
  root = mkdtempSync(path.join(tmpdir(), 'debugkit-rest-audit-'));
  writeFileSync(path.join(root, 'slow.py'), 'import time\ntime.sleep(120)\nprint("done")\n');
  node = await startNode([...store, '--root', root]);
}, 60_000);
afterAll(async () => {
  await node?.stop();
  await data?.cleanup();
  if (root) rmSync(root, { recursive: true, force: true });
});

const auditLines = () => auditEntries(store);

describe('a REST call is audited as an MCP call is', () => {
  it('one whose client leaves before its answer is cancelled, with the reason; one answered 404 is an error that says so', async () => {
    const k = await createKey(store, 'rest-leaver', 'python', ['--rate', 'unlimited']);
    const rest = (p: string, init: RequestInit = {}) => fetch(new URL(p, node.url), { ...init, headers: { Authorization: `Bearer ${k.key}`, 'Content-Type': 'application/json' } });
    const started = await rest('/sessions', { method: 'POST', body: JSON.stringify({ entry: 'slow.py' }) });
    expect(started.status, await started.clone().text()).toBe(200);
    const id = ((await started.json()) as { sessionId: string }).sessionId;
    // Run to a line the program reaches only after two minutes; the client leaves once the call is audited as begun.
    const leaving = new AbortController();
    const cont = rest(`/sessions/${id}/continue`, { method: 'POST', body: JSON.stringify({ file: 'slow.py', line: 3 }), signal: leaving.signal }).catch((e: unknown) => e);
    let entries: any[] = [];
    const callOf = () => entries.find((e) => e.event === 'call' && e.key_id === k.id && e.tool === 'POST /sessions/:id/continue');
    const read = async () => void (entries = await auditLines());
    expect(await waitFor(() => callOf() !== undefined, 20_000, 100, read)).toBe(true);
    leaving.abort();
    expect(await cont).toBeInstanceOf(Error);
    const resultOf = () => entries.find((e) => e.event === 'result' && e.call_id === callOf().call_id);
    expect(await waitFor(() => resultOf() !== undefined, 20_000, 100, read), JSON.stringify(entries.slice(-3))).toBe(true);
    expect(resultOf()).toMatchObject({ outcome: 'cancelled', error: 'cancelled: the HTTP client closed the connection' });
    // An answer of 404 is an error, and the record says its status.
    expect((await rest('/sessions/no-such-session')).status).toBe(404);
    await read();
    const missing = entries.filter((e) => e.key_id === k.id && e.tool === 'GET /sessions/:id');
    expect(missing.find((e) => e.event === 'result')).toMatchObject({ outcome: 'error', error: 'answered HTTP 404' });
    expect((await rest(`/sessions/${id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await runCli(['audit', 'verify', ...store])).code).toBe(0);
  }, 90_000);
});
