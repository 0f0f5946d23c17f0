// Attack 18t M1: the capture proxy a recorded or replayed program is pointed at (ALL_PROXY, the
// SOCKS5 and HTTP listeners) accepted every connection. A keploy_mock_test program opened 21,000
// silent SOCKS5 connections, each held 10 s (SILENT_CLIENT_MS, onMiss 'fail'); the server's
// descriptor limit was 20,000, libuv then accepted and closed every new connection, and other
// clients' MCP requests were reset (73 of 248 pings). Now one call's proxy holds at most 1,024
// connections, and all proxies together an eighth of the descriptor limit (64 to 4,096); past
// either, a new connection is closed before a byte is read, and the call's answer says so.
//
// Here the server runs with a soft limit of 400 descriptors (so the proxies' share is 64) and the
// program opens 500 silent connections: before, they took every descriptor the server had. Since
// attack 18u P1 one API key's calls hold at most half of the proxies' share (32), so that is what
// the attacker's program gets; the program shows the call's credential (P6), as it is handed it.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../src/core/wait.js';
import { startHttpServer, type TestHttpServer } from '../src/toolsets/mocks/proxy/testing.js';
import { answerText, freshPing, plainCall, startKeyedServer, stopAttackServer, type Answer, type KeyedServer } from './helpers/attack.js';
import { tempDir } from './helpers/programs.js';

const FD_LIMIT = 400;
/** proxiesMaxConnections(400): an eighth of 400 is 50, below the floor of 64. */
const PROXIES_SHARE = 64;
/** One API key's part of it (proxy.ts PROXY_KEY_SHARE). */
const KEY_SHARE = PROXIES_SHARE / 2;
const OPENED = 500;

/**
 * One GET on a raw connection (proxychains sends it through the capture proxy): the same bytes
 * recorded and replayed. Kept alive: in the flood, the connection answered stays held.
 */
const RAW_GET = `
import net from 'node:net';
export const request = (port) => 'GET /hello HTTP/1.1\\r\\nHost: 127.0.0.1:' + port + '\\r\\n\\r\\n';
export const answer = (socket) => new Promise((resolve) => {
  let text = '';
  socket.on('data', (d) => { text += d; if (text.includes('hello GET /hello')) resolve('hello GET /hello'); });
  socket.on('close', () => resolve(text));
  socket.on('error', () => {});
});
export const get = (port) => { const s = net.connect(port, '127.0.0.1'); s.write(request(port)); return answer(s); };
`;
const GET = `import { get } from './raw-get.mjs'; console.log(await get(Number(process.argv[2]))); process.exit(0);`;

/**
 * Opens one SOCKS5 connection and sends the GET on it, then OPENED - 1 more that stay silent;
 * writes held.json (how many the proxy answered, how many it closed, what the GET got) and holds
 * them until release exists.
 */
const FLOOD = `
import net from 'node:net';
import { existsSync, writeFileSync } from 'node:fs';
import { request, answer } from './raw-get.mjs';
const [target, count] = process.argv.slice(2).map(Number);
const proxy = new URL(process.env.ALL_PROXY.replace(/^socks5h?/, 'http'));
const proxyPort = Number(proxy.port);
const [user, pass] = [decodeURIComponent(proxy.username), decodeURIComponent(proxy.password)].map((t) => Buffer.from(t));
const auth = Buffer.concat([Buffer.from([1, user.length]), user, Buffer.from([pass.length]), pass]);
const socks = () => new Promise((resolve) => {
  const s = net.connect(proxyPort, '127.0.0.1');
  let got = Buffer.alloc(0);
  const done = (v) => { s.removeAllListeners('data'); resolve(v); };
  s.on('error', () => done('refused'));
  s.on('close', () => done('refused'));
  s.on('data', (d) => { got = Buffer.concat([got, d]); if (got.length >= 14) done(s); });
  s.write(Buffer.concat([Buffer.from([5, 1, 2]), auth, Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, target >> 8, target & 255])]));
});
const first = await socks();
const others = [];
for (let i = 1; i < count; i += 50) others.push(...(await Promise.all(Array.from({ length: Math.min(50, count - i) }, socks))));
let body = 'refused';
if (first !== 'refused') { const a = answer(first); first.write(request(target)); body = await a; }
const all = [first, ...others];
writeFileSync('held.json', JSON.stringify({ held: all.filter((s) => s !== 'refused').length, refused: all.filter((s) => s === 'refused').length, body }));
const until = Date.now() + 60_000;
while (!existsSync('release') && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
for (const s of all) if (s !== 'refused') s.destroy();
`;

describe('attack 18t M1: the capture proxies hold a bounded share of the descriptors', () => {
  let s: KeyedServer;
  let root: string;
  let upstream: TestHttpServer;
  let port = 0;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18t-proxy-');
    writeFileSync(path.join(root, 'raw-get.mjs'), RAW_GET);
    writeFileSync(path.join(root, 'get.mjs'), GET);
    writeFileSync(path.join(root, 'flood.mjs'), FLOOD);
    upstream = await startHttpServer();
    port = upstream.port;
    s = await startKeyedServer(root, { attacker: 'mocks,mocks:run', other: 'mocks:read' }, ['--toolsets', 'mocks']);
    // The soft limit only (the program it starts raises its own to the hard one, as node does),
    // before the first capture proxy reads it.
    execFileSync('prlimit', ['--pid', String(s.node.proc.pid), `--nofile=${FD_LIMIT}:`]);
    const recorded = await plainCall(s, s.keys.attacker!.key, 'keploy_mock_record', { command: `node get.mjs ${port}`, timeout: 60 });
    expect(recorded.result?.structuredContent, answerText(recorded)).toMatchObject({ success: true, mockCount: 1 });
  }, 90_000);
  afterAll(async () => {
    await upstream?.close();
    await stopAttackServer(s, root);
  });

  /** Runs `tool` on the flood while another key opens fresh MCP connections; what the program saw, those pings, and the answer. */
  async function flood(tool: string, args: object): Promise<{ held: { held: number; refused: number; body: string }; pings: string[]; answer: Answer }> {
    rmSync(path.join(root, 'release'), { force: true });
    const heldFile = path.join(root, 'held.json');
    rmSync(heldFile, { force: true });
    const call = plainCall(s, s.keys.attacker!.key, tool, { command: `node flood.mjs ${port} ${OPENED}`, timeout: 120, ...args });
    await pollUntil(() => existsSync(heldFile) && readFileSync(heldFile, 'utf8').endsWith('}'), { timeoutMs: 60_000, intervalMs: 20 });
    const held = JSON.parse(readFileSync(heldFile, 'utf8')) as { held: number; refused: number; body: string };
    // While the program holds every connection the proxy let it: other clients' new connections are answered.
    const pings = [await freshPing(s, s.keys.other!.key), await freshPing(s, s.keys.other!.key), await freshPing(s, s.keys.other!.key)];
    writeFileSync(path.join(root, 'release'), '');
    return { held, pings, answer: await call };
  }

  const SHARE_FULL = `the calls of this API key hold ${KEY_SHARE} connections through their capture proxies, its share of the ${PROXIES_SHARE} the server allows all calls; open fewer at a time, or wait for this key's other calls to end`;

  it(`${OPENED} silent connections from one replay: ${KEY_SHARE} held (the key's share of ${PROXIES_SHARE}), the rest refused and reported; a fresh MCP connection is still answered`, async () => {
    const fdsBefore = readdirSync(`/proc/${s.node.proc.pid}/fd`).length;
    expect(fdsBefore, 'the server alone leaves room for the proxies and MCP clients').toBeLessThan(FD_LIMIT - PROXIES_SHARE - 100);
    const { held, pings, answer } = await flood('keploy_mock_test', {});
    expect(pings).toEqual(['200', '200', '200']);
    expect(held).toEqual({ held: KEY_SHARE, refused: OPENED - KEY_SHARE, body: 'hello GET /hello' });
    const out = answer.result?.structuredContent;
    expect(out, answerText(answer)).toMatchObject({ success: false });
    expect(out.mocksReplayed, answerText(answer)).toBe(1);
    expect(out.mocksMissed).toBeGreaterThanOrEqual(OPENED - KEY_SHARE);
    expect(out.misses[0]).toBe(`${OPENED - KEY_SHARE} connections were refused by the capture proxy: ${SHARE_FULL}`);
    expect(s.node.output()).toMatch(/mocks: a connection was refused by the capture proxy: the calls of this API key hold 32 connections/);
  }, 150_000);

  it('the same while recording: the answer says how many calls were not recorded, and why', async () => {
    const { held, pings, answer } = await flood('keploy_mock_record', { path: './keploy-flood' });
    expect(pings).toEqual(['200', '200', '200']);
    expect(held).toEqual({ held: KEY_SHARE, refused: OPENED - KEY_SHARE, body: 'hello GET /hello' });
    expect(answer.result?.structuredContent?.message, answerText(answer)).toContain(`${OPENED - KEY_SHARE} more calls were not recorded: connections refused by the capture proxy: ${SHARE_FULL}`);
  }, 150_000);
});
