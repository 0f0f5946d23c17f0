import type { Duplex } from 'node:stream';

/**
 * The write buffer of a socket on either side of the hop. Node's default (16 KiB) is below one
 * socket read (64 KiB), so every chunk a pipe forwarded made `write` return false: the source was
 * paused and resumed (a readStop/readStart pair of syscalls and a 'drain' tick) once per chunk. With
 * room for a few reads the pipe keeps flowing; memory stays bounded (this much per direction).
 */
export const HOP_HIGH_WATER_MARK = 256 * 1024;

/** For `net.connect` to the far side of the hop: half-close kept, the buffer above (Node reads `highWaterMark`; @types/node omits it). */
export const HOP_CONNECT_OPTIONS: { allowHalfOpen: true } = { allowHalfOpen: true, highWaterMark: HOP_HIGH_WATER_MARK } as { allowHalfOpen: true };

export interface PipeCounts {
  bytesUp: number;
  bytesDown: number;
  error?: Error;
}

/**
 * An error on either side takes both down and is kept in `result.error` (the first one); the
 * handler is attached to both, so no 'error' goes uncaught. Returns the handler.
 */
export function failTogether(result: { error?: Error }, a: Duplex, b: Duplex): (err: Error) => void {
  const fail = (err: Error) => {
    result.error ??= err;
    a.destroy();
    b.destroy();
  };
  a.on('error', fail);
  b.on('error', fail);
  return fail;
}

/**
 * Pipes both ways until both sides are closed. `pipe` gives backpressure and turns one side's
 * EOF into the other's FIN (half-close, which needs allowHalfOpen on sockets); a side that closes
 * before finishing both directions was reset or destroyed, and takes the other down with it; an
 * error on either destroys both and is kept in `result.error`. Resolves with `result`.
 */
export function pipeBoth<R extends PipeCounts>(client: Duplex, upstream: Duplex, result: R): Promise<R> {
  failTogether(result, client, upstream);
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
