// Attack 18u, the capture proxies a recorded or replayed program is pointed at.
//
// P6: they listened on 127.0.0.1 with no credential, so any local process (another key's program)
// could send requests through another call's proxy: key m's program found key m2's recording
// proxy with `ss` and sent `GET /INJECTED-BY-OTHER-KEY` through it, and m2's set held that mock
// next to its own. Now each call's proxies have a random credential, handed to the program only
// (ALL_PROXY, HTTP_PROXY, its proxychains config); a connection without it is closed before it
// counts against any cap or reaches a recorder, and the answer counts it.
//
// P1: the budget all capture proxies share was first come, first served: one key's 3 calls held
// all 2,500 slots and 4 of 5 of another key's replays were refused. Now one key's calls hold at
// most half of it together. Here the shared budget is 40 and a call's cap 16: the attacker's three
// calls would take all 40 (3 x 16); they get 20, and the other key's replay is answered.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../src/core/wait.js';
import { readAll, startHttpServer, type TestHttpServer } from '../src/toolsets/mocks/proxy/testing.js';
import { answerText, plainCall, startKeyedServer, stopAttackServer, type Answer, type KeyedServer } from './helpers/attack.js';
import { tempDir } from './helpers/programs.js';

const SHARED = 40;
const PER_CALL = 16;
const KEY_SHARE = SHARED / 2;

/** One GET on a raw connection (proxychains sends it through the capture proxy), as attack-18t-proxy's. */
const RAW_GET = `
import net from 'node:net';
export const request = (port, p = '/hello') => 'GET ' + p + ' HTTP/1.1\\r\\nHost: 127.0.0.1:' + port + '\\r\\n\\r\\n';
export const answer = (socket) => new Promise((resolve) => {
  let text = '';
  socket.on('data', (d) => { text += d; if (text.includes('hello GET /')) resolve(text.slice(text.indexOf('hello GET /')).trim()); });
  socket.on('close', () => resolve(text));
  socket.on('error', () => {});
});
export const get = (port, p) => { const s = net.connect(port, '127.0.0.1'); s.write(request(port, p)); return answer(s); };
`;
const GET = `import { get } from './raw-get.mjs'; console.log(await get(Number(process.argv[2]), process.argv[3])); process.exit(0);`;

/** Writes ready-NAME, waits for go-NAME, then GETs the path: the victim's one call, made while the test knocks on its proxies. */
const WAIT_THEN_GET = `
import { existsSync, writeFileSync } from 'node:fs';
import { get } from './raw-get.mjs';
const [port, p, name] = process.argv.slice(2);
writeFileSync('ready-' + name, String(process.pid));
const until = Date.now() + 60_000;
while (!existsSync('go-' + name) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
console.log(await get(Number(port), p));
process.exit(0);
`;

/**
 * Opens COUNT SOCKS5 connections through the call's proxy with the credential in ALL_PROXY (the
 * program's own, as a real client does), writes NAME.json with how many were answered, and holds
 * them until release exists.
 */
const FLOOD = `
import net from 'node:net';
import { existsSync, writeFileSync } from 'node:fs';
const [target, count] = process.argv.slice(2, 4).map(Number);
const name = process.argv[4];
const proxy = new URL(process.env.ALL_PROXY.replace(/^socks5h?/, 'http'));
const [user, pass] = [decodeURIComponent(proxy.username), decodeURIComponent(proxy.password)].map((t) => Buffer.from(t));
const hello = Buffer.concat([Buffer.from([5, 1, 2, 1, user.length]), user, Buffer.from([pass.length]), pass, Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, target >> 8, target & 255])]);
const socks = () => new Promise((resolve) => {
  const s = net.connect(Number(proxy.port), '127.0.0.1');
  let got = 0;
  s.on('error', () => resolve('refused'));
  s.on('close', () => resolve('refused'));
  s.on('data', (d) => { got += d.length; if (got >= 14) resolve(s); });
  s.write(hello);
});
const all = [];
for (let i = 0; i < count; i++) all.push(await socks());
writeFileSync(name + '.json', JSON.stringify({ held: all.filter((s) => s !== 'refused').length }));
const until = Date.now() + 60_000;
while (!existsSync('release') && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
for (const s of all) if (s !== 'refused') s.destroy();
`;

/** The TCP ports process `pid` listens on. */
function listeningPorts(pid: number): number[] {
  const lines = execFileSync('ss', ['-ltnpH'], { encoding: 'utf8' }).split('\n');
  return [...new Set(lines.filter((l) => l.includes(`pid=${pid},`)).map((l) => Number(/:(\d+)\s/.exec(l)?.[1])))].filter((p) => p > 0);
}

/** What another local process without the credential tries on `port`: a plain-proxy GET, and a SOCKS5 CONNECT with a GET. What each got back. */
async function inject(port: number, upstream: number): Promise<{ plain: string; socks: Buffer }> {
  const plain = net.connect(port, '127.0.0.1');
  plain.on('error', () => {});
  const plainAnswer = readAll(plain);
  plain.write(`GET http://127.0.0.1:${upstream}/INJECTED-PLAIN HTTP/1.1\r\nHost: 127.0.0.1:${upstream}\r\n\r\n`);
  const socks = net.connect(port, '127.0.0.1');
  socks.on('error', () => {});
  const socksAnswer = readAll(socks);
  socks.write(Buffer.from([5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, upstream >> 8, upstream & 255]));
  // Sent at once, as a client that does not wait for the reply: before, the proxy relayed it.
  socks.write(`GET /INJECTED-SOCKS HTTP/1.1\r\nHost: 127.0.0.1:${upstream}\r\n\r\n`);
  return { plain: (await plainAnswer).toString('latin1'), socks: await socksAnswer };
}

describe('attack 18u: the capture proxies take only their call, and share the server fairly between keys', () => {
  let s: KeyedServer;
  let root: string;
  let upstream: TestHttpServer;
  let port = 0;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18u-proxy-');
    writeFileSync(path.join(root, 'raw-get.mjs'), RAW_GET);
    writeFileSync(path.join(root, 'get.mjs'), GET);
    writeFileSync(path.join(root, 'wait-get.mjs'), WAIT_THEN_GET);
    writeFileSync(path.join(root, 'flood.mjs'), FLOOD);
    upstream = await startHttpServer();
    port = upstream.port;
    s = await startKeyedServer(root, { attacker: 'mocks,mocks:run', victim: 'mocks,mocks:run' }, ['--toolsets', 'mocks'], {
      DEBUGKIT_MOCK_PROXY_MAX_CONNECTIONS_TOTAL: String(SHARED),
      DEBUGKIT_MOCK_PROXY_MAX_CONNECTIONS: String(PER_CALL),
    });
  }, 90_000);
  afterAll(async () => {
    await upstream?.close();
    await stopAttackServer(s, root);
  });

  it("P6: a local process without the call's credential cannot send requests through its recording proxy; the set holds only the program's calls", async () => {
    const ready = path.join(root, 'ready-victim');
    const call = plainCall(s, s.keys.victim!.key, 'keploy_mock_record', { command: `node wait-get.mjs ${port} /mine victim`, path: './kinj', timeout: 90 });
    await pollUntil(() => existsSync(ready), { timeoutMs: 60_000, intervalMs: 20 });
    const mcpPort = Number(new URL(s.node.url).port);
    const proxies = listeningPorts(s.node.proc.pid!).filter((p) => p !== mcpPort);
    expect(proxies, 'the recording call listens on a SOCKS5 and an HTTP port').toHaveLength(2);
    const answers = await Promise.all(proxies.map((p) => inject(p, port)));
    writeFileSync(path.join(root, 'go-victim'), '');
    const answer: Answer = await call;
    const out = answer.result?.structuredContent;
    expect(out, answerText(answer)).toMatchObject({ success: true, mockCount: 1 });
    // Each listener turned both tries away: 407 from the HTTP one, "no acceptable method" (5, 0xFF) from the SOCKS5 one, never an answer of the upstream's.
    for (const a of answers) {
      expect(a.plain).not.toContain('hello GET');
      expect(a.socks.toString('latin1')).not.toContain('hello GET');
      expect([...a.socks.subarray(0, 2)]).not.toEqual([5, 0]);
    }
    expect(answers.map((a) => a.plain.split('\r\n')[0])).toContain('HTTP/1.1 407 Proxy Authentication Required');
    expect(answers.map((a) => [...a.socks.subarray(0, 2)])).toContainEqual([5, 0xff]);
    expect(upstream.requests.map((r) => r.url)).toEqual(['/mine']);
    const set = readFileSync(path.join(root, out.mockFilePath), 'utf8');
    expect(set).toContain('/mine');
    expect(set).not.toContain('INJECTED');
    expect(out.message).toContain("4 more calls were not recorded: connections closed by the capture proxy before their first request: they did not show this call's proxy credential");
    expect(s.node.output()).toMatch(/mocks: 1 connection was closed by the capture proxy before its first request: they did not show this call's proxy credential/);
  }, 150_000);

  it("P1: one key's three replays hold at most its share of the proxies' budget; another key's replay is still answered", async () => {
    const recorded = async (key: string, dir: string) => {
      const a = await plainCall(s, key, 'keploy_mock_record', { command: `node get.mjs ${port}`, path: dir, timeout: 60 });
      expect(a.result?.structuredContent, answerText(a)).toMatchObject({ success: true, mockCount: 1 });
      return (a.result.structuredContent.mockFilePath as string).split('/').at(-2)!;
    };
    const attackerSet = await recorded(s.keys.attacker!.key, './k-attacker');
    const victimSet = await recorded(s.keys.victim!.key, './k-victim');
    rmSync(path.join(root, 'release'), { force: true });
    const floods = [1, 2, 3].map((i) =>
      plainCall(s, s.keys.attacker!.key, 'keploy_mock_test', { command: `node flood.mjs ${port} ${PER_CALL} flood-${i}`, path: './k-attacker', mockName: attackerSet, timeout: 120 }),
    );
    const heldFile = (i: number) => path.join(root, `flood-${i}.json`);
    await pollUntil(() => [1, 2, 3].every((i) => existsSync(heldFile(i)) && readFileSync(heldFile(i), 'utf8').endsWith('}')), { timeoutMs: 90_000, intervalMs: 20 });
    const held = [1, 2, 3].map((i) => (JSON.parse(readFileSync(heldFile(i), 'utf8')) as { held: number }).held);
    // Before: 16 + 16 + 8, every slot of the server's 40.
    expect(held.reduce((a, b) => a + b, 0)).toBe(KEY_SHARE);

    const victim = await plainCall(s, s.keys.victim!.key, 'keploy_mock_test', { command: `node get.mjs ${port}`, path: './k-victim', mockName: victimSet, timeout: 60 });
    writeFileSync(path.join(root, 'release'), '');
    expect(victim.result?.structuredContent, answerText(victim)).toMatchObject({ success: true, mocksReplayed: 1, mocksMissed: 0 });

    const attacks = await Promise.all(floods);
    const misses = attacks.flatMap((a) => (a.result?.structuredContent?.misses as string[] | undefined) ?? []);
    expect(misses.join('\n')).toMatch(
      new RegExp(
        `connections? (was|were) refused by the capture proxy: the calls of this API key hold ${KEY_SHARE} connections through their capture proxies, its share of the ${SHARED} the server allows all calls`,
      ),
    );
    expect(misses.join('\n')).not.toMatch(/the capture proxies of all calls hold/);
  }, 240_000);
});
