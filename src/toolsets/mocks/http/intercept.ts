import type { Duplex } from 'node:stream';
import type { DebugkitCa } from '../tls/ca.js';
import { terminateTls, type UpstreamTlsOptions } from '../tls/terminate.js';
import { recordHttp, type RecordHttpOptions, type RecordHttpResult } from './recorder.js';
import type { HttpReplayer } from './replayer.js';

/**
 * The glue between the capture proxy's handler and this folder: an intercepted connection whose
 * protocol is `http` or `tls` is recorded or replayed here (TLS terminated with a debugkit leaf
 * first). Other protocols are not HTTP's business: the caller tunnels them or hands them on.
 */

/** The part of proxy/proxy.ts's InterceptedConnection used here (structurally compatible). */
export interface HttpCandidate {
  id: string;
  target: { host: string; port: number };
  protocol: string;
  sni?: string;
  alpn?: string[];
  client: Duplex;
}

/** An intercepted TLS connection on which the program and debugkit agreed on HTTP/2 (ALPN h2). */
export interface H2OverTls {
  id: string;
  target: { host: string; port: number };
  /** The program's side, decrypted. */
  client: Duplex;
  /** The real server's side, decrypted, speaking h2 (recording only). */
  upstream?: Duplex;
  serverName: string;
}

export function isHttpCandidate(conn: HttpCandidate): boolean {
  return conn.protocol === 'http' || conn.protocol === 'tls';
}

export interface RecordInterceptedOptions extends Omit<RecordHttpOptions, 'upstream' | 'scheme'> {
  ca: DebugkitCa;
  /** Do not verify the real server's certificate. */
  insecureUpstream?: boolean;
  /** Trust these CAs for the real server instead of the system's (tests). */
  upstreamCa?: string | string[];
  /** Reach the real server somewhere else (tests); TLS names stay the target's. */
  upstreamTo?: { host: string; port: number };
  /** Records a connection that negotiated HTTP/2; without it only http/1.1 is offered. */
  h2?: (conn: H2OverTls) => Promise<void>;
}

/** Records an intercepted `http` or `tls` connection; a TLS setup failure comes back as `error`. */
export async function recordIntercepted(conn: HttpCandidate, options: RecordInterceptedOptions): Promise<RecordHttpResult> {
  const { ca, insecureUpstream, upstreamCa, upstreamTo, h2, ...rest } = options;
  if (conn.protocol === 'http') {
    return recordHttp(conn, { ...rest, scheme: 'http', ...(upstreamTo ? { connectTo: upstreamTo } : {}) });
  }
  if (conn.protocol !== 'tls') throw new Error(`recordIntercepted: ${conn.protocol} is not HTTP`);
  const upstream: UpstreamTlsOptions = { insecure: insecureUpstream, ...(upstreamCa ? { ca: upstreamCa } : {}), ...(upstreamTo ? { to: upstreamTo } : {}) };
  try {
    const t = await terminateTls(conn, { ca, upstream, h2: h2 !== undefined });
    if (t.alpn === 'h2' && h2) {
      t.client.on('error', () => {});
      await h2({ id: conn.id, target: conn.target, client: t.client, ...(t.upstream ? { upstream: t.upstream } : {}), serverName: t.serverName });
      return { mocks: 0, bytesUp: 0, bytesDown: 0 };
    }
    return await recordHttp({ id: conn.id, target: conn.target, client: t.client }, { ...rest, upstream: t.upstream, scheme: 'https' });
  } catch (err) {
    return { mocks: 0, bytesUp: 0, bytesDown: 0, error: err as Error };
  }
}

/** Serves an intercepted `http` or `tls` connection from the replayer's mocks. */
export async function replayIntercepted(conn: HttpCandidate, replayer: HttpReplayer, options: { ca: DebugkitCa; h2?: (conn: H2OverTls) => Promise<void> }): Promise<void> {
  if (conn.protocol === 'http') return replayer.serve(conn, { scheme: 'http' });
  if (conn.protocol !== 'tls') throw new Error(`replayIntercepted: ${conn.protocol} is not HTTP`);
  const t = await terminateTls(conn, { ca: options.ca, h2: options.h2 !== undefined });
  t.client.on('error', () => {});
  if (t.alpn === 'h2' && options.h2) return options.h2({ id: conn.id, target: conn.target, client: t.client, serverName: t.serverName });
  return replayer.serve({ target: conn.target, client: t.client }, { scheme: 'https', serverName: t.serverName });
}
