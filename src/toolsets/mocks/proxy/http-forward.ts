import { headerValue, HttpParser, type HttpMessage } from '../http/wire.js';
import { HttpProxyError, MAX_HEAD_BYTES, parseAbsoluteHttpUrl, sameTarget, type HttpTarget } from './http-proxy.js';

/**
 * Turns a plain-proxy connection (absolute-form requests) into what a direct connection to the
 * origin would carry: the same requests in origin form. The framing (Content-Length, chunked,
 * trailers, pipelining, Upgrade, limits, errors) is the recorder's HTTP/1 parser's
 * (http/wire.ts), which reports where each request head lies in the stream; only those bytes
 * are rewritten, everything between them passes through untouched and uncopied.
 */

const HOP_BY_HOP_PROXY_HEADERS = new Set(['proxy-connection', 'proxy-authorization']);

export interface FeedResult {
  forward: Buffer[];
  /** A request for another origin: everything from its head on, for a new connection. */
  switchTo?: { target: HttpTarget; rest: Buffer };
  error?: HttpProxyError;
}

/** Incremental request rewriter for one origin. */
export class RequestRewriter {
  private readonly parser: HttpParser;
  /** Stream offsets: bytes fed so far, and up to where they were forwarded or replaced. */
  private fed = 0;
  private done = 0;
  /** The bytes of an unfinished head, from the parser's headStart (they are forwarded rewritten). */
  private held: Buffer[] = [];
  private heldFrom = 0;
  /** A rewritten head, forwarded once its body framing is known to be valid. */
  private head: Buffer | undefined;
  /** From this offset on the connection carries another protocol: bytes pass as they are. */
  private rawFrom: number | undefined;
  private upgradeNext = false;
  private out: Buffer[] = [];
  private chunk: Buffer = Buffer.alloc(0);
  private chunkFrom = 0;
  private switchTo: FeedResult['switchTo'];
  private error: HttpProxyError | undefined;

  constructor(readonly target: HttpTarget) {
    this.parser = new HttpParser(
      'request',
      {
        onHead: (m, at) => this.onHead(m, at.start, at.end),
        onMessage: () => this.onMessage(),
        onStop: (state, reason) => {
          if (state !== 'not-http' || this.error || this.switchTo) return;
          this.head = undefined; // nothing of a refused request is forwarded
          this.error = new HttpProxyError(this.parser.stoppedAtLimit ? 431 : 400, reason);
        },
      },
      { maxBodyBytes: 0, maxHeadBytes: MAX_HEAD_BYTES },
    );
  }

  feed(chunk: Buffer): FeedResult {
    this.out = [];
    if (this.rawFrom !== undefined) {
      this.fed += chunk.length;
      this.done = this.fed;
      return { forward: chunk.length > 0 ? [chunk] : [] };
    }
    this.chunk = chunk;
    this.chunkFrom = this.fed;
    this.fed += chunk.length;
    this.parser.push(chunk);
    // An Upgrade request without `Connection: upgrade` switches nothing: the parser goes on.
    while (this.parser.state === 'held' && this.rawFrom === undefined) this.parser.resume();
    const forward = this.out;
    if (this.error) return { forward, error: this.error };
    if (this.switchTo) return { forward, switchTo: this.switchTo };
    this.flushHead();
    const headStart = this.rawFrom === undefined ? this.parser.headStart : undefined;
    this.pass(headStart ?? this.fed);
    if (headStart !== undefined) {
      if (this.held.length === 0) this.heldFrom = headStart;
      if (this.heldFrom < this.chunkFrom) this.held.push(chunk);
      else this.held.push(chunk.subarray(headStart - this.chunkFrom));
    } else {
      this.held = [];
    }
    return { forward };
  }

  /** Forwards the fed bytes [done, to) as they are. */
  private pass(to: number): void {
    if (to <= this.done) return;
    const from = Math.max(this.done, this.chunkFrom);
    this.out.push(this.chunk.subarray(from - this.chunkFrom, to - this.chunkFrom));
    this.done = to;
  }

  private flushHead(): void {
    if (this.head) this.out.push(this.head);
    this.head = undefined;
  }

  private onHead(m: HttpMessage, start: number, end: number): void {
    if (m.kind !== 'request' || this.error || this.switchTo) return;
    this.flushHead();
    this.pass(start);
    const absolute = parseAbsoluteHttpUrl(m.target);
    if (m.method === 'CONNECT' || !absolute) {
      return this.refuse(new HttpProxyError(400, 'after a proxied request, only absolute http:// requests may follow on the same connection'));
    }
    const bytes = this.bytes(start, end);
    if (!sameTarget(absolute.target, this.target)) {
      this.switchTo = { target: absolute.target, rest: Buffer.concat([bytes, this.chunk.subarray(end - this.chunkFrom)]) };
      this.parser.stop('ended', 'the client turned to another origin');
      return;
    }
    const proxyHeaders = [...HOP_BY_HOP_PROXY_HEADERS].some((name) => headerValue(m.headers, name) !== undefined);
    const requestLine = `${m.method} ${absolute.originForm} HTTP/${m.httpVersion}`;
    this.head = rewriteHead(bytes.toString('latin1'), requestLine, headerValue(m.headers, 'host') === undefined ? this.target : undefined, proxyHeaders);
    this.done = end;
    this.held = [];
    this.upgradeNext = headerValue(m.headers, 'upgrade') !== undefined && /(^|,)\s*upgrade\s*(,|$)/i.test(headerValue(m.headers, 'connection') ?? '');
  }

  /** A request ended: after one that switched protocols, the rest of the connection is not HTTP. */
  private onMessage(): void {
    if (!this.upgradeNext || this.error || this.switchTo) return;
    this.flushHead();
    this.rawFrom = this.done;
    this.parser.stop('upgraded', 'the client asked to switch protocols');
  }

  private refuse(err: HttpProxyError): void {
    this.error = err;
    this.parser.stop('not-http', err.message);
  }

  /** The fed bytes [start, end): held pieces of an unfinished head, then the current chunk. */
  private bytes(start: number, end: number): Buffer {
    if (start >= this.chunkFrom) return this.chunk.subarray(start - this.chunkFrom, end - this.chunkFrom);
    const pieces = [...this.held, this.chunk.subarray(0, end - this.chunkFrom)];
    return Buffer.concat(pieces).subarray(start - this.heldFrom);
  }
}

/**
 * The head in origin form: the request line replaced, the proxy's own headers (and their obs-fold
 * continuations) dropped, a Host header for `addHost` added when the client sent none; every other
 * line kept byte for byte (Latin-1 round-trips any byte).
 */
function rewriteHead(text: string, requestLine: string, addHost: HttpTarget | undefined, proxyHeaders: boolean): Buffer {
  const host = addHost ? `Host: ${hostHeader(addHost)}\r\n` : '';
  if (!proxyHeaders) {
    // The usual case: only the request line changes (after any empty lines before it).
    let from = 0;
    while (text[from] === '\r' || text[from] === '\n') from++;
    return Buffer.from(`${requestLine}\r\n${host}${text.slice(text.indexOf('\n', from) + 1)}`, 'latin1');
  }
  const lines = text.split(/\r?\n/);
  while (lines.length > 0 && lines[0] === '') lines.shift(); // empty lines before the request line
  const kept: string[] = [];
  let dropping = false;
  for (const line of lines.slice(1)) {
    if (line === '') break;
    if (line[0] === ' ' || line[0] === '\t') {
      if (!dropping) kept.push(line);
      continue;
    }
    const name = line.slice(0, line.indexOf(':')).toLowerCase();
    dropping = HOP_BY_HOP_PROXY_HEADERS.has(name);
    if (!dropping) kept.push(line);
  }
  return Buffer.from(`${requestLine}\r\n${host}${kept.map((line) => `${line}\r\n`).join('')}\r\n`, 'latin1');
}

function hostHeader(t: HttpTarget): string {
  const host = t.host.includes(':') ? `[${t.host}]` : t.host;
  return t.port === 80 ? host : `${host}:${t.port}`;
}
