import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { HttpParser, type HttpMessage, type HttpParserOptions, type HttpRequestMessage, type HttpResponseMessage } from './wire.js';
import { KeptBytes } from '../kept.js';

interface Run {
  messages: HttpMessage[];
  heads: number;
  parser: HttpParser;
  stops: string[];
}

function run(mode: 'request' | 'response', pieces: Array<string | Buffer>, options: HttpParserOptions = {}, end = false): Run {
  const out: Run = { messages: [], heads: 0, parser: undefined as unknown as HttpParser, stops: [] };
  out.parser = new HttpParser(mode, { onMessage: (m) => out.messages.push(m), onHead: () => void out.heads++, onStop: (s, r) => out.stops.push(`${s}: ${r}`) }, options);
  for (const p of pieces) out.parser.push(typeof p === 'string' ? Buffer.from(p, 'latin1') : p);
  if (end) out.parser.end();
  return out;
}

/** Comparable view of messages (times differ between runs). */
const view = (messages: HttpMessage[]) => messages.map(({ startedAt: _s, completedAt: _c, body, ...rest }) => ({ ...rest, body: body.toString('latin1') }));

/** Feeds `text` split at every byte boundary (and one byte at a time) and expects the same messages. */
function expectSplitInvariant(mode: 'request' | 'response', text: string, options: HttpParserOptions = {}, end = false): HttpMessage[] {
  const whole = run(mode, [text], options, end);
  expect(whole.parser.state).not.toBe('not-http');
  for (let i = 1; i < text.length; i++) {
    const split = run(mode, [text.slice(0, i), text.slice(i)], options, end);
    expect(view(split.messages), `split at ${i}`).toEqual(view(whole.messages));
  }
  const bytewise = run(mode, [...text], options, end);
  expect(view(bytewise.messages)).toEqual(view(whole.messages));
  return whole.messages;
}

const req = (m: HttpMessage) => m as HttpRequestMessage;
const res = (m: HttpMessage) => m as HttpResponseMessage;

describe('HttpParser: requests', () => {
  it('reports where each head lies in the stream (for a forwarder), at every split and after a held upgrade', () => {
    const text = 'GET /1 HTTP/1.1\r\nUpgrade: h2c\r\n\r\n\r\nPOST /2 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /3 HTTP/1.0\r\n\r\n';
    const second = text.indexOf('\r\nPOST'); // the empty line before a request line belongs to its head
    const third = text.indexOf('GET /3');
    const want = [
      { start: 0, end: second },
      { start: second, end: text.indexOf('3\r\nabc') },
      { start: third, end: text.length },
    ];
    for (let cut = 0; cut <= text.length; cut++) {
      const ranges: Array<{ start: number; end: number }> = [];
      const starts: Array<number | undefined> = [];
      const parser = new HttpParser('request', { onMessage: () => {}, onHead: (_m, at) => void ranges.push(at) });
      for (const piece of [text.slice(0, cut), text.slice(cut)]) {
        parser.push(Buffer.from(piece, 'latin1'));
        starts.push(parser.headStart);
        while (parser.state === 'held') parser.resume();
      }
      expect(ranges, `split at ${cut}`).toEqual(want);
      expect(starts[1]).toBeUndefined();
    }
  });

  it('reads the request line and keeps header order and case', () => {
    const { messages } = run('request', ['GET /a?b=1 HTTP/1.1\r\nHost: x.test\r\nX-Foo: 1\r\nx-foo:  2 \r\nAccept: */*\r\n\r\n']);
    expect(messages).toHaveLength(1);
    const m = req(messages[0]!);
    expect([m.method, m.target, m.httpVersion]).toEqual(['GET', '/a?b=1', '1.1']);
    expect(m.headers).toEqual([
      ['Host', 'x.test'],
      ['X-Foo', '1'],
      ['x-foo', '2'],
      ['Accept', '*/*'],
    ]);
    expect(m.body.length).toBe(0);
  });

  it('reads a Content-Length body, at every split', () => {
    const [m] = expectSplitInvariant('request', 'POST /p HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world');
    expect(req(m!).body.toString()).toBe('hello world');
    expect(m!.bodyLength).toBe(11);
  });

  it('reads a chunked body with extensions and trailers, at every split', () => {
    const text = 'POST /c HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5;ext=1\r\nhello\r\n6 ; x\r\n world\r\n0\r\nX-Checksum: abc\r\nX-More: 1\r\n\r\n';
    const [m] = expectSplitInvariant('request', text);
    expect(m!.body.toString()).toBe('hello world');
    expect(m!.trailers).toEqual([
      ['X-Checksum', 'abc'],
      ['X-More', '1'],
    ]);
  });

  it('parses pipelined requests in one chunk and across chunks', () => {
    const text = 'GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcDELETE /3 HTTP/1.0\r\n\r\n';
    const messages = expectSplitInvariant('request', text);
    expect(messages.map((m) => `${req(m).method} ${req(m).target} ${m.body}`)).toEqual(['GET /1 ', 'POST /2 abc', 'DELETE /3 ']);
  });

  it('accepts leading empty lines, bare LF line ends and folded headers', () => {
    const { messages, parser } = run('request', ['\r\n\nGET / HTTP/1.1\nHost: a\nX-Long: one\n  two\n\n']);
    expect(parser.state).toBe('http');
    expect(messages[0]!.headers).toEqual([
      ['Host', 'a'],
      ['X-Long', 'one two'],
    ]);
  });

  it('holds bytes after an Upgrade request until told what the server did', () => {
    const text = 'GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nGET /next HTTP/1.1\r\n\r\n';
    const declined = run('request', [text]);
    expect(declined.parser.state).toBe('held');
    expect(declined.messages).toHaveLength(1);
    declined.parser.resume();
    expect(declined.messages.map((m) => req(m).target)).toEqual(['/ws', '/next']);

    const switched = run('request', [text.slice(0, 70), text.slice(70), '\x81\x85binary']);
    switched.parser.stop('upgraded', 'server said 101');
    expect(switched.parser.state).toBe('upgraded');
    expect(switched.messages).toHaveLength(1);
  });

  it('stops on malformed input without throwing', () => {
    const cases = [
      '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03binary tls hello\r\n\r\n',
      'GET / HTTP/2.0\r\n\r\n',
      'GET / HTTP/1.1\r\nNo colon here\r\n\r\n',
      'GET / HTTP/1.1\r\nBad Name: x\r\n\r\n',
      'GET / HTTP/1.1\r\nContent-Length: 12abc\r\n\r\n',
      'GET / HTTP/1.1\r\nContent-Length: 1, 2\r\n\r\n',
      'POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n',
      'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n',
      '   \r\n',
    ];
    for (const text of cases) {
      const r = run('request', [text, 'GET / HTTP/1.1\r\n\r\n']);
      expect(r.parser.state, text).toBe('not-http');
      expect(r.messages, text).toHaveLength(0);
      expect(r.stops).toHaveLength(1);
    }
  });

  it('treats an overlong head as not HTTP', () => {
    const r = run('request', ['GET / HTTP/1.1\r\n', `X-Big: ${'a'.repeat(70_000)}`], { maxHeadBytes: 64 * 1024 });
    expect(r.parser.state).toBe('not-http');
    const line = run('request', ['G'.repeat(100), 'E'.repeat(200)], { maxHeadBytes: 256 });
    expect(line.parser.state).toBe('not-http');
  });
});

describe('HttpParser: responses', () => {
  it('reads Content-Length and chunked responses, pipelined, at every split', () => {
    const text = 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello' + 'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n' + 'HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n';
    const messages = expectSplitInvariant('response', text);
    expect(messages.map((m) => [res(m).status, res(m).reason, m.body.toString()])).toEqual([
      [200, 'OK', 'hello'],
      [201, 'Created', 'abc'],
      [404, '', ''],
    ]);
  });

  it('reads a body delimited by the close of the connection', () => {
    const [m] = expectSplitInvariant('response', 'HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end', {}, true);
    expect(m!.body.toString()).toBe('until the end');
    const open = run('response', ['HTTP/1.1 200 OK\r\n\r\npartial']);
    expect(open.messages).toHaveLength(0);
    open.parser.end();
    expect(open.messages).toHaveLength(1);
    // Transfer-Encoding without chunked last: also until close.
    const te = run('response', ['HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxyz'], {}, true);
    expect(te.messages[0]!.body.toString()).toBe('xyz');
  });

  it('knows which responses have no body: HEAD, 1xx, 204, 304', () => {
    const methods = ['HEAD', 'GET', 'GET', 'GET'];
    const text =
      'HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n' +
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n' +
      'HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n' +
      'HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n' +
      'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok';
    const messages = expectSplitInvariant('response', text, { requestMethod: (i) => methods[i] });
    expect(messages.map((m) => `${res(m).status}:${m.body}`)).toEqual(['200:', '100:', '103:', '204:', '304:', '200:ok']);
  });

  it('stops after 101 Switching Protocols and after a CONNECT tunnel is accepted', () => {
    const ws = run('response', ['HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello']);
    expect(ws.messages).toHaveLength(1);
    expect(ws.parser.state).toBe('upgraded');
    const connect = run('response', ['HTTP/1.1 200 Connection established\r\n\r\n\x16\x03\x01'], { requestMethod: () => 'CONNECT' });
    expect(connect.messages).toHaveLength(1);
    expect(connect.parser.state).toBe('upgraded');
  });

  it('reports an incomplete message at the end without emitting it', () => {
    const r = run('response', ['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort'], {}, true);
    expect(r.messages).toHaveLength(0);
    expect(r.stops).toEqual(['ended: the stream ended inside a message']);
  });

  it('keeps at most maxBodyBytes of a huge body, with bounded memory', () => {
    const total = 100 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const before = process.memoryUsage().arrayBuffers;
    let peak = 0;
    const messages: HttpMessage[] = [];
    const parser = new HttpParser('response', { onMessage: (m) => messages.push(m) });
    parser.push(Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${total}\r\n\r\n`));
    for (let sent = 0; sent < total; sent += chunk.length) {
      parser.push(chunk);
      if (sent % (8 * 1024 * 1024) === 0) peak = Math.max(peak, process.memoryUsage().arrayBuffers - before);
    }
    expect(messages).toHaveLength(1);
    expect(messages[0]!.body.length).toBe(1024 * 1024);
    expect(messages[0]!.bodyLength).toBe(total);
    expect(messages[0]!.bodyTruncated).toBe(true);
    expect(peak).toBeLessThan(8 * 1024 * 1024);
  });

  it('a body not kept whole carries the SHA-256 of all of it, at every split, chunked or not, and past a full budget (f1-3)', () => {
    const body = Buffer.from(Array.from({ length: 3000 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(''));
    const whole = createHash('sha256').update(body).digest('hex');
    const head = `POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: ${body.length}\r\n\r\n`;
    for (const split of [1, 999, 1000, 1001, 2999]) {
      const r = run('request', [head, body.subarray(0, split), body.subarray(split)], { maxBodyBytes: 1000 });
      expect(r.messages[0]).toMatchObject({ bodyLength: 3000, bodyTruncated: true, bodySha256: whole });
    }
    const chunked = `POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body.toString('latin1')}\r\n0\r\n\r\n`;
    expect(run('request', [chunked], { maxBodyBytes: 1000 }).messages[0]).toMatchObject({ bodyTruncated: true, bodySha256: whole });
    // The recording's budget runs out before maxBodyBytes: the body is kept no further, and hashed whole.
    const budget = new KeptBytes(512);
    expect(run('request', [head, body], { maxBodyBytes: 2000, kept: budget }).messages[0]).toMatchObject({ bodyTruncated: true, bodySha256: whole });
    // A body kept whole has no digest (its bytes are there).
    expect(run('request', [head, body], { maxBodyBytes: 5000 }).messages[0]!.bodySha256).toBeUndefined();
  });

  it("a response's body not kept whole is counted, not hashed: nothing reads its digest, and a 100 MB download through the recorder was hashed whole", () => {
    const body = Buffer.alloc(3000, 'r');
    const response = `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`;
    const got = run('response', [response, body], { maxBodyBytes: 1000 }).messages[0]!;
    expect(got).toMatchObject({ bodyLength: 3000, bodyTruncated: true });
    expect(got.bodySha256).toBeUndefined();
  });

  it('bounds a chunked body made of tiny chunks too', () => {
    const piece = Buffer.from('1\r\nx\r\n'.repeat(10_000));
    let last: HttpMessage | undefined;
    const p2 = new HttpParser('response', { onMessage: (m) => (last = m) }, { maxBodyBytes: 1000 });
    p2.push(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'));
    p2.push(piece);
    p2.push(Buffer.from('0\r\n\r\n'));
    expect(last!.body.length).toBe(1000);
    expect(last!.bodyLength).toBe(10_000);
    expect(p2.state).toBe('http');
  });
});

/**
 * Attack 18p: 1,000 connections each answered 1 MB that never finished held 1.8 GB, each body
 * within its own bound. Bodies not finished yet share one budget per recording (kept.ts).
 */
describe("HttpParser: the recording's budget for bodies not finished yet", () => {
  const MiB = 1024 * 1024;
  const head = (n: number) => `HTTP/1.1 200 OK\r\nContent-Length: ${n}\r\n\r\n`;
  it('a body past the budget is kept no further (bodyTruncated, its length still counted), and a finished one gives its bytes back', () => {
    const kept = new KeptBytes(Math.floor(1.5 * MiB));
    const body = Buffer.alloc(MiB, 0x61);
    const first = run('response', [head(MiB), body.subarray(0, MiB - 1)], { kept });
    // The first body holds 1 MiB of the budget (not finished: one byte to come); the second finds 0.5 MiB left.
    const second = run('response', [head(MiB), body], { kept });
    expect(second.messages).toHaveLength(1);
    expect(second.messages[0]).toMatchObject({ bodyTruncated: true, bodyLength: MiB });
    expect(second.messages[0]!.body.length).toBeLessThan(MiB);
    first.parser.push(body.subarray(MiB - 1));
    expect(first.messages[0]).toMatchObject({ bodyTruncated: false, bodyLength: MiB });
    // Both finished: the whole budget is back, and a third body is kept whole.
    const third = run('response', [head(MiB), body], { kept });
    expect(third.messages[0]).toMatchObject({ bodyTruncated: false, bodyLength: MiB });
    expect(kept.take(Math.floor(1.5 * MiB))).toBe(true);
  });

  it('a body whose connection ends unfinished gives its bytes back', () => {
    const kept = new KeptBytes(MiB + 4096);
    const cut = run('response', [head(MiB), Buffer.alloc(MiB / 2)], { kept }, true);
    expect(cut.messages).toHaveLength(0);
    expect(kept.take(MiB)).toBe(true);
  });
});
