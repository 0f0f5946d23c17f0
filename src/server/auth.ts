import { createHash, timingSafeEqual } from 'node:crypto';
import { isIPv4 } from 'node:net';

/**
 * Compares a presented bearer token with the key in constant time. Both sides are hashed first
 * so the comparison never depends on (or leaks) the key's length.
 */
export function keyMatches(authorization: string | undefined, key: string): boolean {
  if (!authorization || !key) return false;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) return false;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(match[1]!), digest(key));
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

export function isLoopbackHost(host: string): boolean {
  // Only an IPv4 literal in 127/8: a name such as "127.example.com" may resolve anywhere.
  return host === 'localhost' || host === '::1' || (isIPv4(host) && host.startsWith('127.'));
}

/**
 * Host header values a request may carry (DNS-rebinding defence): the loopback names on our
 * port, the bound host, and whatever the operator added.
 */
export function allowedHostHeaders(boundHost: string, port: number, extra: string[]): Set<string> {
  const names = new Set([...LOOPBACK_NAMES, ...extra]);
  if (boundHost !== '0.0.0.0' && boundHost !== '::') names.add(boundHost.includes(':') ? `[${boundHost}]` : boundHost);
  const allowed = new Set<string>();
  for (const name of names) {
    allowed.add(name.toLowerCase());
    allowed.add(`${name.toLowerCase()}:${port}`);
  }
  return allowed;
}

/** An Origin is acceptable when absent (non-browser clients) or when its host is allowed. */
export function originAllowed(origin: string | undefined, allowedHosts: Set<string>): boolean {
  if (origin === undefined) return true;
  try {
    const url = new URL(origin);
    return allowedHosts.has(url.host.toLowerCase());
  } catch {
    return false;
  }
}
