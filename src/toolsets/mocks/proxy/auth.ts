import { randomBytes, timingSafeEqual } from 'node:crypto';
import type net from 'node:net';

/**
 * The credential of one call's capture proxies. The listeners are on loopback, where any local
 * process (another key's program) could otherwise send requests through them: record into the
 * call's set, take its replay mocks, fill its connection cap (attack 18u P6). The program is
 * handed it in ALL_PROXY, HTTP(S)_PROXY and its proxychains config; nothing else knows it.
 */
export interface ProxyCredential {
  user: string;
  password: string;
}

/** A fresh credential: 144 random bits, in characters that need no escaping in a URL or a proxychains config line. */
export function newProxyCredential(): ProxyCredential {
  return { user: 'debugkit', password: randomBytes(18).toString('base64url') };
}

/** Whether `got` is `want`, in time that does not depend on where they differ. */
export function sameCredential(got: ProxyCredential, want: ProxyCredential): boolean {
  const a = Buffer.from(`${got.user}\0${got.password}`);
  const b = Buffer.from(`${want.user}\0${want.password}`);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The credential in a `Proxy-Authorization: Basic <base64 user:password>` value; undefined for anything else. */
export function basicCredential(value: string | undefined): ProxyCredential | undefined {
  const m = /^\s*basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(value ?? '');
  if (!m) return undefined;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon < 0 ? undefined : { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

/** A connection that did not present the call's credential: refused before any cap counts it. */
export class ProxyAuthError extends Error {
  override name = 'ProxyAuthError';
}

/**
 * Connections still in their handshake, before they showed a credential, across all proxies: they
 * count against no call's caps (a stranger must not fill them), but each holds a descriptor, so
 * their number is bounded. Past it the oldest is closed, not the new one: a real client sends its
 * credential in its first bytes and is through in well under a millisecond, so a flood of silent
 * ones only pushes out its own.
 */
export class PendingHandshakes {
  /** Insertion order is age: the first is the oldest. */
  private readonly sockets = new Set<net.Socket>();

  constructor(readonly max: number) {}

  /** Holds `socket`, closing the oldest held first when at `max` (its handshake then fails as any closed one does). */
  add(socket: net.Socket): void {
    for (const oldest of this.sockets) {
      if (this.sockets.size < this.max) break;
      this.sockets.delete(oldest);
      oldest.destroy();
    }
    this.sockets.add(socket);
  }

  /** The handshake ended (authenticated, refused or closed). */
  delete(socket: net.Socket): void {
    this.sockets.delete(socket);
  }

  get size(): number {
    return this.sockets.size;
  }
}
