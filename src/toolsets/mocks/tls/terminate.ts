import { readFileSync } from 'node:fs';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { onceBounded } from '../../../core/wait.js';
import { SYSTEM_BUNDLE, type DebugkitCa } from './ca.js';

/**
 * TLS termination for an intercepted connection: debugkit answers the program's ClientHello with
 * a leaf certificate from its CA, and (when recording) opens its own verified TLS connection to
 * the real server. In between, the traffic is plaintext HTTP/1.1.
 *
 * ALPN: by default only `http/1.1` is offered, to the program and to the server. With `h2`, the
 * program may get HTTP/2: when recording, the server is offered what the program offered (of h2
 * and http/1.1) and the program then gets exactly what the server chose, so both sides always
 * speak the same protocol; in pure replay the program is offered h2 first, then http/1.1.
 */

export const ALPN = ['http/1.1'];
const H2_ALPN = ['h2', 'http/1.1'];

export interface UpstreamTlsOptions {
  /** Skip verifying the server certificate (self-signed staging servers). Default false. */
  insecure?: boolean;
  /** Trust these CAs (PEM) instead of the system's; tests use their own throwaway CA. */
  ca?: string | string[];
  connectTimeoutMs?: number;
  /** Connect somewhere else than the target (the TLS name stays the target's). */
  to?: { host: string; port: number };
  /** ALPN protocols to offer the server (default `http/1.1` only). */
  alpn?: string[];
  /** Start TLS over this connection already open to the server (MySQL's SSLRequest) instead of connecting. */
  over?: Duplex;
}

export interface TerminateOptions {
  ca: DebugkitCa;
  /** Open the verified upstream connection too (recording, fallback); omitted for pure replay. */
  upstream?: UpstreamTlsOptions;
  handshakeTimeoutMs?: number;
  /** May the program get HTTP/2 (ALPN h2)? Default false: http/1.1 only. */
  h2?: boolean;
}

export interface TerminatedTls {
  /** The program's side, decrypted. */
  client: tls.TLSSocket;
  /** The real server's side, decrypted (only when `upstream` was asked for). */
  upstream?: tls.TLSSocket;
  /** The name the leaf was issued for: the SNI, else the target host (often an IP). */
  serverName: string;
  /** The protocol agreed with the program (`h2`, `http/1.1`), false without ALPN. */
  alpn: string | false;
}

export interface InterceptedTls {
  target: { host: string; port: number };
  sni?: string;
  /** The ALPN protocols its ClientHello offers. */
  alpn?: string[];
  /** Its unread first bytes are the ClientHello. */
  client: Duplex;
}

/**
 * Terminates the program's TLS. When an upstream is asked for it is connected and verified FIRST:
 * a server that is down or presents a bad certificate then fails the program's handshake too,
 * instead of the program seeing a working connection that dies on its first request.
 */
export async function terminateTls(conn: InterceptedTls, options: TerminateOptions): Promise<TerminatedTls> {
  const serverName = conn.sni ?? conn.target.host;
  let upstream: tls.TLSSocket | undefined;
  const wantsH2 = options.h2 === true && (conn.alpn ?? []).includes('h2');
  let offer = wantsH2 ? H2_ALPN : ALPN;
  if (options.upstream) {
    try {
      const alpn = wantsH2 ? (conn.alpn ?? []).filter((p) => H2_ALPN.includes(p)) : ALPN;
      upstream = await connectUpstream(conn.target, conn.sni, { ...options.upstream, alpn });
      // Until the caller pipes it: an error (the server resetting while the program's handshake
      // is awaited) must not go unhandled; the socket is destroyed and the caller sees it closed.
      const early = () => upstream?.destroy();
      upstream.on('error', early);
      // The program gets exactly what the server chose (an ALPN-less server: http/1.1, as before).
      offer = upstream.alpnProtocol === 'h2' ? ['h2'] : ALPN;
    } catch (err) {
      conn.client.destroy();
      throw err;
    }
  }
  try {
    const client = await acceptClient(conn.client, options.ca.secureContextFor(serverName), options.handshakeTimeoutMs ?? 10_000, offer);
    const alpn = client.alpnProtocol ?? false;
    return upstream ? { client, upstream, serverName, alpn } : { client, serverName, alpn };
  } catch (err) {
    upstream?.destroy();
    conn.client.destroy();
    throw err;
  }
}

/**
 * TLS as the server over a connection the program already opened (MySQL after its SSLRequest):
 * the leaf is issued for the SNI the program sends, else for `host`. No ALPN.
 */
export function acceptTls(raw: Duplex, ca: DebugkitCa, host: string, timeoutMs = 10_000): Promise<tls.TLSSocket> {
  const socket = new tls.TLSSocket(raw, {
    isServer: true,
    secureContext: ca.secureContextFor(host),
    SNICallback: (name, done) => {
      try {
        done(null, ca.secureContextFor(name));
      } catch (err) {
        done(err as Error);
      }
    },
  });
  return settle(socket, 'secure', timeoutMs, 'the program’s TLS handshake');
}

function acceptClient(raw: Duplex, secureContext: tls.SecureContext, timeoutMs: number, alpn: string[]): Promise<tls.TLSSocket> {
  // TLSSocket feeds bytes already buffered in `raw` (the sniffed ClientHello) to OpenSSL first.
  const socket = new tls.TLSSocket(raw, { isServer: true, secureContext, ALPNProtocols: alpn });
  return settle(socket, 'secure', timeoutMs, 'the program’s TLS handshake');
}

/** A verified TLS connection to the target, speaking HTTP/1.1 (or what `options.alpn` offers). */
export function connectUpstream(target: { host: string; port: number }, sni: string | undefined, options: UpstreamTlsOptions = {}): Promise<tls.TLSSocket> {
  const dest = options.to ?? target;
  const name = sni ?? target.host;
  // allowHalfOpen is honored by tls.connect (passed to its TLSSocket) but missing from the types.
  const connectOptions: tls.ConnectionOptions & { allowHalfOpen: boolean } = {
    ...(options.over ? { socket: options.over } : { host: dest.host, port: dest.port }),
    // RFC 6066 forbids IP addresses as SNI; the certificate is then checked against the IP.
    servername: net.isIP(name) ? undefined : name,
    checkServerIdentity: (_host, cert) => tls.checkServerIdentity(name, cert),
    ALPNProtocols: options.alpn ?? ALPN,
    rejectUnauthorized: !options.insecure,
    secureContext: upstreamSecureContext(options.ca),
    allowHalfOpen: true,
  };
  const socket = tls.connect(connectOptions);
  if (!options.over) socket.setNoDelay(true);
  return settle(socket, 'secureConnect', options.connectTimeoutMs ?? 10_000, `TLS to ${name}:${target.port}`);
}

let systemContext: tls.SecureContext | undefined;

/**
 * "The system CAs": Node's built-in Mozilla roots plus the distribution bundle (which carries
 * locally added corporate roots). Built once: a context with ~150 roots costs milliseconds.
 */
export function upstreamSecureContext(ca: string | string[] | undefined): tls.SecureContext {
  if (ca !== undefined) return tls.createSecureContext({ ca });
  if (!systemContext) {
    const roots: string[] = [...tls.rootCertificates];
    try {
      roots.push(readFileSync(SYSTEM_BUNDLE, 'utf8'));
    } catch {
      /* no distribution bundle: Node's roots alone */
    }
    systemContext = tls.createSecureContext({ ca: roots });
  }
  return systemContext;
}

/** Resolves on `event`, rejects on error, close or timeout (destroying the socket). */
async function settle(socket: tls.TLSSocket, event: 'secure' | 'secureConnect', timeoutMs: number, what: string): Promise<tls.TLSSocket> {
  const outcome = await onceBounded(socket, event, { timeoutMs, keepAlive: true });
  if (outcome.kind === 'value') return socket;
  socket.destroy();
  if (outcome.kind === 'error') throw new Error(`${what} failed: ${outcome.error.message}`, { cause: outcome.error });
  throw new Error(outcome.kind === 'closed' ? `${what} failed: the connection closed` : `${what} took over ${timeoutMs} ms`);
}
