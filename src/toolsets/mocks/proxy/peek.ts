import type { Readable } from 'node:stream';
import { DebugkitError } from '../../../core/errors.js';

/**
 * Why `decide` is being asked: new bytes arrived, the peer closed its side, the wait ran out, or
 * the stream stopped buffering (the limit or the stream's high-water mark, beyond which a paused
 * stream reads no further). Everything but 'data' is final: `decide` must answer or throw.
 */
export type PeekEvent = 'data' | 'end' | 'timeout' | 'limit';

export interface PeekOptions {
  timeoutMs: number;
  maxBytes: number;
}

/**
 * Looks at the bytes a paused stream has buffered until `decide` answers, WITHOUT consuming them.
 * Each look is `read(n)` followed by `unshift` in the same tick, so the stream is never seen empty
 * and cannot emit 'end' under our feet; whoever reads or pipes the stream next gets every byte.
 */
export function peekUntil<T>(stream: Readable, decide: (buf: Buffer, event: PeekEvent) => T | undefined, { timeoutMs, maxBytes }: PeekOptions): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let seen = -1;
    let current: Buffer = Buffer.alloc(0);
    let done = false;

    const finish = (err: unknown, value?: T) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stream.off('readable', onReadable);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
      if (err) reject(err);
      else resolve(value as T);
    };
    const ask = (event: PeekEvent) => {
      let answer: T | undefined;
      try {
        answer = decide(current, event);
      } catch (err) {
        return finish(err);
      }
      if (answer !== undefined) return finish(undefined, answer);
      if (event !== 'data') finish(new DebugkitError('INTERNAL', `peek: no decision after ${event}`));
    };
    const onReadable = () => {
      const n = stream.readableLength;
      const ended = eofReceived(stream);
      // EOF with nothing buffered: answer without reading, so 'end' is left for the next reader.
      if (n === 0) return void (ended ? ask('end') : stream.read());
      // Our own unshift announces the same bytes again; only EOF makes an unchanged buffer news.
      if (n === seen && !ended) return;
      seen = n;
      current = stream.read(n) as Buffer;
      stream.unshift(current);
      const full = n >= Math.min(maxBytes, stream.readableHighWaterMark);
      ask(ended ? 'end' : full ? 'limit' : 'data');
    };
    const onEnd = () => {
      current = Buffer.alloc(0);
      ask('end');
    };
    const onError = (err: Error) => finish(err);
    const onClose = () => finish(new DebugkitError('ENGINE_FAILED', 'the connection closed while its first bytes were awaited'));
    const timer = setTimeout(() => ask('timeout'), timeoutMs);

    if (stream.readableEnded) return void ask('end');
    stream.on('readable', onReadable);
    stream.on('end', onEnd);
    stream.on('error', onError);
    stream.on('close', onClose);
  });
}

/**
 * Reads one message whose length `frameLength` tells (undefined: need more; throw: malformed),
 * consuming exactly that many bytes; anything the peer sent beyond it stays buffered for the next
 * reader. A peer that closes or stalls mid-message gets a clear error instead of a hang.
 */
export async function readFrame(stream: Readable, frameLength: (buf: Buffer) => number | undefined, { timeoutMs, maxBytes, what }: PeekOptions & { what: string }): Promise<Buffer> {
  const n = await peekUntil(
    stream,
    (buf, event) => {
      const len = frameLength(buf);
      if (len !== undefined && len <= buf.length) return len;
      if (event === 'data') return undefined;
      if (event === 'timeout') throw new DebugkitError('TIMEOUT', `${what}: incomplete after ${timeoutMs} ms`);
      if (event === 'end') throw new DebugkitError('INVALID_ARGUMENT', `${what}: the peer closed mid-message`);
      throw new DebugkitError('INVALID_ARGUMENT', `${what}: longer than ${maxBytes} bytes`);
    },
    { timeoutMs, maxBytes },
  );
  return stream.read(n) as Buffer;
}

/**
 * Node has no public flag for "EOF arrived but bytes are still buffered" (readableEnded only turns
 * true once they are consumed); the internal one has been stable since Node 0.10. Without it a
 * peer that sends a fragment and half-closes would only be noticed at the timeout.
 */
function eofReceived(stream: Readable): boolean {
  return (stream as unknown as { _readableState?: { ended?: boolean } })._readableState?.ended === true;
}
