import net from 'node:net';
import type { Duplex } from 'node:stream';
import { BudgetShares, countFromEnv, DescriptorBudget, openFilesLimit } from '../../../core/fd-budget.js';
import { newProxyCredential, PendingHandshakes, ProxyAuthError, type ProxyCredential } from './auth.js';
import { ForwardedHttpStream } from './forwarded-stream.js';
import { acceptHttpProxy, connectEstablished, type HttpTarget } from './http-proxy.js';
import { HOP_HIGH_WATER_MARK } from './pipe.js';
import { PeekCutError } from './peek.js';
import { sniff, type SniffedProtocol, type SniffResult } from './sniff.js';
import { acceptSocks5, encodeReply, SocksReply, type SocksAddressType } from './socks5.js';
import { tunnel } from './tunnel.js';

export type InterceptVia = 'socks5' | 'http-connect' | 'http-proxy';

/** One connection the program opened, caught before any byte reached its target. */
export interface InterceptedConnection {
  id: string;
  /**
   * Where the program wanted to go. `addressType` (SOCKS5 only) says whether it arrived as a name
   * (proxychains with proxy_dns, socks5h) or as an IP (literal IPs, names from /etc/hosts).
   */
  target: { host: string; port: number; addressType?: SocksAddressType };
  protocol: SniffedProtocol;
  /** TLS: the server name the ClientHello asked for. */
  sni?: string;
  /** TLS: the ALPN protocols the ClientHello offers. */
  alpn?: string[];
  /**
   * The program's side. The sniffed first bytes are still unread. For `http-proxy` the requests
   * arrive already rewritten to origin form, as a direct connection would carry them. A client
   * that closed without sending anything may have emitted 'end' already: consume it with pipe,
   * pipeline or async iteration, which handle that, rather than a late 'end' listener.
   */
  client: Duplex;
  via: InterceptVia;
}

export interface CaptureProxyOptions {
  /** Owns the connection: pipe it somewhere (see `tunnel`), answer it, or destroy it. */
  onConnection(conn: InterceptedConnection): Promise<void> | void;
  /** Targets passed straight through without reaching onConnection (e.g. debugkit's own ports); asked of each connection, so it may take its time (a promise). */
  exclude?: (host: string, port: number) => boolean | Promise<boolean>;
  /** Problems with single connections (bad handshakes, failed handlers); never thrown. */
  onError?: (err: unknown, context: { id?: string; via?: InterceptVia }) => void;
  handshakeTimeoutMs?: number;
  /**
   * See SniffOptions.idleMs: a silent client counts as `generic` after this long. Per target when a
   * function (undefined: the default).
   */
  sniffIdleMs?: number | ((target: HttpTarget) => number | undefined);
  /** Connections this proxy holds open at once; past it new ones are closed at once (default: PROXY_MAX_CONNECTIONS, or DEBUGKIT_MOCK_PROXY_MAX_CONNECTIONS). */
  maxConnections?: number;
  /** The budget every capture proxy in the process shares, in keys' shares (default: allProxies(); its own in tests). */
  shares?: BudgetShares;
  /**
   * The key the call runs for (core/sessions.ts clientKey): its connections count against its share
   * of `shares`. Undefined or 'local' (stdio, the one --api-key): the one local user, who shares
   * with nobody and may use the whole.
   */
  owner?: string;
  /**
   * What a client must show before anything of its connection counts or is read further (default: a
   * new random one, see `credential` of the proxy). 'none' only where no other process can reach
   * the ports: tests.
   */
  credential?: ProxyCredential | 'none';
  /** Connections still in their handshake, across proxies (default: allHandshakes()). */
  handshakes?: PendingHandshakes;
  /** The first connection refused for each reason (the same reason again is only counted, in `refused`). */
  onRefused?: (why: string) => void;
  /**
   * A connection whose first bytes came but which failed or closed before its protocol was told (a
   * reset inside a first request): handed to no one, and said here (a replay counts it as a miss).
   */
  onCut?: (cut: { target: HttpTarget; bytes: number; why: string }) => void;
}

/** Connections refused for one reason. */
export interface Refusal {
  why: string;
  count: number;
}

export interface CaptureProxy {
  socksPort: number;
  httpPort: number;
  /** What the program is handed (proxychains config, proxy URLs); undefined with credential 'none'. Never shown in answers. */
  credential: ProxyCredential | undefined;
  /** Connections refused past the caps so far, per reason (empty when none were). */
  readonly refused: Refusal[];
  /**
   * Connections closed because they did not show the credential (another local process, or a client
   * that ignores the user and password of its proxy settings); counted in no cap, not in `refused`.
   */
  readonly unauthenticated: number;
  /** Stops listening and ends every live connection. */
  close(): Promise<void>;
}

/**
 * Connections one capture proxy (one keploy_mock_record or keploy_mock_test call) holds open at
 * once by default. A program that opened 21,000 silent ones (each held 10 s when a replay's miss
 * fails, SILENT_CLIENT_MS) took every descriptor the server had: libuv then accepts and closes
 * every new connection, and other clients' MCP requests were reset.
 */
export const PROXY_MAX_CONNECTIONS = 1024;
/** Overrides PROXY_MAX_CONNECTIONS (tests lower it). */
export const PROXY_MAX_CONNECTIONS_ENV = 'DEBUGKIT_MOCK_PROXY_MAX_CONNECTIONS';
/** Overrides proxiesMaxConnections(). */
export const PROXIES_MAX_CONNECTIONS_ENV = 'DEBUGKIT_MOCK_PROXY_MAX_CONNECTIONS_TOTAL';

/**
 * All capture proxies together, so that many calls at once cannot take the descriptors kept for
 * the MCP listener (--max-connections: half the limit by default): an eighth of the descriptor
 * limit, since each connection may hold two (the program's and the one to its target), so a
 * quarter of the descriptors; at least 64, at most 4,096 (about 40 KB of buffers each).
 */
export function proxiesMaxConnections(limit = openFilesLimit() ?? 4096): number {
  return Math.max(64, Math.min(4096, Math.floor(limit / 8)));
}

/** What core/sessions.ts clientKey calls the one local user. */
const LOCAL_KEY = 'local';

/** Of the budget all capture proxies share, the part one key's calls may hold together (the local user: all of it). */
export const PROXY_KEY_SHARE = 1 / 2;

let everyProxy: BudgetShares | undefined;
/** The budget all capture proxies in this process share, in keys' shares (read from the limit when the first proxy starts). */
export function allProxies(): BudgetShares {
  return (everyProxy ??= new BudgetShares(new DescriptorBudget(countFromEnv(PROXIES_MAX_CONNECTIONS_ENV) ?? proxiesMaxConnections()), PROXY_KEY_SHARE));
}

let everyHandshake: PendingHandshakes | undefined;
/** Connections in their handshake across all proxies: as many as the proxies may hold (each one descriptor until it shows the credential). */
export function allHandshakes(): PendingHandshakes {
  return (everyHandshake ??= new PendingHandshakes(allProxies().whole.max));
}

/** The reason an answer gives for connections that did not show the credential. */
export const UNAUTHENTICATED =
  "they did not show this call's proxy credential (the user and password in ALL_PROXY, HTTP_PROXY and the proxychains config): another local process, or a client that ignores the credential in its proxy settings";

/** What an answer says of connections closed for want of the credential. */
export function describeUnauthenticated(count: number): string {
  return `${count} connection${count === 1 ? ' was' : 's were'} closed by the capture proxy before ${count === 1 ? 'its' : 'their'} first request: ${UNAUTHENTICATED}`;
}

/** What an answer says of refused connections: why the program's connections failed. */
export function describeRefusals(refused: Refusal[]): string {
  const count = refused.reduce((n, r) => n + r.count, 0);
  return `${count} connection${count === 1 ? ' was' : 's were'} refused by the capture proxy: ${refused.map((r) => (refused.length === 1 ? r.why : `${r.count} ${r.why}`)).join('; ')}`;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost|::ffff:127\.\d+\.\d+\.\d+)$/i;

/**
 * Starts the SOCKS5 and HTTP proxy listeners on 127.0.0.1 (random ports). Every connection the
 * program makes through either one is handed to `onConnection` with its target and sniffed protocol.
 */
export async function startCaptureProxy(options: CaptureProxyOptions): Promise<CaptureProxy> {
  const live = new Set<net.Socket>();
  let nextId = 1;
  const ports = { socks: 0, http: 0 };
  const report = options.onError ?? (() => {});
  const maxConnections = options.maxConnections ?? countFromEnv(PROXY_MAX_CONNECTIONS_ENV) ?? PROXY_MAX_CONNECTIONS;
  const shares = options.shares ?? allProxies();
  const handshakes = options.handshakes ?? allHandshakes();
  const credential = options.credential === 'none' ? undefined : (options.credential ?? newProxyCredential());
  const owner = options.owner === LOCAL_KEY ? undefined : options.owner;
  const refused = new Map<string, number>();
  let unauthenticated = 0;
  /** Connections not yet past their credential: counted in no cap, closed with the proxy. */
  const greeting = new Set<net.Socket>();
  /** Refused connections are closed before their request is read: the program sees a refused connection, the server keeps its descriptors. */
  const refuse = (socket: net.Socket, why: string) => {
    socket.destroy();
    const count = refused.get(why) ?? 0;
    refused.set(why, count + 1);
    if (count === 0) options.onRefused?.(why);
  };
  const stranger = () => {
    if (unauthenticated++ === 0) options.onRefused?.(UNAUTHENTICATED);
  };
  const overCall = `more than ${maxConnections} open at once through one call's proxy; open fewer at a time, or close them sooner`;
  const overKey = `the calls of this API key hold ${shares.perKey} connections through their capture proxies, its share of the ${shares.whole.max} the server allows all calls; open fewer at a time, or wait for this key's other calls to end`;
  const overReserve = `the capture proxies of all calls hold ${shares.whole.max - shares.reserve} of the ${shares.whole.max} connections the server allows them, and the last ${shares.reserve} are kept for API keys holding at most ${shares.small}, which this key's calls pass; open fewer at a time, or wait for other calls to end`;
  const overServer = `the capture proxies of all calls hold ${shares.whole.max} connections, the most the server allows them (the rest of its file descriptors serve MCP clients); open fewer at a time, or wait for other calls to end`;
  /**
   * Counts an authenticated connection against the call's cap, its key's share and the server's
   * budget; false (the socket closed and the reason counted) past any of them.
   */
  const admit = (socket: net.Socket): boolean => {
    // Closed while its handshake ended: its 'close' may be past, nothing to count or refuse.
    if (socket.destroyed) return false;
    if (live.size >= maxConnections) return (refuse(socket, overCall), false);
    const full = shares.take(owner);
    if (full) return (refuse(socket, full === 'key' ? overKey : full === 'reserve' ? overReserve : overServer), false);
    live.add(socket);
    socket.once('close', () => {
      live.delete(socket);
      shares.give(owner);
    });
    return true;
  };

  const excluded = async (t: HttpTarget) => (LOOPBACK.test(t.host) && (t.port === ports.socks || t.port === ports.http)) || ((await options.exclude?.(t.host, t.port)) ?? false);

  /** Sniffs (unless the protocol is known) and hands the connection over; excluded ones just tunnel. */
  const dispatch = async (client: Duplex, target: HttpTarget, via: InterceptVia, known?: SniffedProtocol) => {
    if (await excluded(target)) return void (await tunnel({ client, target }));
    const idleMs = typeof options.sniffIdleMs === 'function' ? options.sniffIdleMs(target) : options.sniffIdleMs;
    let sniffed: SniffResult;
    try {
      sniffed = known ? { protocol: known } : await sniff(client, idleMs === undefined ? {} : { idleMs });
    } catch (err) {
      if (!(err instanceof PeekCutError) || err.peeked === 0) throw err;
      options.onCut?.({ target: { ...target }, bytes: err.peeked, why: err.message });
      return void client.destroy();
    }
    const conn: InterceptedConnection = { id: `conn-${nextId++}`, target: { ...target }, ...sniffed, client, via };
    try {
      await options.onConnection(conn);
    } catch (err) {
      report(err, { id: conn.id, via });
      client.destroy();
    }
  };

  const forward = (socket: net.Socket, target: HttpTarget, initial: Buffer) => {
    const stream = new ForwardedHttpStream(socket, target, initial, (next, rest) => forward(socket, next, rest));
    dispatch(stream, target, 'http-proxy', 'http').catch((err) => {
      report(err, { via: 'http-proxy' });
      stream.destroy();
    });
  };

  /** The handshake up to its credential and request, outside every cap; then admitted, or closed. */
  const handshake = async <T>(socket: net.Socket, accept: () => Promise<T>): Promise<T | undefined> => {
    greeting.add(socket);
    handshakes.add(socket);
    try {
      const request = await accept();
      return admit(socket) ? request : undefined;
    } catch (err) {
      if (err instanceof ProxyAuthError) stranger();
      throw err;
    } finally {
      handshakes.delete(socket);
      greeting.delete(socket);
    }
  };

  const onSocks = async (socket: net.Socket) => {
    const target = await handshake(socket, () => acceptSocks5(socket, { timeoutMs: options.handshakeTimeoutMs, ...(credential ? { credential } : {}) }));
    if (!target) return;
    // Success comes before the target is reached: the handler decides whether it ever is (a mock
    // never connects), and the client only sends its first bytes, which we sniff, after the reply.
    socket.write(encodeReply(SocksReply.succeeded));
    await dispatch(socket, target, 'socks5');
  };

  const onHttp = async (socket: net.Socket) => {
    const req = await handshake(socket, () => acceptHttpProxy(socket, { timeoutMs: options.handshakeTimeoutMs, ...(credential ? { credential } : {}) }));
    if (!req) return;
    if (req.kind === 'connect') {
      socket.write(connectEstablished(req.version));
      await dispatch(socket, req.target, 'http-connect');
    } else forward(socket, req.target, Buffer.alloc(0));
  };

  const serve = (via: InterceptVia, handle: (s: net.Socket) => Promise<void>) =>
    // noDelay: whoever answers on this socket (a recorder, a replayer writing headers and body
    // separately) must not wait on Nagle and the client's delayed ACK, ~40 ms per message.
    net.createServer({ allowHalfOpen: true, pauseOnConnect: true, noDelay: true, highWaterMark: HOP_HIGH_WATER_MARK }, (socket) => {
      // A permanent listener: a reset while nobody else listens must not crash the server.
      socket.on('error', () => {});
      handle(socket).catch((err) => {
        // A stranger's failed handshake is counted (`unauthenticated`), not a problem of the call's.
        if (!(err instanceof ProxyAuthError)) report(err, { via });
        // A refused handshake already sent its answer and closes once it is flushed.
        if (!socket.writableEnded) socket.destroy();
      });
    });

  const socksServer = serve('socks5', onSocks);
  const httpServer = serve('http-proxy', onHttp);
  ports.socks = await listen(socksServer);
  ports.http = await listen(httpServer).catch(async (err) => {
    await closeServer(socksServer);
    throw err;
  });

  return {
    socksPort: ports.socks,
    httpPort: ports.http,
    credential,
    get refused() {
      return [...refused].map(([why, count]) => ({ why, count }));
    },
    get unauthenticated() {
      return unauthenticated;
    },
    close: async () => {
      const closing = Promise.all([closeServer(socksServer), closeServer(httpServer)]);
      for (const socket of [...live, ...greeting]) socket.destroy();
      await closing;
    },
  };
}

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      server.off('error', reject);
      resolve((server.address() as net.AddressInfo).port);
    });
  });
}

function closeServer(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
