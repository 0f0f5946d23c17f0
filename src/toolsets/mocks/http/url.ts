import net from 'node:net';

/** URL pieces shared by the recorder (building `url`), the matcher and the replayer (comparing it). */

export type Scheme = 'http' | 'https';

export function defaultPort(scheme: Scheme): number {
  return scheme === 'https' ? 443 : 80;
}

/**
 * `host[:port]` as a client would write it in Host for this target: IPv6 in brackets, the port
 * left out when it is the scheme's default.
 */
export function authorityOf(scheme: Scheme, target: { host: string; port: number }): string {
  const host = net.isIP(target.host) === 6 ? `[${target.host}]` : target.host;
  return target.port === defaultPort(scheme) ? host : `${host}:${target.port}`;
}

/**
 * The full URL Keploy's `url` field holds here: `scheme://authority/path?query`. An absolute-form
 * target (sent to a proxy) is already one. Keploy's own recorder writes only the target
 * (`/path?query`); Keploy's matcher parses `url` and compares its path, so both forms replay.
 */
export function fullUrl(scheme: Scheme, authority: string, target: string): string {
  if (/^https?:\/\//i.test(target)) return target;
  if (!target.startsWith('/')) return target; // `*` (OPTIONS *), authority-form: no URL to build
  return `${scheme}://${authority}${target}`;
}

export interface UrlParts {
  scheme?: Scheme;
  /** Lower-cased `host:port` (port always present when the scheme is known), or undefined. */
  hostPort?: string;
  path: string;
  /** The raw query without `?` ('' when none). */
  query: string;
}

/** Splits a full URL or an origin-form target without normalizing the path (exact comparison). */
export function splitUrl(url: string, fallbackAuthority?: string, fallbackScheme?: Scheme): UrlParts {
  let rest = url;
  let scheme = fallbackScheme;
  let authority = fallbackAuthority;
  const abs = /^(https?):\/\/([^/?#]*)/i.exec(url);
  if (abs) {
    scheme = abs[1]!.toLowerCase() as Scheme;
    authority = abs[2]!;
    rest = url.slice(abs[0].length);
  }
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  const q = rest.indexOf('?');
  const path = (q >= 0 ? rest.slice(0, q) : rest) || '/';
  const query = q >= 0 ? rest.slice(q + 1) : '';
  return { scheme, hostPort: authority ? hostPort(authority, scheme) : undefined, path, query };
}

/** `Host`-style authority to `host:port`, lower case, with the default port filled in. */
export function hostPort(authority: string, scheme: Scheme | undefined): string {
  const a = authority.toLowerCase().replace(/^[^@]*@/, '');
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(a);
  if (!m) return a;
  const port = m[2] || (scheme ? String(defaultPort(scheme)) : '');
  return port ? `${m[1]}:${port}` : m[1]!;
}
