import http2 from 'node:http2';
import { describe, expect, it } from 'vitest';
import { HttpMatcher } from '../http/matcher.js';
import { postMock, postRequest, watchTurns } from '../http/test-support.js';
import { frameMessages } from './grpc.js';
import { replaying } from './test-support.js';

function call(client: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body: Buffer) {
  return new Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; body: string; reset?: number }>((resolve) => {
    const req = client.request(headers);
    let h: http2.IncomingHttpHeaders = {};
    let t: http2.IncomingHttpHeaders = {};
    let text = '';
    req.on('response', (x) => (h = x));
    req.on('trailers', (x) => (t = x));
    req.on('data', (d) => (text += d));
    req.on('error', () => {});
    req.on('end', () => resolve({ headers: h, trailers: t, body: text }));
    req.on('close', () => resolve({ headers: h, trailers: t, body: text, ...(req.rstCode ? { reset: req.rstCode } : {}) }));
    // A GET is ended with its headers by node:http2.
    if (!req.writableEnded) req.end(body);
  });
}

const grpcHeaders = (path: string) => ({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });

describe('replayH2 misses', () => {
  it('a gRPC call to a method the set lacks gets UNIMPLEMENTED naming it; a plain request a 502', async () => {
    const { client, counts, misses } = await replaying({});
    const r = await call(client, grpcHeaders('/x.Y/Z'), frameMessages([{ compressed: false, data: Buffer.from('hi') }]));
    expect(r.headers['grpc-status']).toBe('12');
    expect(decodeURIComponent(String(r.headers['grpc-message']))).toBe('debugkit mocks: gRPC /x.Y/Z: no mock for this method (the set has no gRPC mocks)');
    const plain = await call(client, { ':method': 'GET', ':path': '/a' }, Buffer.alloc(0));
    expect(plain.headers[':status']).toBe(502);
    expect(plain.body).toBe('debugkit mocks: no mock matches GET /a (HTTP/2)\n');
    expect(counts).toEqual({ replayed: 0, missed: 2, fellBack: 0 });
    expect(misses).toHaveLength(2);
  });

  it('passthrough to a real server that cannot be reached: the stream is reset and the miss reported', async () => {
    const { client, counts, misses } = await replaying({ onMiss: 'passthrough', dial: () => Promise.reject(new Error('connect ECONNREFUSED')) });
    const r = await call(client, grpcHeaders('/x.Y/Z'), frameMessages([]));
    expect(r.reset).toBe(http2.constants.NGHTTP2_INTERNAL_ERROR);
    expect(counts.missed).toBe(1);
    expect(misses[0]).toMatch(/no mock for this method.*; the real server failed too: connect ECONNREFUSED$/);
  });
});

describe('replayH2 matching', () => {
  it('a request against a set of big JSON bodies is matched in slices: no turn of the event loop holds the whole match', async () => {
    // 80 recorded bodies of 40,000 values each; the request is the same JSON pretty-printed, equal
    // as JSON and not as bytes, so every body is parsed and walked (a json match does not stop the scan).
    const values = Array.from({ length: 40_000 }, () => 0);
    const mocks = Array.from({ length: 80 }, (_, i) => postMock('/q', JSON.stringify({ items: values }), `mock-${i}`));
    const body = JSON.stringify({ items: values }, null, 1);
    const { client, counts } = await replaying({ http: new HttpMatcher(mocks) });
    const watch = watchTurns();
    const r = await call(client, { ':method': 'POST', ':path': '/q', ':authority': 'h', 'content-type': 'application/json' }, Buffer.from(body));
    const { longest } = watch.stop();
    expect(r.headers[':status']).toBe(200);
    expect(counts.replayed).toBe(1);
    // The cost of the same match in one piece, on a matcher of its own: CPU time, as watchTurns
    // measures it, the least of two runs (both after the replay's, so no run pays for cold code).
    const oneMatch = () => {
      const before = process.cpuUsage();
      expect(new HttpMatcher(mocks).match(postRequest('/q', body))).toMatchObject({ miss: false, how: 'json' });
      const spent = process.cpuUsage(before);
      return (spent.user + spent.system) / 1000;
    };
    const whole = Math.min(oneMatch(), oneMatch());
    // The match goes in steps (a mock prepared, STEP_NODES values of a body compared), with a turn
    // of the loop whenever SLICE_MS is spent: the longest turn held 0.1-0.25 of the match in one
    // piece here. Before, the whole match ran in one turn (1.9-2.3 of it here: its code still cold).
    expect(longest / whole, `the longest turn, ${longest.toFixed(0)} ms of CPU, against the whole match's ${whole.toFixed(0)} ms`).toBeLessThan(0.5);
  });
});
