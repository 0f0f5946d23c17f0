import net from 'node:net';
import type { Duplex } from 'node:stream';
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
}

export interface CaptureProxy {
  socksPort: number;
  httpPort: number;
  /** Stops listening and ends every live connection. */
  close(): Promise<void>;
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
      live.add(socket);
      // A permanent listener: a reset while nobody else listens must not crash the server.
      socket.on('error', () => {});
      socket.once('close', () => live.delete(socket));
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
