import { accessSync, constants, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DebugkitError } from '../../../core/errors.js';
import type { ProxyCredential } from './auth.js';

/**
 * Routing a program through the capture proxy without root: proxychains4 preloads a library
 * (LD_PRELOAD) that turns every TCP connect() into a SOCKS5 CONNECT to our proxy. Programs that
 * bypass libc (static binaries, Go) ignore it; for those the proxy variables point at our HTTP
 * proxy, which most HTTP clients honour.
 *
 * Verified with proxychains4 4.16 (Debian 12): connections to 127.0.0.1 are routed through the
 * proxy like any other (only `localnet` entries bypass it, and loopback is not one). curl, Python
 * urllib (pyenv and /usr/bin python3), Node fetch and http, and psql are all caught. Given the
 * variables as well, curl and urllib prefer the HTTP proxy (plain requests, CONNECT for TLS);
 * Node 20's fetch and http ignore HTTP_PROXY, so proxychains is what catches them.
 * Limits: only TCP is captured; proxychains blocks the program's connect() during the SOCKS
 * handshake (bounded by tcp_read_time_out); with proxy_dns a program that uses a looked-up
 * address for anything but connect() (UDP, showing it) sees a 224.x placeholder.
 */

export const PROXYCHAINS_INSTALL_HINT = 'apt-get install -y proxychains4';

export interface ProxychainsConfigOptions {
  /**
   * proxy_dns (default true): proxychains answers the program's name lookups with placeholder
   * addresses (224.x.x.x) and sends the NAME in the SOCKS5 request, so the proxy records
   * `api.example.com:443` rather than an IP, and a replay works offline for names that do not
   * resolve at all. Names in /etc/hosts (localhost) and literal IPs still arrive as IPs. With
   * false the program resolves through its own DNS and the proxy only ever sees IPs.
   */
  proxyDns?: boolean;
  /**
   * The HTTP proxy port. Our own ports are exempted from proxychains (localnet), so a client that
   * honours HTTP_PROXY or ALL_PROXY reaches the proxy directly instead of through a SOCKS hop to
   * ourselves. (proxychains' own connection to the proxy never goes through its hook.)
   */
  httpPort?: number;
  /** Bounds on proxychains' own connect to and handshake with the proxy (not on the traffic). */
  connectTimeoutMs?: number;
  readTimeoutMs?: number;
  /** The capture proxy's credential: proxychains authenticates with it (SOCKS5 username/password). */
  credential?: ProxyCredential;
}

/**
 * Writes a private proxychains4 config (mode 0600) into `dir` and returns its path. Loopback is
 * deliberately NOT a localnet: connections to services on 127.0.0.1 are captured like any other.
 */
export function writeProxychainsConfig(dir: string, socksPort: number, options: ProxychainsConfigOptions = {}): string {
  checkPort(socksPort, 'socksPort');
  const lines = ['# written by debugkit: route every TCP connection through its capture proxy', 'strict_chain', 'quiet_mode'];
  if (options.proxyDns ?? true) lines.push('proxy_dns', 'remote_dns_subnet 224');
  lines.push(`tcp_connect_time_out ${bounded(options.connectTimeoutMs ?? 5000)}`, `tcp_read_time_out ${bounded(options.readTimeoutMs ?? 10_000)}`);
  if (options.httpPort !== undefined) checkPort(options.httpPort, 'httpPort');
  for (const port of [socksPort, options.httpPort]) {
    if (port !== undefined) lines.push(`localnet 127.0.0.1:${port}/255.255.255.255`);
  }
  const auth = options.credential ? ` ${configWord(options.credential.user)} ${configWord(options.credential.password)}` : '';
  lines.push('', '[ProxyList]', `socks5 127.0.0.1 ${socksPort}${auth}`, '');
  const file = path.join(dir, 'proxychains.conf');
  writeFileSync(file, lines.join('\n'), { mode: 0o600 });
  return file;
}

export interface ProxiedCommandOptions {
  socksPort: number;
  httpPort: number;
  configPath: string;
  /** The environment to start from (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** The proxychains4 binary (default: found on PATH). */
  proxychains?: string;
  /** The capture proxy's credential, put in the proxy URLs (as userinfo). */
  credential?: ProxyCredential;
}

export interface ProxiedCommand {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

const PROXY_VARS = ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY'] as const;
const NO_PROXY_VARS = ['NO_PROXY', 'no_proxy'];

/**
 * The argv and environment that run `argv` through the proxy: `proxychains4 -q -f <config> argv...`
 * plus HTTP_PROXY/HTTPS_PROXY (our HTTP proxy) and ALL_PROXY (our SOCKS5 proxy, socks5h so names
 * are resolved by the proxy), in both cases, with NO_PROXY removed so loopback is captured too.
 * With a credential the URLs carry it (`http://user:password@127.0.0.1:port`): curl, Python
 * requests and urllib, and Go's net/http send it (Proxy-Authorization: Basic, or SOCKS5 RFC 1929).
 */
export function proxiedCommand(argv: readonly string[], options: ProxiedCommandOptions): ProxiedCommand {
  if (argv.length === 0 || !argv[0]) throw new DebugkitError('INVALID_ARGUMENT', 'the command to run is empty');
  // proxychains4 would read a leading "-x" as its own option.
  if (argv[0].startsWith('-')) throw new DebugkitError('INVALID_ARGUMENT', `the command must not start with "-": ${argv[0]}`);
  if (!path.isAbsolute(options.configPath)) {
    throw new DebugkitError('INVALID_ARGUMENT', `configPath must be absolute: ${options.configPath}`);
  }
  checkPort(options.socksPort, 'socksPort');
  checkPort(options.httpPort, 'httpPort');
  const env: NodeJS.ProcessEnv = { ...(options.env ?? process.env) };
  for (const name of NO_PROXY_VARS) delete env[name];
  const cred = options.credential;
  const userinfo = cred ? `${encodeURIComponent(cred.user)}:${encodeURIComponent(cred.password)}@` : '';
  const values = {
    HTTP_PROXY: `http://${userinfo}127.0.0.1:${options.httpPort}`,
    HTTPS_PROXY: `http://${userinfo}127.0.0.1:${options.httpPort}`,
    ALL_PROXY: `socks5h://${userinfo}127.0.0.1:${options.socksPort}`,
  };
  for (const name of PROXY_VARS) {
    env[name] = values[name];
    env[name.toLowerCase()] = values[name];
  }
  return {
    command: options.proxychains ?? findProxychains(),
    args: ['-q', '-f', options.configPath, ...argv],
    env,
  };
}

/** The proxychains4 binary on PATH, or an ENGINE_MISSING error naming the install command. */
export function findProxychains(envPath = process.env.PATH ?? ''): string {
  for (const dir of envPath.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, 'proxychains4');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      /* not here */
    }
  }
  throw new DebugkitError('ENGINE_MISSING', `proxychains4 is not installed (needed to capture a program's traffic): ${PROXYCHAINS_INSTALL_HINT}`);
}

function checkPort(port: number, name: string): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new DebugkitError('INVALID_ARGUMENT', `${name} must be an integer port 1-65535, got ${port}`);
  }
}

/** A user or password as one word of a proxychains config line: proxychains splits at blanks and knows no quoting. */
function configWord(word: string): string {
  if (!/^[\x21-\x7e]{1,255}$/.test(word)) throw new DebugkitError('INVALID_ARGUMENT', 'a proxy credential for proxychains must be 1-255 printable ASCII characters without blanks');
  return word;
}

function bounded(ms: number): number {
  return Math.min(Math.max(Math.round(ms), 100), 60_000);
}
