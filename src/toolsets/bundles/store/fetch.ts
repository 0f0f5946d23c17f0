import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { BundleError } from '../errors.js';

/**
 * Where bundle downloads may go (against SSRF): an allowlist of hosts the operator chose
 * (`--bundle-url-host`, default Replicated's), checked for the URL a client gives and again for
 * every redirect, which is followed by hand; and never a loopback, link-local or private address
 * (judged on the addresses the name resolves to, at connect time, so DNS cannot swap them) unless
 * the operator listed that exact host.
 */
export interface UrlPolicy {
  /**
   * `host` or `host:port`. A host matches itself and its subdomains (`replicated.com` matches
   * `vendor.replicated.com`); a private address is fetched only from a host listed exactly.
   */
  hosts: string[];
  /** Hosts allowed for one download without being listed (a signed URL the Replicated API gave); never private. */
  implicitHosts?: string[];
}

export { DEFAULT_BUNDLE_URL_HOSTS } from './urls.js';
export const MAX_REDIRECTS = 5;

interface HostEntry {
  host: string;
  port: string | null;
}

function parseEntry(entry: string): HostEntry {
  const e = entry.trim().toLowerCase();
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(e);
  if (v6) return { host: v6[1]!, port: v6[2] ?? null };
  const m = /^([^:]+)(?::(\d+))?$/.exec(e);
  if (m) return { host: m[1]!.replace(/\.$/, ''), port: m[2] ?? null };
  return { host: e, port: null }; // a bare IPv6 address
}

function hostOf(url: URL): string {
  return url.hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
}

function portOf(url: URL): string {
  return url.port || (url.protocol === 'https:' ? '443' : '80');
}

/** Whether the policy allows `url`, and whether its host is listed exactly (which also allows private addresses). */
export function checkUrl(url: URL, policy: UrlPolicy): { explicit: boolean } {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new BundleError('SecurityError', `Bundle URL must be http(s), not ${url.protocol}`);
  }
  if (url.username || url.password) throw new BundleError('SecurityError', 'Bundle URL must not carry a user name or password');
  const host = hostOf(url);
  const port = portOf(url);
  let explicit = false;
  let allowed = false;
  for (const entry of policy.hosts.map(parseEntry)) {
    if (entry.port !== null && entry.port !== port) continue;
    if (host === entry.host) {
      allowed = true;
      explicit = true;
    } else if (isIP(entry.host) === 0 && host.endsWith(`.${entry.host}`)) {
      allowed = true;
    }
  }
  if (!allowed && (policy.implicitHosts ?? []).some((h) => h.toLowerCase() === url.host.toLowerCase())) allowed = true;
  if (!allowed) {
    throw new BundleError(
      'SecurityError',
      `Downloads from ${host}${url.port ? `:${url.port}` : ''} are not allowed: bundle URLs may come from ${policy.hosts.join(', ') || 'no host'} (the operator adds hosts with --bundle-url-host)`,
    );
  }
  return { explicit };
}

/** Loopback, link-local, private, shared, unspecified, multicast and reserved addresses, IPv4 and IPv6. */
export function isPrivateAddress(address: string): boolean {
  const a = address
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .split('%')[0]!;
  if (isIP(a) === 4) return privateV4(a.split('.').map(Number));
  if (isIP(a) !== 6) return true;
  const mapped = /^(?:0*:)*(?:0*:)?ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a) ?? /^::(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return privateV4(mapped[1]!.split('.').map(Number));
  const words = expandV6(a);
  if (words.every((w) => w === 0)) return true; // ::
  if (words.slice(0, 7).every((w) => w === 0) && words[7] === 1) return true; // ::1
  if (words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) return privateV4([words[6]! >> 8, words[6]! & 255, words[7]! >> 8, words[7]! & 255]);
  const first = words[0]!;
  return (
    (first & 0xffc0) === 0xfe80 || // link-local
    (first & 0xffc0) === 0xfec0 || // site-local
    (first & 0xfe00) === 0xfc00 || // unique local
    (first & 0xff00) === 0xff00 || // multicast
    (first === 0x64 && words[1] === 0xff9b) || // NAT64 to any IPv4
    first === 0x2002 // 6to4 wraps an IPv4 address
  );
}

function privateV4([a, b]: number[]): boolean {
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    a! >= 224 ||
    (a === 100 && b! >= 64 && b! <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b! >= 16 && b! <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0) ||
    (a === 198 && (b === 18 || b === 19))
  );
}

function expandV6(a: string): number[] {
  const [head, tail] = a.includes('::') ? a.split('::') : [a, undefined];
  const parse = (s: string | undefined) =>
    s
      ? s
          .split(':')
          .filter(Boolean)
          .map((w) => parseInt(w, 16))
      : [];
  const h = parse(head);
  const t = parse(tail);
  if (tail === undefined) return h;
  return [...h, ...new Array(Math.max(0, 8 - h.length - t.length)).fill(0), ...t];
}

function privateRefusal(host: string, address: string): BundleError {
  return new BundleError(
    'SecurityError',
    `Downloads from ${host} are not allowed: it resolves to ${address}, a loopback, link-local or private address (the operator allows one by listing that exact host with --bundle-url-host)`,
  );
}

/** dns.lookup that refuses names resolving to any private address; the connection uses what was checked. */
const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    const list = addresses as LookupAddress[];
    const bad = list.find((x) => isPrivateAddress(x.address));
    if (bad) return callback(privateRefusal(hostname, bad.address) as unknown as NodeJS.ErrnoException, '', 0);
    if (list.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
    if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
    callback(null, list[0]!.address, list[0]!.family);
  });
};

export interface GuardedResponse {
  res: IncomingMessage;
  /** The URL that answered, after redirects. */
  url: URL;
}

/**
 * GET `url` under the policy, following at most MAX_REDIRECTS redirects by hand, each checked
 * again; `headers` (credentials) are sent only while the host stays the one first asked.
 */
export async function guardedGet(url: URL, policy: UrlPolicy, options: { headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<GuardedResponse> {
  let current = url;
  const firstHost = hostOf(url);
  for (let hop = 0; ; hop++) {
    const { explicit } = checkUrl(current, policy);
    const host = hostOf(current);
    if (!explicit && isIP(host) !== 0 && isPrivateAddress(host)) throw privateRefusal(host, host);
    const headers = host === firstHost ? (options.headers ?? {}) : {};
    const res = await request(current, headers, options.signal, explicit ? undefined : guardedLookup);
    const status = res.statusCode ?? 0;
    if ([301, 302, 303, 307, 308].includes(status) && res.headers.location) {
      res.resume();
      if (hop >= MAX_REDIRECTS) throw new BundleError('ApiError', `Failed to download bundle: more than ${MAX_REDIRECTS} redirects`);
      try {
        current = new URL(res.headers.location, current);
      } catch (err) {
        throw new BundleError('ApiError', `Failed to download bundle: a redirect to an invalid URL`, { cause: err });
      }
      continue;
    }
    return { res, url: current };
  }
}

function request(url: URL, headers: Record<string, string>, signal: AbortSignal | undefined, lookup: LookupFunction | undefined): Promise<IncomingMessage> {
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(url, { method: 'GET', headers, signal, lookup, agent: false }, resolve);
    req.on('error', reject);
    req.end();
  });
}
