import net from 'node:net';
import type { Duplex } from 'node:stream';
import { TimeoutError } from '../../../core/errors.js';
import { onceBounded } from '../../../core/wait.js';
import { HOP_CONNECT_OPTIONS, pipeBoth } from './pipe.js';

export interface TunnelEndpoint {
  host: string;
  port: number;
}

export interface TunnelOptions {
  /** Connect here instead of the connection's target (e.g. a local stand-in for a remote host). */
  to?: TunnelEndpoint;
  connectTimeoutMs?: number;
}

export interface TunnelResult {
  /** Bytes client -> target and target -> client. */
  bytesUp: number;
  bytesDown: number;
  /** The first failure (connect, reset, timeout), if any; both sides were destroyed then. */
  error?: Error;
}

/**
 * The pass-through handler: opens the real connection to the target and pipes both ways. `pipe`
 * gives backpressure (a slow reader pauses the other side; nothing buffers beyond the stream
 * high-water marks). Half-close is kept: an EOF from one side becomes a FIN to the other while the
 * other direction keeps flowing, which needs allowHalfOpen on both sockets. Resolves once both
 * sides are closed; every socket is destroyed by then.
 */
export function tunnel(conn: { client: Duplex; target: TunnelEndpoint }, options: TunnelOptions = {}): Promise<TunnelResult> {
  const { client } = conn;
  const dest = options.to ?? conn.target;
  const result: TunnelResult = { bytesUp: 0, bytesDown: 0 };
  const upstream = net.connect({ host: dest.host, port: dest.port, ...HOP_CONNECT_OPTIONS });
  upstream.setNoDelay(true); // request/response traffic: Nagle + delayed ACK would add 40 ms stalls
  if (client instanceof net.Socket) client.setNoDelay(true);

  const timeoutMs = options.connectTimeoutMs ?? 10_000;
  // The pipes see how the connection ends; this only bounds how long it may take to start.
  void onceBounded(upstream, 'connect', { timeoutMs, keepAlive: true }).then((o) => {
    if (o.kind === 'timeout') upstream.destroy(new TimeoutError(`connecting to ${dest.host}:${dest.port} took over ${timeoutMs} ms`));
  });
  return pipeBoth(client, upstream, result);
}
