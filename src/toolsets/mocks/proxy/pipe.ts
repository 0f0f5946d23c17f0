import type { Duplex } from 'node:stream';

export interface PipeCounts {
  bytesUp: number;
  bytesDown: number;
  error?: Error;
}

/**
 * Pipes both ways until both sides are closed. `pipe` gives backpressure and turns one side's
 * EOF into the other's FIN (half-close, which needs allowHalfOpen on sockets); a side that closes
 * before finishing both directions was reset or destroyed, and takes the other down with it; an
 * error on either destroys both and is kept in `result.error`. Resolves with `result`.
 */
export function pipeBoth<R extends PipeCounts>(client: Duplex, upstream: Duplex, result: R): Promise<R> {
  const fail = (err: Error) => {
    result.error ??= err;
    client.destroy();
    upstream.destroy();
  };
  client.on('error', fail);
  upstream.on('error', fail);
  client.on('data', (chunk: Buffer) => void (result.bytesUp += chunk.length));
  upstream.on('data', (chunk: Buffer) => void (result.bytesDown += chunk.length));
  const closedEarly = (s: Duplex) => !(s.readableEnded && s.writableFinished);
  const closed = (s: Duplex) => new Promise<void>((resolve) => (s.closed || s.destroyed ? resolve() : s.once('close', () => resolve())));
  client.once('close', () => closedEarly(client) && upstream.destroy());
  upstream.once('close', () => closedEarly(upstream) && client.destroy());
  client.pipe(upstream);
  upstream.pipe(client);
  // A program that gave up while the destination was being reached: no 'close' will come for it.
  if (client.destroyed) upstream.destroy();
  return Promise.all([closed(client), closed(upstream)]).then(() => result);
}
