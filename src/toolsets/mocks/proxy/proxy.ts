import net from 'node:net';
import type { Duplex } from 'node:stream';
import { countFromEnv, DescriptorBudget, openFilesLimit } from '../../../core/fd-budget.js';
import { ForwardedHttpStream } from './forwarded-stream.js';
import { acceptHttpProxy, type HttpTarget } from './http-proxy.js';
import { HOP_HIGH_WATER_MARK } from './pipe.js';
import { sniff, type SniffedProtocol } from './sniff.js';
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
  /** Targets passed straight through without reaching onConnection (e.g. debugkit's own ports). */
  exclude?: (host: string, port: number) => boolean;
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
  /** The budget every capture proxy in the process shares (default: allProxies(); its own in tests). */
  shared?: DescriptorBudget;
  /** The first connection refused for each reason (the same reason again is only counted, in `refused`). */
  onRefused?: (why: string) => void;
}

/** Connections refused for one reason. */
export interface Refusal {
  why: string;
  count: number;
}

export interface CaptureProxy {
  socksPort: number;
  httpPort: number;
  /** Connections refused past the caps so far, per reason (empty when none were). */
  readonly refused: Refusal[];
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

let everyProxy: DescriptorBudget | undefined;
/** The budget all capture proxies in this process share (read from the limit when the first proxy starts). */
export function allProxies(): DescriptorBudget {
  return (everyProxy ??= new DescriptorBudget(countFromEnv(PROXIES_MAX_CONNECTIONS_ENV) ?? proxiesMaxConnections()));
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
  const shared = options.shared ?? allProxies();
  const refused = new Map<string, number>();
  /** Refused connections are closed before a byte is read: the program sees a refused connection, the server keeps its descriptors. */
  const refuse = (socket: net.Socket, why: string) => {
    socket.destroy();
    const count = refused.get(why) ?? 0;
    refused.set(why, count + 1);
    if (count === 0) options.onRefused?.(why);
  };
  const overCall = `more than ${maxConnections} open at once through one call's proxy; open fewer at a time, or close them sooner`;
  const overServer = `the capture proxies of all calls hold ${shared.max} connections, the most the server allows them (the rest of its file descriptors serve MCP clients); open fewer at a time, or wait for other calls to end`;

  const excluded = (t: HttpTarget) => (LOOPBACK.test(t.host) && (t.port === ports.socks || t.port === ports.http)) || (options.exclude?.(t.host, t.port) ?? false);

  /** Sniffs (unless the protocol is known) and hands the connection over; excluded ones just tunnel. */
  const dispatch = async (client: Duplex, target: HttpTarget, via: InterceptVia, known?: SniffedProtocol) => {
    if (excluded(target)) return void (await tunnel({ client, target }));
    const idleMs = typeof options.sniffIdleMs === 'function' ? options.sniffIdleMs(target) : options.sniffIdleMs;
    const sniffed = known ? { protocol: known } : await sniff(client, idleMs === undefined ? {} : { idleMs });
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

  const onSocks = async (socket: net.Socket) => {
    const target = await acceptSocks5(socket, { timeoutMs: options.handshakeTimeoutMs });
    // Success comes before the target is reached: the handler decides whether it ever is (a mock
    // never connects), and the client only sends its first bytes, which we sniff, after the reply.
    socket.write(encodeReply(SocksReply.succeeded));
    await dispatch(socket, target, 'socks5');
  };

  const onHttp = async (socket: net.Socket) => {
    const req = await acceptHttpProxy(socket, { timeoutMs: options.handshakeTimeoutMs });
    if (req.kind === 'connect') await dispatch(socket, req.target, 'http-connect');
    else forward(socket, req.target, Buffer.alloc(0));
  };

  const serve = (via: InterceptVia, handle: (s: net.Socket) => Promise<void>) =>
    // noDelay: whoever answers on this socket (a recorder, a replayer writing headers and body
    // separately) must not wait on Nagle and the client's delayed ACK, ~40 ms per message.
    net.createServer({ allowHalfOpen: true, pauseOnConnect: true, noDelay: true, highWaterMark: HOP_HIGH_WATER_MARK }, (socket) => {
      // A permanent listener: a reset while nobody else listens must not crash the server.
      socket.on('error', () => {});
      if (live.size >= maxConnections) return refuse(socket, overCall);
      if (!shared.take()) return refuse(socket, overServer);
      live.add(socket);
      socket.once('close', () => {
        live.delete(socket);
        shared.give();
      });
      handle(socket).catch((err) => {
        report(err, { via });
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
    get refused() {
      return [...refused].map(([why, count]) => ({ why, count }));
    },
    close: async () => {
      const closing = Promise.all([closeServer(socksServer), closeServer(httpServer)]);
      for (const socket of live) socket.destroy();
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
