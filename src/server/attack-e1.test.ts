// Attack round 18ac, e1-2: one request held the event loop 0.4-0.65 s from any valid key, even
// one already over its rate limit. The body-shape pass bounded depth and members per container but
// not the values in all, so 4 MiB of 1.37 M empty arrays passed it and JSON.parse of them took
// ~500 ms; and a key over its rate limit was answered 429 only after its body was parsed.
// Through the real HTTP server and control plane (keys in a SQLite store), watching JSON.parse.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { defaultConfig } from '../config.js';
import { controlHooks } from '../control/hooks.js';
import { makeKey } from '../control/keys.js';
import { ControlPlane } from '../control/plane.js';
import { SqliteStore } from '../control/sqlite.js';
import { createLogger } from '../mcp/log.js';
import { toolsetFactories } from '../toolsets/index.js';
import { createDebugkit, type Debugkit } from './createServer.js';
import { serveHttp, type HttpHandle } from './http.js';

let dir: string;
let plane: ControlPlane;
let dk: Debugkit;
let http: HttpHandle;
const keys: Record<string, string> = {};
const ids: Record<string, string> = {};

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-e1-'));
  plane = new ControlPlane({ store: new SqliteStore(path.join(dir, 'control.db')), node: { id: 'n1' } });
  for (const [name, rate] of [
    ['open', '1000/min'],
    // An hour's window: a minute's, aligned to the clock, rolled over between the test's two requests now and then.
    ['limited', '1/hour'],
  ] as const) {
    const made = makeKey({ name, scopes: 'gdb:read', rate });
    await plane.store.createKey(made.record, made.hash);
    keys[name] = made.secret;
    ids[name] = made.record.id;
  }
  const config = defaultConfig({ toolsets: ['gdb'], root: dir, logLevel: 'error' });
  config.http.port = 0;
  dk = createDebugkit(config, { toolsets: toolsetFactories, log: createLogger('error'), hooks: controlHooks(plane) });
  http = await serveHttp(dk);
});
afterAll(async () => {
  await http?.close();
  await dk?.close();
  await plane?.close();
  await rm(dir, { recursive: true, force: true });
});
afterEach(() => vi.restoreAllMocks());

/** Texts of over 1 MB given to JSON.parse while `run` runs (the server parses in this process). */
async function bigParses<T>(run: () => Promise<T>): Promise<{ value: T; parsed: number }> {
  const parse = JSON.parse.bind(JSON);
  let parsed = 0;
  vi.spyOn(JSON, 'parse').mockImplementation((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
    if (typeof text === 'string' && text.length > 1_000_000) parsed++;
    return parse(text, reviver);
  });
  try {
    return { value: await run(), parsed };
  } finally {
    vi.restoreAllMocks();
  }
}

const post = async (key: string, body: string) => {
  const res = await fetch(http.url, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { id?: unknown; error?: { code: number; message: string; data?: Record<string, unknown> }; result?: unknown } };
};

/** The report's body (parse1.mjs arr): 137 rows of 9,999 empty arrays under params._meta.x, 4.1 MB. */
function e12Body(): string {
  const row = `[${Array(9999).fill('[]').join(',')}]`;
  return `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":[${Array(137).fill(row).join(',')}]}}}`;
}

describe('attack e1-2: no body is parsed past a bound on its values, nor for a key over its rate limit', () => {
  it('the report body (1.37 M empty arrays) is refused with the bound named, and never given to JSON.parse', async () => {
    const body = e12Body();
    expect(body.length).toBeGreaterThan(4_100_000);
    const { value: answer, parsed } = await bigParses(() => post(keys.open!, body));
    expect(answer.status).toBe(400);
    expect(answer.body.error?.code).toBe(-32700);
    expect(answer.body.error?.message).toBe(
      'request body refused: JSON with more than 200,000 values (arrays, objects, strings, numbers and literals, object keys counted); a body may hold at most 200,000: send fewer, or split a batch into several requests',
    );
    // Before: parsed (once, ~500 ms on the loop), then answered.
    expect(parsed).toBe(0);
    // The key is still served.
    expect((await post(keys.open!, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }))).body).toEqual({ jsonrpc: '2.0', id: 2, result: {} });
  }, 60_000);

  it('a key already over its rate limit gets its 429 before a large body is parsed; the one audit entry says the body was not read', async () => {
    const ping = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' });
    expect((await post(keys.limited!, ping(1))).status).toBe(200);
    // 2 MB within every shape bound (100 strings of 20,000 characters): only the rate limit refuses it.
    const big = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping', params: { _meta: { x: Array.from({ length: 100 }, () => 'a'.repeat(20_000)) } } });
    const { value: answer, parsed } = await bigParses(() => post(keys.limited!, big));
    expect(answer.status).toBe(429);
    expect(answer.body.error).toMatchObject({
      code: -32002,
      message: expect.stringMatching(/^Rate limit exceeded: 1 requests per hour; retry after \d+ s$/),
      data: { kind: 'rate', limit: 1, used: 1 },
    });
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(answer.headers.get('x-ratelimit-remaining')).toBe('0');
    // Before: parsed first, then refused.
    expect(parsed).toBe(0);
    const entries = await plane.store.queryAudit({ keyId: ids.limited! });
    expect(entries.filter((e) => e.event === 'denied')).toEqual([
      expect.objectContaining({ tool: 'POST /mcp', outcome: 'limited', args: { '[not read]': 'the request body: the key was over its rate limit' } }),
    ]);
    // A small body (64 KiB at most) is parsed, and refused message by message as before: its answers keep their ids.
    const small = await post(
      keys.limited!,
      JSON.stringify([
        { jsonrpc: '2.0', id: 3, method: 'ping' },
        { jsonrpc: '2.0', id: 4, method: 'tools/list' },
      ]),
    );
    expect(small.status).toBe(429);
    expect(small.body).toEqual([
      expect.objectContaining({ id: 3, error: expect.objectContaining({ code: -32002 }) }),
      expect.objectContaining({ id: 4, error: expect.objectContaining({ code: -32002 }) }),
    ]);
  }, 60_000);
});
