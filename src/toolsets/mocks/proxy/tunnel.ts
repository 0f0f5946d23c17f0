import net from 'node:net';
import type { Duplex } from 'node:stream';
import { TimeoutError } from '../../../core/errors.js';

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
  const upstream = net.connect({ host: dest.host, port: dest.port, allowHalfOpen: true });
  upstream.setNoDelay(true); // request/response traffic: Nagle + delayed ACK would add 40 ms stalls
  if (client instanceof net.Socket) client.setNoDelay(true);

  const timeoutMs = options.connectTimeoutMs ?? 10_000;
  const timer = setTimeout(() => fail(new TimeoutError(`connecting to ${dest.host}:${dest.port} took over ${timeoutMs} ms`)), timeoutMs);
  upstream.once('connect', () => clearTimeout(timer));

  const fail = (err: Error) => {
    result.error ??= err;
    clearTimeout(timer);
    client.destroy();
    upstream.destroy();
  };
  client.on('error', fail);
  upstream.on('error', fail);
  client.on('data', (chunk: Buffer) => void (result.bytesUp += chunk.length));
  upstream.on('data', (chunk: Buffer) => void (result.bytesDown += chunk.length));

  // A side that closes before both of its directions finished was reset or destroyed (for
  // instance by the proxy's close()): take the other side down too. A side that closes after a
  // clean exchange leaves the other to flush what it still holds.
  const closedEarly = (s: Duplex) => !(s.readableEnded && s.writableFinished);
  const closed = (s: Duplex) => new Promise<void>((resolve) => (s.closed ? resolve() : s.once('close', () => resolve())));
  client.once('close', () => closedEarly(client) && upstream.destroy());
  upstream.once('close', () => {
    clearTimeout(timer);
    if (closedEarly(upstream)) client.destroy();
  });

  client.pipe(upstream);
  upstream.pipe(client);
  return Promise.all([closed(client), closed(upstream)]).then(() => result);
}
