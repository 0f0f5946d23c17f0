import type { Duplex } from 'node:stream';
import { DebugkitError } from '../../../core/errors.js';
import { basicCredential, ProxyAuthError, sameCredential, type ProxyCredential } from './auth.js';
import { peekUntil, readFrame } from './peek.js';

/**
 * The HTTP proxy side: a client configured with HTTP_PROXY sends either `CONNECT host:port` (a
 * tunnel, usually for TLS) or a plain request in absolute form (`GET http://host/path HTTP/1.1`).
 */

export interface HttpTarget {
  host: string;
  port: number;
}

/** A CONNECT is not answered yet: the caller sends `connectEstablished(version)` once it takes the tunnel. */
export type HttpProxyRequest = { kind: 'connect'; target: HttpTarget; version: string } | { kind: 'forward'; target: HttpTarget };

/** A request the proxy refuses, answered with `status` before the connection is closed. */
export class HttpProxyError extends DebugkitError {
  override name = 'HttpProxyError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super('INVALID_ARGUMENT', message);
  }
}

export const MAX_HEAD_BYTES = 16 * 1024;
const MAX_LINE_BYTES = 8 * 1024;
const REASONS: Record<number, string> = { 400: 'Bad Request', 407: 'Proxy Authentication Required', 408: 'Request Timeout', 431: 'Request Header Fields Too Large', 501: 'Not Implemented' };

export interface RequestLine {
  method: string;
  target: string;
  version: string;
}

export function parseRequestLine(line: string): RequestLine {
  const m = /^([A-Za-z][A-Za-z_-]{0,23}) (\S+) (HTTP\/1\.[01])$/.exec(line);
  if (!m) throw new HttpProxyError(400, `not an HTTP/1.x request line: ${JSON.stringify(line.slice(0, 100))}`);
  return { method: m[1]!.toUpperCase(), target: m[2]!, version: m[3]! };
}

/** `host:port`, `[v6]:port` or (with a default port) just the host; the host is lowercased. */
export function parseAuthority(authority: string, defaultPort?: number): HttpTarget | undefined {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:/?#@[\]]+))(?::(\d{1,5}))?$/.exec(authority);
  if (!m) return undefined;
  const port = m[3] === undefined ? defaultPort : Number(m[3]);
  if (port === undefined || port < 1 || port > 65535) return undefined;
  return { host: (m[1] ?? m[2]!).toLowerCase(), port };
}

/**
 * Splits `http://[user@]host[:port][/path?query]` into the target and the origin-form the server
 * expects (`/path?query`). The path is kept byte for byte (no URL normalisation).
 */
export function parseAbsoluteHttpUrl(url: string): { target: HttpTarget; originForm: string } | undefined {
  const m = /^http:\/\/(?:[^@/?#]*@)?([^/?#]+)([/?][^#]*)?(#.*)?$/i.exec(url);
  if (!m) return undefined;
  const target = parseAuthority(m[1]!, 80);
  if (!target) return undefined;
  const rest = m[2] ?? '/';
  return { target, originForm: rest.startsWith('?') ? `/${rest}` : rest };
}

export function sameTarget(a: HttpTarget, b: HttpTarget): boolean {
  return a.host === b.host && a.port === b.port;
}

/** A complete, closing HTTP/1.1 response for a refused request (`extra`: header lines, each ending in CRLF). */
export function errorResponse(status: number, message: string, extra = ''): Buffer {
  const body = `${message}\n`;
  return Buffer.from(
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}\r\n${extra}Content-Type: text/plain; charset=utf-8\r\n` + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** The answer to a CONNECT the proxy takes: the client's bytes after it are the tunnel's. */
export function connectEstablished(version: string): string {
  return `${version} 200 Connection Established\r\n\r\n`;
}

export function headLength(buf: Buffer): number | undefined {
  const end = buf.indexOf('\r\n\r\n');
  return end < 0 ? undefined : end + 4;
}

export interface HttpProxyOptions {
  timeoutMs?: number;
  /** Required in the first request's Proxy-Authorization (Basic); without it none is asked for. */
  credential?: ProxyCredential;
}

const PROXY_AUTHENTICATE = 'Proxy-Authenticate: Basic realm="debugkit capture proxy"\r\n';

/**
 * Reads what a proxy client wants. For CONNECT the request head is consumed (the caller answers it
 * with `connectEstablished`), so the socket then carries the tunnelled bytes. For an absolute-form
 * request nothing is consumed: the caller hands the socket to a ForwardedHttpStream, which
 * rewrites it (and drops Proxy-Authorization, so the credential never reaches a target or a set).
 * A refused request is answered (400, 407, 408, 431, 501) and the socket closed; with a
 * `credential`, anything that fails before the client showed it is a ProxyAuthError.
 */
export async function acceptHttpProxy(socket: Duplex, { timeoutMs = 10_000, credential }: HttpProxyOptions = {}): Promise<HttpProxyRequest> {
  let authenticated = !credential;
  try {
    const line = await peekUntil(socket, (buf, event) => firstLine(buf, event, timeoutMs), { timeoutMs, maxBytes: MAX_LINE_BYTES });
    const req = parseRequestLine(line);
    if (credential) {
      const head = await peekUntil(socket, (buf, event) => wholeHead(buf, event, timeoutMs), { timeoutMs, maxBytes: MAX_HEAD_BYTES });
      const shown = basicCredential(/^proxy-authorization:[ \t]*(.*?)[ \t]*$/im.exec(head)?.[1]);
      if (!shown || !sameCredential(shown, credential)) throw new ProxyAuthError(shown ? "the Proxy-Authorization is not the call's" : 'no Proxy-Authorization (Basic) in the request');
      authenticated = true;
    }
    if (req.method === 'CONNECT') {
      const target = parseAuthority(req.target);
      if (!target) throw new HttpProxyError(400, `CONNECT needs host:port, got ${JSON.stringify(req.target)}`);
      await readFrame(socket, headLength, { timeoutMs, maxBytes: MAX_HEAD_BYTES, what: 'CONNECT request head' });
      return { kind: 'connect', target, version: req.version };
    }
    const absolute = parseAbsoluteHttpUrl(req.target);
    if (absolute) return { kind: 'forward', target: absolute.target };
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(req.target)) {
      throw new HttpProxyError(501, `only http:// URLs can be proxied in plain form (use CONNECT for TLS): ${req.target.slice(0, 100)}`);
    }
    throw new HttpProxyError(400, 'this is a proxy: the request target must be an absolute http:// URL or CONNECT host:port');
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (!authenticated) {
      // The reason is for the log; the client is only told what to send.
      if (socket.writable) socket.end(errorResponse(407, 'this proxy needs the credential it was given in HTTP_PROXY', PROXY_AUTHENTICATE), () => socket.destroy());
      else socket.destroy();
      throw err instanceof ProxyAuthError ? err : new ProxyAuthError(`no credential before the request failed: ${message}`);
    }
    const status = err instanceof HttpProxyError ? err.status : err instanceof DebugkitError && err.code === 'TIMEOUT' ? 408 : 400;
    if (socket.writable) socket.end(errorResponse(status, message), () => socket.destroy());
    else socket.destroy();
    throw err;
  }
}

/** The request head (as Latin-1 text) once complete. */
function wholeHead(buf: Buffer, event: string, timeoutMs: number): string | undefined {
  const length = headLength(buf);
  if (length !== undefined) return buf.toString('latin1', 0, length);
  if (event === 'data') return undefined;
  if (event === 'timeout') throw new HttpProxyError(408, `no complete request head within ${timeoutMs} ms`);
  if (event === 'limit') throw new HttpProxyError(431, `request head longer than ${MAX_HEAD_BYTES} bytes`);
  throw new HttpProxyError(400, 'the client closed before sending a complete request head');
}

function firstLine(buf: Buffer, event: string, timeoutMs: number): string | undefined {
  const eol = buf.indexOf('\r\n');
  if (eol >= 0) return buf.toString('latin1', 0, eol);
  if (event === 'data') return undefined;
  if (event === 'timeout') throw new HttpProxyError(408, `no complete request line within ${timeoutMs} ms`);
  if (event === 'limit') throw new HttpProxyError(431, `request line longer than ${MAX_LINE_BYTES} bytes`);
  throw new HttpProxyError(400, 'the client closed before sending a complete request line');
}
