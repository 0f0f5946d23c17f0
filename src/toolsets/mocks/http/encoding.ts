import zlib from 'node:zlib';

/**
 * Content-Encoding on replay. Keploy (and keploy.ts) stores a compressed response body
 * DECODED while keeping its `Content-Encoding` header, so the stored body cannot be sent as is
 * under that header. On replay:
 * - a body that still decodes with the named codings was stored encoded: sent unchanged;
 * - otherwise it is compressed again when the client accepts the codings (gzip, deflate, br);
 * - otherwise the header is dropped and the body goes out as identity (what the client asked for).
 * An unknown coding (zstd...) is sent as recorded.
 */

const ENCODERS: Record<string, (b: Buffer) => Buffer> = {
  gzip: (b) => zlib.gzipSync(b),
  'x-gzip': (b) => zlib.gzipSync(b),
  deflate: (b) => zlib.deflateSync(b),
  br: (b) => zlib.brotliCompressSync(b),
};

const DECODERS: Record<string, (b: Buffer) => Buffer> = {
  gzip: (b) => zlib.gunzipSync(b),
  'x-gzip': (b) => zlib.gunzipSync(b),
  deflate: (b) => zlib.inflateSync(b),
  br: (b) => zlib.brotliDecompressSync(b),
};

/** Adjusts `headers` (Content-Encoding) and returns the body to send. */
export function encodeForClient(headers: Map<string, string | string[]>, body: Buffer, acceptEncoding: string | undefined): Buffer {
  const key = [...headers.keys()].find((k) => k.toLowerCase() === 'content-encoding');
  if (key === undefined || body.length === 0) return body;
  const codings = String(headers.get(key))
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c && c !== 'identity');
  if (codings.length === 0 || !codings.every((c) => c in ENCODERS)) return body;
  if (decodes(body, codings)) return body;
  if (accepts(acceptEncoding, codings)) return codings.reduce((b, c) => ENCODERS[c]!(b), body);
  headers.delete(key);
  return body;
}

function decodes(body: Buffer, codings: string[]): boolean {
  try {
    [...codings].reverse().reduce((b, c) => DECODERS[c]!(b), body);
    return true;
  } catch {
    return false;
  }
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
