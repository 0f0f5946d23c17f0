import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../../core/wait.js';
import type { HttpMock } from '../keploy/types.js';
import { startCaptureProxy, type CaptureProxy } from '../proxy/proxy.js';
import { tunnel } from '../proxy/tunnel.js';
import { DebugkitCa } from '../tls/ca.js';
import { isHttpCandidate, recordIntercepted, replayIntercepted } from './intercept.js';
import { HttpMatcher } from './matcher.js';
import { HttpReplayer } from './replayer.js';
import { curl, startOrigins, type Origin } from './test-support.js';

/** The whole path: curl -> debugkit's capture proxy (SOCKS5, CONNECT, plain proxy) -> recorder / replayer. */

let ca: DebugkitCa;
let originCa: DebugkitCa;
let bundle: string;
let plain: Origin;
let secure: Origin;
let origins: Awaited<ReturnType<typeof startOrigins>>;

beforeAll(async () => {
  origins = await startOrigins();
  ({ ca, originCa, bundle, plain, secure } = origins);
});
afterAll(() => origins.close());

/** The proxy's credential as curl takes it in a proxy URL. */
const userinfo = (proxy: CaptureProxy) => `${proxy.credential!.user}:${proxy.credential!.password}@`;

async function withProxy<T>(onConnection: Parameters<typeof startCaptureProxy>[0]['onConnection'], body: (proxy: CaptureProxy) => Promise<T>): Promise<T> {
  const proxy = await startCaptureProxy({ onConnection });
  try {
    return await body(proxy);
  } finally {
    await proxy.close();
  }
}

describe('HTTP(S) through the capture proxy', () => {
  it('records over SOCKS5, CONNECT and the plain proxy, then replays without reaching the servers', async () => {
    const mocks: HttpMock[] = [];
    const https = `https://localhost:${secure.port}`;
    const http = `http://localhost:${plain.port}`;
    await withProxy(
      async (conn) => {
        if (!isHttpCandidate(conn)) return void (await tunnel(conn));
        await recordIntercepted(conn, { ca, upstreamCa: originCa.certPem, onMock: (m) => mocks.push(m) });
      },
      async (proxy) => {
        const socks = await curl(['-sS', '--cacert', bundle, '-x', `socks5h://${userinfo(proxy)}127.0.0.1:${proxy.socksPort}`, `${https}/hello`]);
        expect(socks).toEqual({ stdout: 'hello world\n', stderr: '' });
        const connect = await curl(['-sS', '--cacert', bundle, '-x', `http://${userinfo(proxy)}127.0.0.1:${proxy.httpPort}`, '-d', 'a=1', `${https}/echo`]);
        expect(JSON.parse(connect.stdout)).toMatchObject({ received: 'a=1' });
        const forwarded = await curl(['-sS', '-x', `http://${userinfo(proxy)}127.0.0.1:${proxy.httpPort}`, `${http}/hello?via=proxy`]);
        expect(forwarded.stdout).toBe('hello world\n');
      },
    );
    await pollUntil(() => mocks.length >= 3, { timeoutMs: 1000, intervalMs: 10 });
    expect(mocks.map((m) => `${m.spec.req.method} ${m.spec.req.url}`)).toEqual([`GET ${https}/hello`, `POST ${https}/echo`, `GET ${http}/hello?via=proxy`]);

    const requestsBefore = plain.requests.length + secure.requests.length;
    const replayer = new HttpReplayer({ matcher: new HttpMatcher(mocks) });
    await withProxy(
      (conn) => replayIntercepted(conn, replayer, { ca }),
      async (proxy) => {
        const socks = await curl(['-sS', '--cacert', bundle, '-x', `socks5h://${userinfo(proxy)}127.0.0.1:${proxy.socksPort}`, `${https}/hello`]);
        expect(socks).toEqual({ stdout: 'hello world\n', stderr: '' });
        const connect = await curl(['-sS', '--cacert', bundle, '-x', `http://${userinfo(proxy)}127.0.0.1:${proxy.httpPort}`, '-d', 'a=1', `${https}/echo`]);
        expect(JSON.parse(connect.stdout)).toMatchObject({ received: 'a=1' });
        const forwarded = await curl(['-sS', '-x', `http://${userinfo(proxy)}127.0.0.1:${proxy.httpPort}`, `${http}/hello?via=proxy`]);
        expect(forwarded.stdout).toBe('hello world\n');
        const miss = await curl(['-sS', '-x', `http://${userinfo(proxy)}127.0.0.1:${proxy.httpPort}`, `${http}/hello?via=other`]);
        expect(JSON.parse(miss.stdout).closest.differences).toEqual(['query parameter via: recorded "proxy", got "other"']);
      },
    );
    expect(replayer.counters).toEqual({ replayed: 3, missed: 1, fellBack: 0, recorded: 0 });
    expect(plain.requests.length + secure.requests.length).toBe(requestsBefore);
  });
});
