import {
  HttpProxyError,
  MAX_HEAD_BYTES,
  parseAbsoluteHttpUrl,
  parseRequestLine,
  sameTarget,
  type HttpTarget,
} from './http-proxy.js';

/**
 * Turns a plain-proxy connection (absolute-form requests) into what a direct connection to the
 * origin would carry: the same requests in origin form. Bodies are framed (Content-Length,
 * chunked) only to find where the next request head starts; their bytes pass through untouched.
 */

type State =
  | { kind: 'head' }
  | { kind: 'body'; left: number; then: State }
  | { kind: 'chunk-size' }
  | { kind: 'trailer' }
  | { kind: 'raw' };

const MAX_CHUNK_LINE = 4096;
const HOP_BY_HOP_PROXY_HEADERS = new Set(['proxy-connection', 'proxy-authorization']);

export interface FeedResult {
  forward: Buffer[];
  /** A request for another origin: everything from its head on, for a new connection. */
  switchTo?: { target: HttpTarget; rest: Buffer };
  error?: HttpProxyError;
}

/** Incremental request framer and rewriter for one origin. */
export class RequestRewriter {
  private pending: Buffer = Buffer.alloc(0);
  private state: State = { kind: 'head' };

  constructor(readonly target: HttpTarget) {}

  feed(chunk: Buffer): FeedResult {
    let buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = Buffer.alloc(0);
    const forward: Buffer[] = [];
    try {
      while (buf.length > 0) {
        const step = this.step(buf, forward);
        if ('switchTo' in step) return { forward, switchTo: { target: step.switchTo, rest: buf } };
        if (step.consumed === 0) {
          this.pending = buf; // an incomplete head or line: wait for more
          break;
        }
        buf = buf.subarray(step.consumed);
      }
    } catch (err) {
      if (err instanceof HttpProxyError) return { forward, error: err };
      throw err;
    }
    return { forward };
  }

  private step(buf: Buffer, out: Buffer[]): { consumed: number } | { switchTo: HttpTarget } {
    const s = this.state;
    switch (s.kind) {
      case 'raw':
        out.push(buf);
        return { consumed: buf.length };
      case 'body': {
        const n = Math.min(s.left, buf.length);
        out.push(buf.subarray(0, n));
        this.state = s.left === n ? s.then : { ...s, left: s.left - n };
        return { consumed: n };
      }
      case 'chunk-size':
        return this.chunkSize(buf, out);
      case 'trailer':
        return this.trailerLine(buf, out);
      case 'head':
        return this.head(buf, out);
    }
  }

  private head(buf: Buffer, out: Buffer[]): { consumed: number } | { switchTo: HttpTarget } {
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) {
      if (buf.length > MAX_HEAD_BYTES) throw new HttpProxyError(431, `request head longer than ${MAX_HEAD_BYTES} bytes`);
      return { consumed: 0 };
    }
    const lines = buf.toString('latin1', 0, end).split('\r\n');
    const req = parseRequestLine(lines[0]!);
    const absolute = parseAbsoluteHttpUrl(req.target);
    if (req.method === 'CONNECT' || !absolute) {
      throw new HttpProxyError(400, 'after a proxied request, only absolute http:// requests may follow on the same connection');
    }
    if (!sameTarget(absolute.target, this.target)) return { switchTo: absolute.target };
    const headers = lines.slice(1).filter((l) => !HOP_BY_HOP_PROXY_HEADERS.has(headerName(l)));
    if (!headers.some((l) => headerName(l) === 'host')) headers.unshift(`Host: ${hostHeader(this.target)}`);
    const next = bodyState(headers); // may refuse the request: before anything is forwarded
    out.push(Buffer.from([`${req.method} ${absolute.originForm} ${req.version}`, ...headers, '', ''].join('\r\n'), 'latin1'));
    this.state = next;
    return { consumed: end + 4 };
  }

  private chunkSize(buf: Buffer, out: Buffer[]): { consumed: number } {
    const eol = buf.indexOf('\r\n');
    if (eol < 0) {
      if (buf.length > MAX_CHUNK_LINE) throw new HttpProxyError(400, 'chunk size line too long');
      return { consumed: 0 };
    }
    const m = /^([0-9A-Fa-f]{1,12})(;.*)?$/.exec(buf.toString('latin1', 0, eol));
    if (!m) throw new HttpProxyError(400, 'malformed chunk size line');
    const size = parseInt(m[1]!, 16);
    out.push(buf.subarray(0, eol + 2));
    // chunk data is followed by CRLF; a zero-size chunk by optional trailers and an empty line
    this.state = size === 0 ? { kind: 'trailer' } : { kind: 'body', left: size + 2, then: { kind: 'chunk-size' } };
    return { consumed: eol + 2 };
  }

  private trailerLine(buf: Buffer, out: Buffer[]): { consumed: number } {
    const eol = buf.indexOf('\r\n');
    if (eol < 0) {
      if (buf.length > MAX_HEAD_BYTES) throw new HttpProxyError(431, 'trailer section too long');
      return { consumed: 0 };
    }
    out.push(buf.subarray(0, eol + 2));
    if (eol === 0) this.state = { kind: 'head' };
    return { consumed: eol + 2 };
  }
}

function headerName(line: string): string {
  const colon = line.indexOf(':');
  return (colon < 0 ? line : line.slice(0, colon)).trim().toLowerCase();
}

function headerValues(headers: string[], name: string): string[] {
  return headers.filter((l) => headerName(l) === name).map((l) => l.slice(l.indexOf(':') + 1).trim());
}

function hostHeader(t: HttpTarget): string {
  const host = t.host.includes(':') ? `[${t.host}]` : t.host;
  return t.port === 80 ? host : `${host}:${t.port}`;
}

/** RFC 9112 6.3: chunked wins over Content-Length; neither means no body. Upgrades go raw. */
function bodyState(headers: string[]): State {
  const upgrade =
    headerValues(headers, 'upgrade').length > 0 &&
    headerValues(headers, 'connection').some((v) => /(^|,)\s*upgrade\s*(,|$)/i.test(v));
  const after: State = upgrade ? { kind: 'raw' } : { kind: 'head' };
  const te = headerValues(headers, 'transfer-encoding').join(',');
  if (/(^|,)\s*chunked\s*$/i.test(te)) return { kind: 'chunk-size' };
  if (te) throw new HttpProxyError(400, `a request with Transfer-Encoding "${te}" has no determinable length`);
  const lengths = new Set(headerValues(headers, 'content-length').flatMap((v) => v.split(',').map((x) => x.trim())));
  if (lengths.size > 1) throw new HttpProxyError(400, 'conflicting Content-Length headers');
  const [len] = [...lengths];
  if (len === undefined) return after;
  if (!/^\d{1,15}$/.test(len)) throw new HttpProxyError(400, `invalid Content-Length ${JSON.stringify(len)}`);
  const n = Number(len);
  return n === 0 ? after : { kind: 'body', left: n, then: after };
}
