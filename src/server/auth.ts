import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
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

export function isLoopbackHost(host: string): boolean {
  // Only an IPv4 literal in 127/8: a name such as "127.example.com" may resolve anywhere.
  return host === 'localhost' || host === '::1' || (isIPv4(host) && host.startsWith('127.'));
}

/** A name a Host header may carry, on any port unless the rule names one. */
export interface HostRule {
  /** Lower case; an IPv6 literal in brackets, in its canonical form. */
  name: string;
  port?: number;
}

/**
 * A Host header value (`name`, `name:port`, `[v6]`, `[v6]:port`) split into its canonical name
 * and port; undefined when it is not one (user info, paths, spaces, an empty name or port).
 */
export function parseHostHeader(value: string): HostRule | undefined {
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::(\d{1,5}))?$/i.exec(value);
  if (!m) return undefined;
  let name: string;
  try {
    name = new URL(`http://${m[1]}`).hostname; // canonical: lower case, IPv6 compressed
  } catch {
    return undefined;
  }
  if (m[2] === undefined) return { name };
  const port = Number(m[2]);
  return port > 0 && port < 65536 ? { name, port } : undefined;
}

/** localhost, an IPv4 literal in 127/8, or [::1]: names no DNS answer can point elsewhere. */
function isLoopbackName(name: string): boolean {
  return name === 'localhost' || name === '[::1]' || (isIPv4(name) && name.startsWith('127.'));
}

/**
 * The names a request's Host header (and Origin) may carry, against DNS rebinding: a page on
 * evil.com whose name the attacker points at 127.0.0.1 makes the browser send `Host: evil.com`,
 * which no rule here matches. Loopback names are always accepted, on any port: they are not a
 * rebinding vector (no page can make a browser send them for its own name), and an SSH tunnel
 * (`ssh -L 9000:127.0.0.1:7412`) or a proxy reaches the server as `localhost:9000`. The address
 * the server is bound to (unless a wildcard) is accepted on any port too; so is each
 * `--allowed-host` name, or only on its port when given as NAME:PORT.
 */
export function allowedHostRules(boundHost: string, extra: string[]): HostRule[] {
  const rules: HostRule[] = [];
  if (boundHost !== '0.0.0.0' && boundHost !== '::' && boundHost !== '') {
    const bound = parseHostHeader(boundHost.includes(':') ? `[${boundHost}]` : boundHost);
    if (bound) rules.push({ name: bound.name });
  }
  for (const value of extra) {
    const rule = parseHostHeader(value.trim());
    if (!rule) throw new Error(`--allowed-host ${JSON.stringify(value)}: not a host name (NAME or NAME:PORT; an IPv6 address in brackets)`);
    rules.push(rule);
  }
  return rules;
}

function nameAllowed(host: HostRule, rules: HostRule[]): boolean {
  if (isLoopbackName(host.name)) return true;
  return rules.some((r) => r.name === host.name && (r.port === undefined || r.port === host.port));
}

/** Whether a Host header value is one the server answers (see allowedHostRules). */
export function hostAllowed(host: string | undefined, rules: HostRule[]): boolean {
  const parsed = host === undefined ? undefined : parseHostHeader(host);
  return parsed !== undefined && nameAllowed(parsed, rules);
}

/** An Origin is acceptable when absent (non-browser clients) or when its host is, as a Host header would be. */
export function originAllowed(origin: string | undefined, rules: HostRule[]): boolean {
  if (origin === undefined) return true;
  try {
    const url = new URL(origin);
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) return false;
    const host = parseHostHeader(url.host);
    return host !== undefined && nameAllowed({ name: host.name, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) }, rules);
  } catch {
    return false;
  }
}

/**
 * Whether a browser's Origin is the page the request goes to (same name and port as the Host
 * header). Required when no key is (`--no-auth`): then a page of another local origin
 * (`http://localhost:3000`) could otherwise drive the server with a "simple" cross-origin POST,
 * which needs no CORS preflight. With a key it cannot: the Authorization header forces a preflight
 * the server never approves.
 */
export function sameOrigin(origin: string | undefined, host: string | undefined): boolean {
  if (origin === undefined) return true;
  const target = host === undefined ? undefined : parseHostHeader(host);
  try {
    const url = new URL(origin);
    const from = parseHostHeader(url.host);
    const defaultPort = url.protocol === 'https:' ? 443 : 80;
    return target !== undefined && from !== undefined && from.name === target.name && (from.port ?? defaultPort) === (target.port ?? defaultPort);
  } catch {
    return false;
  }
}

/** How a client authenticates, for every 401 and for the OAuth discovery answers. */
export const KEY_HINT = 'send the API key as Authorization: Bearer KEY';

/**
 * The RFC 6750 challenge of a 401: `invalid_request` when the request carried no usable
 * Authorization header (none, several, another scheme), `invalid_token` when the key is wrong.
 */
export function bearerChallenge(error: 'invalid_request' | 'invalid_token', description = KEY_HINT): string {
  return `Bearer realm="debugkit", error="${error}", error_description="${description.replace(/["\\\r\n]/g, "'")}"`;
}

/**
 * How many Authorization header fields a request carried. Node keeps only the first of several
 * in `req.headers` (and a proxy may join them), so a request with two keys would be judged on
 * one it chose: such a request is refused whole, whichever key is right.
 */
export function authorizationFields(req: IncomingMessage): number {
  const all = req.headersDistinct?.authorization;
  if (all) return all.length;
  return req.headers.authorization === undefined ? 0 : 1;
}

/**
 * Paths OAuth clients probe when a server answers 401 (MCP authorization: RFC 9728 protected
 * resource metadata, at the root and path-suffixed; RFC 8414 / OpenID Connect discovery, also in
 * the `/mcp/.well-known/...` form), and the endpoints the TypeScript SDK falls back to when none of
 * them exists (`/register` for dynamic client registration, `/authorize`, `/token`).
 *
 * debugkit answers them all, without a key, with 404 and an RFC 6749 error body. Not a protected
 * resource metadata document without `authorization_servers`: the SDK (Claude Code, VS Code,
 * Cursor, the inspector) treats that exactly as no document and falls back to the server's origin
 * as its authorization server, and Claude Code takes the mere presence of these documents as
 * "needs authentication" (anthropics/claude-code#46879). With 404 everywhere the SDK's discovery
 * ends at `POST /register`, whose error body it parses as `{error, error_description}`: the user
 * sees the description ("debugkit does not use OAuth: send the API key as ...") instead of the
 * ZodError it got from parsing the JSON-RPC 401 body that path used to answer.
 */
export function isOAuthProbe(pathname: string): boolean {
  return /^(?:\/.*)?\/\.well-known\/(?:oauth-protected-resource|oauth-authorization-server|openid-configuration)(?:\/.*)?$/.test(pathname) || OAUTH_ENDPOINTS.has(pathname);
}

const OAUTH_ENDPOINTS = new Set(['/register', '/authorize', '/token']);

/** The body of the answer to an OAuth probe. */
export const NO_OAUTH = {
  error: 'invalid_request',
  error_description: `debugkit does not use OAuth: ${KEY_HINT} (the key "debugkit serve" printed, its --api-key, or one made with "debugkit keys create")`,
} as const;
