import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { MAX_MOCK_EXCHANGE_BYTES } from '../protocol.js';

/**
 * Content-Encoding, the one home of it: decoding a recorded body (keploy.ts) and answering a
 * client on replay. Keploy (and keploy.ts) stores a compressed response body DECODED while keeping
 * its `Content-Encoding` header, so the stored body cannot be sent as is under that header. On replay:
 * - a body that still decodes with the named codings was stored encoded: sent unchanged;
 * - otherwise it is compressed again when the client accepts the codings (gzip, deflate, br);
 * - otherwise the header is dropped and the body goes out as identity (what the client asked for).
 * An unknown coding (zstd...) is sent as recorded.
 *
 * Bounds: a few KB of gzip-of-gzip inflate to gigabytes (attack 18r: 9-30 s of a held loop and
 * 6 GB while recording). Each decoding step stops at MAX_DECODED_BYTES and a body names at most
 * MAX_CODINGS codings; past either it is "over": recorded as it came, still encoded (keploy.ts
 * marks it `body_encoded`), and sent unchanged on replay. So a decode is at most a few ms of the
 * loop (it stays synchronous: mocks are built synchronously, in order, as the traffic goes by), and
 * its answer on replay is worked out once per mock.
 */

/** What one decoding step may produce: a body that decodes to more is kept encoded. */
export const MAX_DECODED_BYTES = MAX_MOCK_EXCHANGE_BYTES;
/** More codings than this in one Content-Encoding is no real server's: kept encoded. */
export const MAX_CODINGS = 4;
/** Brotli's default (11) spent 1.5-2.7 s on each 1.5 MiB answer; 4 compresses about as well as gzip, in milliseconds. */
const BROTLI_QUALITY = 4;

const bounded = { maxOutputLength: MAX_DECODED_BYTES };
const gunzip = (b: Buffer) => zlib.gunzipSync(b, bounded);
const DECODERS: Record<string, (b: Buffer) => Buffer> = {
  gzip: gunzip,
  'x-gzip': gunzip,
  deflate: inflate,
  br: (b) => zlib.brotliDecompressSync(b, bounded),
};

const gzip = promisify(zlib.gzip);
const brotli = promisify(zlib.brotliCompress);
const ENCODERS: Record<string, (b: Buffer) => Promise<Buffer>> = {
  gzip: (b) => gzip(b),
  'x-gzip': (b) => gzip(b),
  deflate: promisify(zlib.deflate),
  br: (b) => brotli(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: b.length } }),
};

/** `deflate` is zlib-wrapped by the standard, raw in practice from some servers. */
function inflate(b: Buffer): Buffer {
  try {
    return zlib.inflateSync(b, bounded);
  } catch (err) {
    if (isOver(err)) throw err;
    return zlib.inflateRawSync(b, bounded);
  }
}

const isOver = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';

/** The codings of a Content-Encoding value, in the order they were applied (`identity` left out). */
export function codingsOf(value: string): string[] {
  return value
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c && c !== 'identity');
}

/**
 * `bytes` decoded per `codings`: the decoded bytes, `over` when decoding would pass the bounds
 * (MAX_DECODED_BYTES a step, MAX_CODINGS), or null when the bytes are not so encoded (or a
 * coding is unknown).
 */
export function decodeBody(bytes: Uint8Array, codings: readonly string[]): Buffer | 'over' | null {
  if (bytes.byteLength === 0 || codings.length === 0 || !codings.every((c) => c in DECODERS)) return null;
  if (codings.length > MAX_CODINGS) return 'over';
  let out = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  try {
    for (const c of [...codings].reverse()) out = DECODERS[c]!(out);
    return out;
  } catch (err) {
    return isOver(err) ? 'over' : null;
  }
}

/** Per stored response (its object): whether the body is still encoded, and the body compressed again, once. */
interface Answer {
  encoded: boolean;
  compressed?: Promise<Buffer>;
}
const ANSWERS = new WeakMap<object, Answer>();

/**
 * Adjusts `headers` (Content-Encoding) and returns the body to send; `stored` (the mock's
 * response) keys what is worked out once. Compression runs on the thread pool, never on the loop.
 */
export async function encodeForClient(headers: Map<string, string | string[]>, body: Buffer, acceptEncoding: string | undefined, stored: object): Promise<Buffer> {
  const key = [...headers.keys()].find((k) => k.toLowerCase() === 'content-encoding');
  if (key === undefined || body.length === 0) return body;
  const codings = codingsOf(String(headers.get(key)));
  if (codings.length === 0 || !codings.every((c) => c in ENCODERS)) return body;
  let answer = ANSWERS.get(stored);
  if (!answer) ANSWERS.set(stored, (answer = { encoded: decodeBody(body, codings) !== null }));
  if (answer.encoded) return body;
  if (accepts(acceptEncoding, codings)) return (answer.compressed ??= codings.reduce((b, c) => b.then(ENCODERS[c]!), Promise.resolve(body)));
  headers.delete(key);
  return body;
}

/**
 * Whether Accept-Encoding allows every coding. No header counts as identity only: in practice a
 * client that sends none (curl without --compressed) does not decode.
 */
export function accepts(acceptEncoding: string | undefined, codings: string[]): boolean {
  if (!acceptEncoding) return false;
  const allowed = new Map<string, number>();
  for (const item of acceptEncoding.split(',')) {
    const [name, ...params] = item.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    allowed.set(name!, q ? Number(q.slice(2)) : 1);
  }
  const ok = (c: string) => {
    const q = allowed.get(c) ?? allowed.get(c === 'x-gzip' ? 'gzip' : c) ?? allowed.get('*');
    return q !== undefined && q > 0;
  };
  return codings.every(ok);
}
