import net from 'node:net';
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { longestBlock } from '../../../../test/helpers/stall.js';
import { buildHttpMock, type HttpExchange } from './keploy.js';
import { decodeBody, encodeForClient, MAX_CODINGS, MAX_DECODED_BYTES } from './encoding.js';
import { HttpMatcher } from './matcher.js';
import { HttpReplayer } from './replayer.js';
import { closeServer, fetchVia, listen } from './test-support.js';

// Attack 18r K1/K2: compressed bodies that inflate without bound, and brotli at quality 11 on every answer.

const MiB = 1024 * 1024;
/** A gzip of a gzip that inflates to 1.1 GiB of 'a' (gunzip reads concatenated members): a few KB. */
const BOMB = zlib.gzipSync(Buffer.concat(Array<Buffer>(1100).fill(zlib.gzipSync(Buffer.alloc(MiB, 'a')))), { level: 9 });

const exchange = (body: Buffer, encoding: string): HttpExchange => ({
  method: 'GET',
  url: 'http://localhost:1/data',
  host: 'localhost:1',
  requestHeaders: [['Host', 'localhost:1']],
  statusCode: 200,
  responseHeaders: [
    ['Content-Type', 'text/plain'],
    ['Content-Encoding', encoding],
  ],
  responseBody: body,
  requestTime: new Date(),
  responseTime: new Date(),
});

/** The longest the loop was held (ms) and how much the resident memory grew (MiB) while `work` ran. */
async function cost<T>(work: () => T): Promise<{ longest: number; grewMiB: number; value: T }> {
  const before = process.memoryUsage().rss;
  const { longest, value } = await longestBlock(async () => work());
  return { longest, grewMiB: (process.memoryUsage().rss - before) / MiB, value };
}

describe('decodeBody', () => {
  it('decodes what it can within the bounds, and says "over" past them', () => {
    expect(BOMB.length).toBeLessThan(16 * 1024);
    const text = Buffer.from('{"ok":true}');
    expect(decodeBody(zlib.gzipSync(zlib.brotliCompressSync(text)), ['br', 'gzip'])?.toString()).toBe('{"ok":true}');
    expect(decodeBody(zlib.deflateRawSync(text), ['deflate'])?.toString()).toBe('{"ok":true}');
    expect(decodeBody(BOMB, ['gzip', 'gzip'])).toBe('over');
    expect(decodeBody(zlib.gzipSync(Buffer.alloc(MAX_DECODED_BYTES + 1)), ['gzip'])).toBe('over');
    expect(decodeBody(zlib.gzipSync(Buffer.alloc(MAX_DECODED_BYTES)), ['gzip'])?.length).toBe(MAX_DECODED_BYTES);
    expect(
      decodeBody(
        text,
        Array.from({ length: MAX_CODINGS + 1 }, () => 'gzip'),
      ),
    ).toBe('over');
    expect(decodeBody(text, ['gzip'])).toBeNull();
    expect(decodeBody(text, ['zstd'])).toBeNull();
  });
});

describe('recording a decompression bomb (K1)', () => {
  it('keeps a gzip-of-gzip bomb as received, marked, without holding the loop or the memory', async () => {
    const ordinary = await cost(() => buildHttpMock(exchange(zlib.gzipSync(Buffer.alloc(64 * 1024, 'b')), 'gzip')));
    expect(ordinary.value.spec.resp.body).toBe('b'.repeat(64 * 1024));
    const bomb = await cost(() => buildHttpMock(exchange(BOMB, 'gzip, gzip')));
    const resp = bomb.value.spec.resp;
    expect(Buffer.from(resp.body as Uint8Array).equals(BOMB)).toBe(true);
    expect(resp.header['Content-Encoding']).toBe('gzip, gzip');
    expect(resp.extra?.body_encoded).toMatch(/decodes to more than 1048576 bytes/);
    // The old code inflated 1.1 GiB here: seconds of a held loop and a gigabyte more.
    expect(bomb.grewMiB).toBeLessThan(64);
    expect(bomb.longest, `bomb ${bomb.longest.toFixed(1)} ms, ordinary body ${ordinary.longest.toFixed(1)} ms`).toBeLessThan(Math.max(10 * ordinary.longest, ordinary.longest + 100));
  });
});

describe('replaying compressed answers (K2)', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  /** A replayer for `mock` on a local port (plain HTTP, as an intercepted connection). */
  async function replaying(mock: ReturnType<typeof buildHttpMock>): Promise<number> {
    const replayer = new HttpReplayer({ matcher: new HttpMatcher([mock]) });
    const server = net.createServer((socket) => void replayer.serve({ target: { host: 'localhost', port: 1 }, client: socket }, { scheme: 'http' }));
    const port = await listen(server);
    closers.push(() => closeServer(server));
    return port;
  }

  it('sends a stored bomb unchanged, without inflating it', async () => {
    const headers = new Map<string, string | string[]>([['Content-Encoding', 'gzip, gzip']]);
    const sent = await cost(() => encodeForClient(headers, BOMB, 'gzip', {}));
    expect((await sent.value).equals(BOMB)).toBe(true);
    expect(headers.get('Content-Encoding')).toBe('gzip, gzip');
    expect(sent.grewMiB).toBeLessThan(64);
  });

  it('compresses a stored (decoded) body for a br client off the loop, once per mock', async () => {
    // 1.5 MiB of random letters, as a recording of Keploy's keeps it (decoded, Content-Encoding: br).
    const text = Buffer.from(randomBytes(1.5 * MiB).map((b) => 97 + (b % 26)));
    const mock = buildHttpMock(exchange(text, 'br'), { decodeContentEncoding: false });
    const port = await replaying(mock);
    const get = (headers: Record<string, string>) => fetchVia({ port, host: 'localhost:1', path: '/data', headers });
    const identity = await longestBlock(() => get({}));
    expect(identity.value.body.equals(text)).toBe(true);
    const br = await longestBlock(() => get({ 'Accept-Encoding': 'gzip, br' }));
    expect(br.value.headers).toContainEqual(['Content-Encoding', 'br']);
    expect(zlib.brotliDecompressSync(br.value.body).equals(text)).toBe(true);
    // Quality 11 on the loop held it 1.5-2.7 s for this body.
    expect(br.longest, `br answer held the loop ${br.longest.toFixed(1)} ms, identity ${identity.longest.toFixed(1)} ms`).toBeLessThan(Math.max(5 * identity.longest, identity.longest + 100));
    const again = await get({ 'Accept-Encoding': 'br' });
    expect(again.body.equals(br.value.body)).toBe(true);
  });
});
