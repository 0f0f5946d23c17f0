// Issue 22, "replay that tells the truth", the rest of keploy/keploy PR #4570's list of runs Keploy
// reported clean ("missed: 0, exit 0") while the program got wrong bytes or none (the first file,
// mocks-truth.test.ts, holds #1, a repeated request, and #10, chunked framing). Each case here is
// recorded with the real service live, then replayed with it stopped: the program must get the
// recorded bytes, and the report must say what happened.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { startMariadb } from '../src/toolsets/mocks/mysql/testing.js';
import { startPostgres } from '../src/toolsets/mocks/postgres/testing.js';
import { startRedis } from '../src/toolsets/mocks/redis/testing.js';
import { mocksFixture } from './helpers/mocks-fixture.js';

const f = mocksFixture('debugkit-mocks-truth-cases-', () => startPostgres());

async function call(name: string, args: Record<string, unknown>): Promise<any> {
  const r = await f.dk.tool(name, args);
  expect(r.isError, r.text).toBe(false);
  return r.structured;
}
const setOf = (rec: { mockFilePath: string }) => rec.mockFilePath.split('/').at(-2)!;
const out = (name: string) => readFileSync(path.join(f.root, name), 'utf8');
const listen = async (server: net.Server | Server): Promise<number> => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
};
/**
 * Records `command` with the service live (every exchange a mock: `mocks` of them), stops the service
 * (`server`), and replays strictly: every mock used once, none missed. Returns the program's output
 * file `output` as it was live and as it was replayed; both must parse to `expected` when given.
 */
async function recordStopReplay(o: { command: string; path: string; mocks: number; output: string; server: net.Server | Server; expected?: unknown }): Promise<{ live: string; replayed: string }> {
  try {
    const rec = await call('keploy_mock_record', { command: o.command, path: o.path, timeout: 60 });
    expect(rec, JSON.stringify(rec)).toMatchObject({ success: true, mockCount: o.mocks });
    const live = out(o.output);
    await close(o.server);
    writeFileSync(path.join(f.root, o.output), '');
    const run = await call('keploy_mock_test', { command: o.command, mockName: setOf(rec), path: o.path, strict: true, timeout: 60 });
    expect(run, JSON.stringify(run)).toMatchObject({ success: true, mocksReplayed: o.mocks, mocksMissed: 0, appExitCode: 0 });
    expect(run).not.toHaveProperty('mocksUnused');
    expect(run).not.toHaveProperty('mocksReused');
    const replayed = out(o.output);
    if (o.expected !== undefined) {
      expect(JSON.parse(live)).toEqual(o.expected);
      expect(JSON.parse(replayed)).toEqual(o.expected);
    }
    return { live, replayed };
  } finally {
    await close(o.server);
  }
}
/**
 * A Python `program` (given its argument) against the service `start` starts: recorded with
 * `recorded`, the service stopped, replayed with `missed`. The miss must be an error the client
 * raised (`error` in its output), counted, and the run not a success; answered, not timed out.
 */
async function missWithServiceStopped<S extends { stop(): Promise<void> }>(o: {
  start: () => Promise<S>;
  program: (service: S) => string;
  recorded: string;
  missed: string;
  error: RegExp;
}): Promise<void> {
  const service = await o.start();
  try {
    writeFileSync(path.join(f.root, 'miss.py'), o.program(service));
    const rec = await call('keploy_mock_record', { command: `/usr/bin/python3 miss.py ${o.recorded}`, path: 'keploy-miss', timeout: 60 });
    expect(rec, JSON.stringify(rec)).toMatchObject({ success: true });
    await service.stop();
    const run = await call('keploy_mock_test', { command: `/usr/bin/python3 miss.py ${o.missed}`, mockName: setOf(rec), path: 'keploy-miss', timeout: 60 });
    expect(run, JSON.stringify(run)).toMatchObject({ success: false, mocksMissed: 1, appExitCode: 1 });
    expect(run.appOutput).toMatch(o.error);
    expect(run.message).not.toMatch(/stopped after/);
  } finally {
    await service.stop();
  }
}
/** An HTTP/1.1 answer as sent: its status line, its headers as lower-case "name: value" (sorted, framing left out), its body. */
function parts(answer: string): { status: string; headers: string[]; body: string } {
  const [head, ...body] = answer.split('\r\n\r\n');
  const [status, ...lines] = head!.split('\r\n');
  const headers = lines.map((l) => l.replace(/^[^:]+/, (n) => n.toLowerCase())).filter((l) => !/^(connection|keep-alive):/.test(l));
  return { status: status!, headers: headers.sort(), body: body.join('\r\n\r\n') };
}
const close = (server: net.Server | Server) => new Promise((r) => (server.listening ? server.close(r) : r(undefined)));

describe('Keploy false-clean cases (keploy/keploy PR #4570), recorded live and replayed with the service stopped', () => {
  it('Keploy false-clean: bodiless responses (HEAD, 204, 304 and 205) on a keep-alive connection, each followed by another request: every exchange recorded and replayed byte for byte', async () => {
    // The server writes its own bytes: a HEAD answer and a 304 that carry a Content-Length but no
    // body (as RFC 9110 allows), a 204 with neither, a 205 with Content-Length: 0. A recorder that
    // read their body until the length or the end of the connection swallowed the next exchange.
    const answers: Record<string, string> = {
      'HEAD /head': 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\nX-Step: head\r\n\r\n',
      'GET /204': 'HTTP/1.1 204 No Content\r\nX-Step: 204\r\n\r\n',
      'GET /304': 'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nContent-Length: 20\r\nX-Step: 304\r\n\r\n',
      'GET /205': 'HTTP/1.1 205 Reset Content\r\nContent-Length: 0\r\nX-Step: 205\r\n\r\n',
    };
    const raw = net.createServer((socket) => {
      let buffered = '';
      socket.on('data', (d) => {
        buffered += d.toString('latin1');
        for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
          const line = buffered.slice(0, buffered.indexOf('\r\n')).split(' ').slice(0, 2).join(' ');
          buffered = buffered.slice(end + 4);
          const body = `after ${line}`;
          socket.write(answers[line] ?? `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
        }
      });
      socket.on('error', () => undefined);
    });
    const port = await listen(raw);
    // The client knows which answers have no body (RFC 9112 6.3): it reads each answer's head, then
    // the body its Content-Length gives unless the answer is one of those, and sends the next request.
    writeFileSync(
      path.join(f.root, 'bodiless.mjs'),
      `import net from 'node:net';
const steps = [['HEAD', '/head'], ['GET', '/after-head'], ['GET', '/204'], ['GET', '/after-204'], ['GET', '/304'], ['GET', '/after-304'], ['GET', '/205'], ['GET', '/after-205']];
const s = net.connect(${port}, '127.0.0.1');
let buf = Buffer.alloc(0);
let wake = () => {};
s.on('data', (d) => { buf = Buffer.concat([buf, d]); wake(); });
s.on('close', () => wake());
const until = async (ready) => { while (!ready()) { if (s.destroyed) throw new Error('the connection closed after ' + JSON.stringify(buf.toString('latin1'))); await new Promise((r) => (wake = r)); } };
const got = [];
for (const [method, target] of steps) {
  s.write(method + ' ' + target + ' HTTP/1.1\\r\\nHost: 127.0.0.1:${port}\\r\\n' + (target === '/304' ? 'If-None-Match: "v1"\\r\\n' : '') + '\\r\\n');
  await until(() => buf.indexOf('\\r\\n\\r\\n') >= 0);
  const headEnd = buf.indexOf('\\r\\n\\r\\n') + 4;
  const head = buf.subarray(0, headEnd).toString('latin1');
  const status = Number(head.split(' ')[1]);
  const length = method === 'HEAD' || status === 204 || status === 304 ? 0 : Number(/content-length: *(\\d+)/i.exec(head)?.[1] ?? 0);
  await until(() => buf.length >= headEnd + length);
  got.push(buf.subarray(0, headEnd + length).toString('latin1'));
  buf = buf.subarray(headEnd + length);
}
(await import('node:fs')).writeFileSync('bodiless-out.json', JSON.stringify({ got, extra: buf.toString('latin1') }));
s.end();
`,
    );
    const { live, replayed } = await recordStopReplay({ command: 'node bodiless.mjs', path: 'keploy-bodiless', mocks: 8, output: 'bodiless-out.json', server: raw });
    expect(JSON.parse(live)).toEqual({
      got: [
        answers['HEAD /head'],
        expect.stringMatching(/after GET \/after-head$/),
        answers['GET /204'],
        expect.stringMatching(/after GET \/after-204$/),
        answers['GET /304'],
        expect.stringMatching(/after GET \/after-304$/),
        answers['GET /205'],
        expect.stringMatching(/after GET \/after-205$/),
      ],
      extra: '',
    });
    // The status lines, header values and bodies the service sent, byte for byte, and nothing after
    // them. Keploy's mock holds headers as a map of canonical names (ETag is "Etag"), so their order
    // and case are not kept; Connection and Keep-Alive are the replaying server's own framing. No
    // header the service did not send: it sent no Date, and the 304 kept its Content-Length.
    expect(JSON.parse(replayed).extra).toBe('');
    expect(JSON.parse(replayed).got.map(parts)).toEqual(JSON.parse(live).got.map(parts));
  });

  it('Keploy false-clean: a gzip response body and a gzip request body: the replay serves bytes the client decodes to the recorded text, compressed once', async () => {
    const gz = createHttpServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => {
        const sent = req.headers['content-encoding'] === 'gzip' ? gunzipSync(Buffer.concat(parts)).toString() : Buffer.concat(parts).toString();
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-encoding': 'gzip', 'x-sent': sent });
        res.end(gzipSync(`the service read "${sent}" and answers: ${'zipped text '.repeat(20)}`));
      });
    });
    const port = await listen(gz);
    // node:http leaves the body as sent: the program decodes what Content-Encoding names, once
    // (asking for gzip, and asking for nothing, which this service answers with gzip all the same);
    // fetch asks for gzip, deflate and br and decodes itself.
    writeFileSync(
      path.join(f.root, 'gzip.mjs'),
      `import http from 'node:http';
import { gzipSync, gunzipSync } from 'node:zlib';
const post = (target, text, accept) => new Promise((ok, fail) => {
  const body = gzipSync(text);
  const headers = { 'content-encoding': 'gzip', 'content-type': 'text/plain', 'content-length': body.length, ...(accept ? { 'accept-encoding': accept } : {}) };
  const req = http.request({ host: '127.0.0.1', port: ${port}, path: target, method: 'POST', headers }, (res) => {
    const parts = [];
    res.on('data', (d) => parts.push(d));
    res.on('end', () => {
      const bytes = Buffer.concat(parts);
      const encoding = res.headers['content-encoding'];
      ok({ encoding, decoded: (encoding === 'gzip' ? gunzipSync(bytes) : bytes).toString() });
    });
  });
  req.on('error', fail);
  req.end(body);
});
const asked = await post('/gz', 'a gzip request body', 'gzip');
const unasked = await post('/gz-unasked', 'no accept-encoding', undefined);
const viaFetch = await (await fetch('http://127.0.0.1:${port}/gz-fetch', { method: 'POST', body: gzipSync('fetched'), headers: { 'content-encoding': 'gzip' } })).text();
(await import('node:fs')).writeFileSync('gzip-out.json', JSON.stringify({ asked, unasked: unasked.decoded, viaFetch }));
`,
    );
    const answer = (sent: string) => `the service read "${sent}" and answers: ${'zipped text '.repeat(20)}`;
    // Decoded once to the text: a body compressed twice would read as gzip bytes, one left plain under "gzip" would not gunzip.
    const expected = { asked: { encoding: 'gzip', decoded: answer('a gzip request body') }, unasked: answer('no accept-encoding'), viaFetch: answer('fetched') };
    await recordStopReplay({ command: 'node gzip.mjs', path: 'keploy-gzip', mocks: 3, output: 'gzip-out.json', server: gz, expected });
  });

  it('Keploy false-clean: a text/event-stream answer written event by event, each after the client acknowledged the last on another request: the whole stream recorded and replayed', async () => {
    // The service writes event n+1 only once /ack?n=n arrived: the stream is open while the acks are exchanged.
    let stream: import('node:http').ServerResponse | undefined;
    const sse = createHttpServer((req, res) => {
      if (req.url === '/events') {
        stream = res;
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write('id: 1\ndata: first\n\n');
        return;
      }
      const n = Number(new URL(req.url!, 'http://x').searchParams.get('n'));
      res.end(`ack ${n}`);
      if (n < 3) stream!.write(`id: ${n + 1}\ndata: ${['', 'second', 'third'][n]}\n\n`);
      else stream!.end('event: done\ndata: bye\n\n');
    });
    const port = await listen(sse);
    writeFileSync(
      path.join(f.root, 'sse.mjs'),
      `const res = await fetch('http://127.0.0.1:${port}/events');
const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
let text = '';
const events = [];
const acks = [];
for (;;) {
  const { value, done } = await reader.read();
  if (done) break;
  text += value;
  for (let end = text.indexOf('\\n\\n'); end >= 0; end = text.indexOf('\\n\\n')) {
    events.push(text.slice(0, end));
    text = text.slice(end + 2);
    if (events.length <= 3) acks.push(await (await fetch('http://127.0.0.1:${port}/ack?n=' + events.length)).text());
  }
}
(await import('node:fs')).writeFileSync('sse-out.json', JSON.stringify({ type: res.headers.get('content-type'), events, acks, rest: text }));
`,
    );
    const expected = { type: 'text/event-stream', events: ['id: 1\ndata: first', 'id: 2\ndata: second', 'id: 3\ndata: third', 'event: done\ndata: bye'], acks: ['ack 1', 'ack 2', 'ack 3'], rest: '' };
    await recordStopReplay({ command: 'node sse.mjs', path: 'keploy-sse', mocks: 4, output: 'sse-out.json', server: sse, expected });
  });

  it('Keploy false-clean: a PostgreSQL query not in the set is answered at once with an error psql reports, counted as missed, and the run fails', async () => {
    const psql = (query: string) => `psql -X -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p ${f.db.port} -U postgres -d postgres -c '${query}'`;
    const env = [`PGPASSWORD=${f.db.password}`, 'PGSSLMODE=disable'];
    const rec = await call('keploy_mock_record', { command: psql('select 41 + 1'), env, path: 'keploy-pg-miss', timeout: 60 });
    expect(rec, JSON.stringify(rec)).toMatchObject({ success: true });
    await f.db.stop();
    const run = await call('keploy_mock_test', { command: psql('select 6 * 7'), env, mockName: setOf(rec), path: 'keploy-pg-miss', timeout: 60 });
    expect(run, JSON.stringify(run)).toMatchObject({ success: false, mocksMissed: 1, appExitCode: 1 });
    // psql printed the replay's error (not a lost connection), and the run was not stopped by the timeout.
    expect(run.appOutput).toMatch(/ERROR: {2}debugkit: /);
    expect(run.appOutput).not.toMatch(/server closed the connection/);
    expect(run.message).not.toMatch(/stopped after/);
    expect(run.misses?.[0]).toMatch(/select 6 \* 7/);
    // A program that catches the error and exits 0 still missed: the run is not clean.
    writeFileSync(
      path.join(f.root, 'pg-swallow.py'),
      `import sys, psycopg2
c = psycopg2.connect(host='127.0.0.1', port=${f.db.port}, user='postgres', password='${f.db.password}', dbname='postgres', sslmode='disable')
try:
    c.cursor().execute(sys.argv[1])
except psycopg2.Error as e:
    print('swallowed:', e)
`,
    );
    const swallowed = await call('keploy_mock_test', { command: '/usr/bin/python3 pg-swallow.py "select 6 * 7"', mockName: setOf(rec), path: 'keploy-pg-miss', timeout: 60 });
    expect(swallowed, JSON.stringify(swallowed)).toMatchObject({ success: false, mocksMissed: 1, appExitCode: 0 });
    expect(swallowed.appOutput).toMatch(/swallowed: debugkit: /);
  });

  it('Keploy false-clean: a Redis command not in the set is answered with an error the client raises, counted as missed, and the run fails', async () => {
    await missWithServiceStopped({
      start: () => startRedis(),
      program: (redis) => `import sys, redis
r = redis.Redis(host='127.0.0.1', port=${redis.port}, password='${redis.password}', socket_timeout=30)
r.set(sys.argv[1], 'v')
print(r.get(sys.argv[1]))
`,
      recorded: 'k1',
      missed: 'k2',
      error: /redis\.exceptions\.ResponseError: .*debugkit/,
    });
  });

  it("attack l1-2: a PostgreSQL query whose literal differs only in its blanks (recorded 'a  b', replayed 'a b') is a miss, not the recorded answer", async () => {
    await missWithServiceStopped({
      start: () => startPostgres(),
      program: (db) => `import sys, psycopg2
c = psycopg2.connect(host='127.0.0.1', port=${db.port}, user='postgres', password='${db.password}', dbname='postgres', sslmode='disable')
cur = c.cursor()
cur.execute({'two': "select 'a  b' as v", 'one': "select 'a b' as v"}[sys.argv[1]])
print(cur.fetchall())
`,
      recorded: 'two',
      missed: 'one',
      error: /psycopg2\.\S+: .*debugkit/,
    });
  });

  it('attack l1-3: a Redis MGET of one key holding NUL is not the MGET of the two keys it spells: a miss, not the recorded two values', async () => {
    await missWithServiceStopped({
      start: () => startRedis(),
      program: (redis) => `import sys, redis
r = redis.Redis(host='127.0.0.1', port=${redis.port}, password='${redis.password}', socket_timeout=30)
print(r.mget(*{'two': ['acct:1', 'acct:2'], 'nul': ['acct:1\\0acct:2']}[sys.argv[1]]))
`,
      recorded: 'two',
      missed: 'nul',
      error: /redis\.exceptions\.ResponseError: .*debugkit/,
    });
  });

  it('Keploy false-clean: a MySQL query not in the set is answered with an error PyMySQL raises, counted as missed, and the run fails', async () => {
    await missWithServiceStopped({
      start: () => startMariadb(),
      program: (maria) => `import sys, pymysql
c = pymysql.connect(host='127.0.0.1', port=${maria.port}, user='${maria.user}', password='${maria.password}', database='${maria.database}', read_timeout=30)
cur = c.cursor()
cur.execute(sys.argv[1])
print(cur.fetchall())
`,
      recorded: '"select 41 + 1"',
      missed: '"select 6 * 7"',
      error: /pymysql\.err\.\w+: .*debugkit/,
    });
  });

  it('Keploy false-clean: a program that goes around the proxy (straight to a live service) or makes no call at all: every mock unused, a warning, and a failure with strict', async () => {
    let next = 0;
    const api = createHttpServer((_req, res) => res.end(`answer ${++next}`));
    const port = await listen(api);
    writeFileSync(path.join(f.root, 'around.mjs'), `(await import('node:fs')).writeFileSync('around-out.txt', await (await fetch('http://127.0.0.1:${port}/x')).text());\n`);
    writeFileSync(path.join(f.root, 'nothing.mjs'), `(await import('node:fs')).writeFileSync('around-out.txt', 'no call');\n`);
    try {
      const rec = await call('keploy_mock_record', { command: 'node around.mjs', path: 'keploy-around', timeout: 60 });
      expect(rec, JSON.stringify(rec)).toMatchObject({ success: true, mockCount: 1 });
      const set = setOf(rec);
      // `env -u LD_PRELOAD` drops proxychains' library: node connects to the service itself, which is live.
      const around = 'env -u LD_PRELOAD node around.mjs';
      const loose = await call('keploy_mock_test', { command: around, mockName: set, path: 'keploy-around', timeout: 60 });
      expect(out('around-out.txt')).toBe('answer 2');
      expect(loose, JSON.stringify(loose)).toMatchObject({ mocksReplayed: 0, mocksMissed: 0, appExitCode: 0, mocksUnused: 1, unusedMocks: ['mock-0'] });
      expect(loose.message).toMatch(/warning: 1 mocks of the set were never used \(mock-0\)/);
      const strict = await call('keploy_mock_test', { command: around, mockName: set, path: 'keploy-around', strict: true, timeout: 60 });
      expect(strict).toMatchObject({ success: false, mocksReplayed: 0, mocksUnused: 1, appExitCode: 0 });
      expect(strict.message).toMatch(/strict: 1 mocks of the set were never used/);
      for (const strictly of [false, true]) {
        const none = await call('keploy_mock_test', { command: 'node nothing.mjs', mockName: set, path: 'keploy-around', strict: strictly, timeout: 60 });
        expect(none, JSON.stringify(none)).toMatchObject({ success: !strictly, mocksReplayed: 0, mocksMissed: 0, mocksUnused: 1 });
        expect(none.message).toMatch(strictly ? /strict: 1 mocks of the set were never used/ : /warning: 1 mocks of the set were never used/);
      }
    } finally {
      await close(api);
    }
  });
});
