import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildHttpMock } from './keploy.js';
import { parseMockSet } from '../keploy/parse.js';
import { numberMocks, serializeMockSet } from '../keploy/serialize.js';
import type { HttpMock } from '../keploy/types.js';
import { DebugkitCa } from '../tls/ca.js';
import { recordIntercepted, replayIntercepted } from './intercept.js';
import { HttpMatcher, type MatchRequest } from './matcher.js';
import { pollUntil, type TimeSlice } from '../../../core/wait.js';
import { HttpReplayer, splitSetCookie, type ReplayEvent } from './replayer.js';
import { turnsMarked } from '../../../../test/helpers/stall.js';
import { closeServer, curl, fetchVia, interceptingListener, listen, rawExchange, startOrigin, tempDir, type Closable, type Fetched, type FetchOptions } from './test-support.js';

let ca: DebugkitCa;
let originCa: DebugkitCa;
let bundle: string;
const cleanups: Array<() => Promise<void>> = [];
const plainHost = { port: 0, host: '' };
const secureHost = { port: 0, host: '' };

/** The calls the program makes; each is recorded once, then replayed. */
const CALLS: Array<Omit<FetchOptions, 'port' | 'host' | 'ca'> & { tls?: boolean }> = [
  { path: '/hello' },
  { path: '/hello', method: 'HEAD' },
  { path: '/binary' },
  { path: '/nothing' },
  { path: '/echo', method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"q":"first","n":1}', tls: true },
  { path: '/gzip', headers: { 'Accept-Encoding': 'gzip' }, tls: true },
  { path: '/poll', tls: true },
  { path: '/poll', tls: true },
];
const recorded: Fetched[] = [];
let mocks: HttpMock[];

function call(c: (typeof CALLS)[number], port: number): Promise<Fetched> {
  const { tls, ...rest } = c;
  return fetchVia({ ...rest, port, host: tls ? secureHost.host : plainHost.host, ...(tls ? { ca: ca.certPem } : {}) });
}

beforeAll(async () => {
  const a = await tempDir();
  const b = await tempDir();
  cleanups.push(a.cleanup, b.cleanup);
  ca = await DebugkitCa.load(a.dir);
  originCa = await DebugkitCa.load(b.dir);
  bundle = (await ca.caBundle()).bundle;
  // Record every call against real origins, then stop them.
  const plain = await startOrigin();
  const secure = await startOrigin(originCa.leafFor('localhost'));
  Object.assign(plainHost, { port: plain.port, host: `localhost:${plain.port}` });
  Object.assign(secureHost, { port: secure.port, host: `localhost:${secure.port}` });
  const got: HttpMock[] = [];
  const record = (conn: Parameters<typeof recordIntercepted>[0]) => recordIntercepted(conn, { ca, upstreamCa: originCa.certPem, onMock: (m) => got.push(m) });
  const plainL = await interceptingListener({ host: '127.0.0.1', port: plain.port }, record);
  const secureL = await interceptingListener({ host: '127.0.0.1', port: secure.port }, record);
  for (const c of CALLS) recorded.push(await call(c, c.tls ? secureL.port : plainL.port));
  expect(await pollUntil(() => got.length >= CALLS.length, { timeoutMs: 1000, intervalMs: 10 }), `${got.length} of ${CALLS.length} calls recorded`).toBe(true);
  await Promise.all([plainL.close(), secureL.close(), plain.close(), secure.close()]);
  // Through the Keploy file format and back, as the toolset will store them.
  mocks = parseMockSet(serializeMockSet(numberMocks(got)), 'mocks.yaml') as HttpMock[];
});
afterAll(async () => {
  for (const c of cleanups) await c();
});

interface Replay {
  replayer: HttpReplayer;
  events: ReplayEvent[];
  plain: Closable;
  secure: Closable;
  close(): Promise<void>;
}

async function startReplay(options: { fallBackOnMiss?: boolean; plainTarget?: number } = {}): Promise<Replay> {
  const events: ReplayEvent[] = [];
  const replayer = new HttpReplayer({ matcher: new HttpMatcher(mocks), fallBackOnMiss: options.fallBackOnMiss, onEvent: (e) => events.push(e) });
  const serve = (conn: Parameters<typeof replayIntercepted>[0]) => replayIntercepted(conn, replayer, { ca });
  const plain = await interceptingListener({ host: '127.0.0.1', port: options.plainTarget ?? plainHost.port }, serve);
  const secure = await interceptingListener({ host: '127.0.0.1', port: secureHost.port }, serve);
  return { replayer, events, plain, secure, close: async () => void (await Promise.all([plain.close(), secure.close()])) };
}

/** Headers as a client compares them: framing headers left out, repeated ones joined as Keploy does. */
function comparable(headers: Array<[string, string]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of headers) {
    const name = k.toLowerCase();
    if (['connection', 'keep-alive', 'transfer-encoding', 'content-length'].includes(name)) continue;
    out[name] = out[name] === undefined ? v : `${out[name]},${v}`;
  }
  return out;
}

describe('HttpReplayer', () => {
  it('answers every recorded call with the recorded status, headers and body', async () => {
    const r = await startReplay();
    for (const [i, c] of CALLS.entries()) {
      const replayed = await call(c, c.tls ? r.secure.port : r.plain.port);
      const original = recorded[i]!;
      expect(replayed.status, c.path).toBe(original.status);
      expect(replayed.body.equals(original.body), c.path).toBe(true);
      expect(comparable(replayed.headers), c.path).toEqual(comparable(original.headers));
    }
    expect(r.replayer.counters).toEqual({ replayed: CALLS.length, missed: 0, fellBack: 0, recorded: 0 });
    expect(JSON.parse(recorded[7]!.body.toString())).toEqual({ poll: 2 });
    await r.close();
  });

  it('keeps Set-Cookie headers apart', async () => {
    const r = await startReplay();
    const hello = await call(CALLS[0]!, r.plain.port);
    expect(hello.headers.filter(([k]) => k === 'Set-Cookie').map(([, v]) => v)).toEqual(['a=1; Path=/', 'b=2; Expires=Wed, 21 Oct 2037 07:28:00 GMT; HttpOnly']);
    expect(splitSetCookie('a=1, b=2; Expires=Wed, 21 Oct 2037 07:28:00 GMT')).toEqual(['a=1', 'b=2; Expires=Wed, 21 Oct 2037 07:28:00 GMT']);
    await r.close();
  });

  it('answers HEAD with the recorded length and no body', async () => {
    const head = buildHttpMock({
      method: 'HEAD',
      url: `http://${plainHost.host}/file`,
      requestHeaders: [],
      statusCode: 200,
      responseHeaders: [
        ['Content-Length', '1234'],
        ['Content-Type', 'application/zip'],
      ],
      requestTime: new Date(),
      responseTime: new Date(),
    });
    const replayer = new HttpReplayer({ matcher: new HttpMatcher([head]) });
    const l = await interceptingListener({ host: '127.0.0.1', port: plainHost.port }, (conn) => replayIntercepted(conn, replayer, { ca }));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const r1 = await fetchVia({ port: l.port, host: plainHost.host, path: '/file', method: 'HEAD', agent });
    const r2 = await fetchVia({ port: l.port, host: plainHost.host, path: '/file', method: 'HEAD', agent });
    agent.destroy();
    for (const r of [r1, r2]) {
      expect(r.status).toBe(200);
      expect(r.headers).toContainEqual(['Content-Length', '1234']);
      expect(r.body.length).toBe(0);
    }
    await l.close();
  });

  it('compresses a stored (decoded) body again only for clients that accept it', async () => {
    const r = await startReplay();
    const gz = await call(CALLS[5]!, r.secure.port);
    expect(gz.headers).toContainEqual(['Content-Encoding', 'gzip']);
    expect(zlib.gunzipSync(gz.body).toString()).toBe('{"compressed":true,"items":[1,2,3]}');
    const plain = await call({ ...CALLS[5]!, headers: {} }, r.secure.port);
    expect(plain.headers.some(([k]) => k.toLowerCase() === 'content-encoding')).toBe(false);
    expect(plain.body.toString()).toBe('{"compressed":true,"items":[1,2,3]}');
    await r.close();
  });

  it('reuses the last recorded answer when a call repeats more than recorded', async () => {
    const r = await startReplay();
    const polls = [];
    for (let i = 0; i < 3; i++) polls.push(JSON.parse((await call(CALLS[6]!, r.secure.port)).body.toString()).poll);
    expect(polls).toEqual([1, 2, 2]);
    await r.close();
  });

  it('answers a changed request with 502 naming the closest mock', async () => {
    const r = await startReplay();
    const changed = await call({ ...CALLS[4]!, body: '{"q":"second","n":1}' }, r.secure.port);
    expect(changed.status).toBe(502);
    const report = JSON.parse(changed.body.toString());
    const echoMock = mocks.find((m) => m.spec.req.url.endsWith('/echo'))!;
    expect(report).toMatchObject({
      error: 'debugkit: no recorded mock matches this request',
      request: { method: 'POST', url: '/echo' },
      closest: { name: echoMock.name, differences: ['body $.q: recorded "first", got "second"'] },
    });
    expect(r.replayer.counters).toEqual({ replayed: 0, missed: 1, fellBack: 0, recorded: 0 });
    expect(r.events).toEqual([{ kind: 'missed', method: 'POST', url: '/echo', mock: echoMock.name, differences: ['body $.q: recorded "first", got "second"'] }]);
    await r.close();
  });

  it('counts a recorded answer node:http cannot send as it was recorded as a miss, saying why (attack 18u P7)', async () => {
    const hello = mocks.find((m) => m.spec.req.url.endsWith('/hello') && m.spec.req.method === 'GET')!;
    const events: ReplayEvent[] = [];
    const serveWith = async (resp: Partial<HttpMock['spec']['resp']>) => {
      const changed: HttpMock = { ...hello, spec: { ...hello.spec, resp: { ...hello.spec.resp, ...resp } } };
      const replayer = new HttpReplayer({ matcher: new HttpMatcher([changed]), onEvent: (e) => events.push(e) });
      const listener = await interceptingListener({ host: '127.0.0.1', port: plainHost.port }, (conn) => replayIntercepted(conn, replayer, { ca }));
      const got = await call(CALLS[0]!, listener.port);
      await listener.close();
      return { got, counters: replayer.counters };
    };
    // A header value with DEL: the answer goes out without it, and the replay is not counted as exact.
    const header = await serveWith({ header: { ...hello.spec.resp.header, 'X-Bin': 'a\x7fb', 'X-Fine': 'yes' } });
    expect(header.got.status).toBe(hello.spec.resp.status_code);
    expect(header.got.headers.find(([k]) => k === 'X-Fine')).toEqual(['X-Fine', 'yes']);
    expect(header.got.headers.find(([k]) => k === 'X-Bin')).toBeUndefined();
    expect(header.counters).toMatchObject({ replayed: 0, missed: 1 });
    expect(events.at(-1)).toMatchObject({ kind: 'missed', mock: hello.name, error: expect.stringMatching(/^the recorded response was sent without its header X-Bin: a value /) });
    // A reason phrase with 0x01 (before: node:http threw, and again on the 502 after it: no answer at all, and "replayed").
    const status = await serveWith({ status_message: 'O\x01K' });
    expect(status.got.status).toBe(hello.spec.resp.status_code);
    expect(status.counters).toMatchObject({ replayed: 0, missed: 1 });
    expect(events.at(-1)).toMatchObject({ kind: 'missed', mock: hello.name, error: expect.stringMatching(/^the recorded response was sent without its status message: /) });
  });

  it('serves curl over HTTPS with the debugkit bundle', async () => {
    const r = await startReplay();
    const out = await curl([
      '-sS',
      '--cacert',
      bundle,
      '--connect-to',
      `localhost:${secureHost.port}:127.0.0.1:${r.secure.port}`,
      '-H',
      'Content-Type: application/json',
      '-d',
      '{"n":1,"q":"first"}',
      `https://${secureHost.host}/echo`,
    ]);
    expect(out.stderr).toBe('');
    expect(JSON.parse(out.stdout)).toEqual({ method: 'POST', received: '{"q":"first","n":1}', length: 19 });
    await r.close();
  });

  it('forwards a miss to the real destination with fallBackOnMiss', async () => {
    const live = await startOrigin();
    const r = await startReplay({ fallBackOnMiss: true, plainTarget: live.port });
    const hit = await call(CALLS[0]!, r.plain.port);
    expect(hit.body.toString()).toBe('hello world\n');
    const miss = await fetchVia({ port: r.plain.port, host: plainHost.host, path: '/echo', method: 'POST', body: 'not recorded' });
    expect(JSON.parse(miss.body.toString())).toEqual({ method: 'POST', received: 'not recorded', length: 12 });
    expect(live.requests).toEqual(['POST /echo']);
    expect(r.replayer.counters).toEqual({ replayed: 1, missed: 0, fellBack: 1, recorded: 0 });
    expect(r.events.map((e) => e.kind)).toEqual(['replayed', 'fellBack']);
    await r.close();
    await live.close();
  });

  it('reports a failed fallback as a 502', async () => {
    const r = await startReplay({ fallBackOnMiss: true }); // the recorded origin is gone
    const miss = await fetchVia({ port: r.plain.port, host: plainHost.host, path: '/gone' });
    expect(miss.status).toBe(502);
    expect(JSON.parse(miss.body.toString()).error).toMatch(/forwarding it to 127.0.0.1:\d+ failed: .*ECONNREFUSED/);
    expect(r.events[0]).toMatchObject({ kind: 'fellBack', error: expect.stringMatching(/ECONNREFUSED/) });
    await r.close();
  });

  it('closes after a Connection: close or HTTP/1.0 request', async () => {
    const r = await startReplay();
    for (const version of ['HTTP/1.1', 'HTTP/1.0']) {
      const raw = await rawExchange(r.plain.port, `GET /hello ${version}\r\nHost: ${plainHost.host}\r\nConnection: close\r\n\r\n`, { halfClose: false });
      // Node answers HTTP/1.0 requests with an HTTP/1.1 status line (RFC 9110 allows it); it closes after.
      expect(raw.toString()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nhello world\n$/);
    }
    expect(r.events.map((e) => [e.kind, e.how, e.reused])).toEqual([
      ['replayed', 'exact', false],
      ['replayed', 'exact', true],
    ]);
    await r.close();
  });

  it('keeps a connection alive across replayed requests', async () => {
    const r = await startReplay();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let sockets = 0;
    agent.on('free', () => {});
    const origCreate = agent.createConnection.bind(agent);
    agent.createConnection = ((...args: Parameters<typeof origCreate>) => {
      sockets++;
      return origCreate(...args);
    }) as typeof agent.createConnection;
    for (const c of [CALLS[0]!, CALLS[2]!, CALLS[3]!]) await fetchVia({ ...c, port: r.plain.port, host: plainHost.host, agent });
    agent.destroy();
    expect(sockets).toBe(1);
    expect(r.replayer.counters.replayed).toBe(3);
    await r.close();
  });
});

// Attack 18d: pipelined requests on one connection were matched back to back on the event loop.
// Now they are matched one at a time in arrival order, and a match waits for the next turn of the
// event loop once SLICE_MS of this one is used.
describe('HttpReplayer under a burst of pipelined requests (attack 18d)', () => {
  /** A matcher whose every match (either way) burns `ms` of CPU first, marking the turn of the event loop it ran in. */
  class SlowMatcher extends HttpMatcher {
    readonly turns = turnsMarked();
    constructor(
      mocks: HttpMock[],
      private readonly ms: number,
    ) {
      super(mocks);
    }
    override match(request: MatchRequest) {
      this.burn();
      return super.match(request);
    }
    override matchSliced(request: MatchRequest, slice: TimeSlice) {
      this.burn();
      return super.matchSliced(request, slice);
    }
    private burn(): void {
      this.turns.mark();
      const start = process.cpuUsage();
      for (;;) {
        const used = process.cpuUsage(start);
        if ((used.user + used.system) / 1000 >= this.ms) break;
      }
    }
  }
  const poll = (answer: string) =>
    buildHttpMock({
      method: 'GET',
      url: 'http://h/poll',
      requestHeaders: [],
      requestBody: '',
      statusCode: 200,
      responseHeaders: [],
      responseBody: answer,
      requestTime: new Date(0),
      responseTime: new Date(0),
    });

  /** Serves `matcher`'s replay on a local port; half-open connections as the capture proxy keeps them. */
  async function serve(matcher: HttpMatcher) {
    const replayer = new HttpReplayer({ matcher });
    const server = net.createServer({ allowHalfOpen: true }, (socket) => void replayer.serve({ target: { host: 'h', port: 80 }, client: socket }, { scheme: 'http' }));
    const port = await listen(server);
    cleanups.push(() => closeServer(server));
    return port;
  }

  it('answers them in order, in slices: the event loop gets a turn every few milliseconds of CPU', async () => {
    const matcher = new SlowMatcher([poll('pending'), poll('running'), poll('done')], 2);
    const port = await serve(matcher);
    const n = 200;
    const answers = (await rawExchange(port, 'GET /poll HTTP/1.1\r\nHost: h\r\n\r\n'.repeat(n))).toString('latin1');
    const bodies = [...answers.matchAll(/\r\n\r\n(pending|running|done)/g)].map((m) => m[1]);
    expect(bodies).toEqual(['pending', 'running', ...Array<string>(n - 2).fill('done')]);
    // 200 matches of 2 ms: 400 ms in one go before, all in the one turn that read the burst. In slices of SLICE_MS, about
    // twenty turns here, more on a slower host (each slice gets fewer matches done), never fewer.
    expect(matcher.turns.count(), 'turns of the event loop the 200 matches ran in').toBeGreaterThan(4);
  });
});
