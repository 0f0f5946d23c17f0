import type { Readable } from 'node:stream';
import { DebugkitError } from '../../../core/errors.js';
import { waitBounded } from '../../../core/wait.js';

/**
 * Why `decide` is being asked: new bytes arrived, the peer closed its side, the wait ran out, or
 * the stream stopped buffering (the limit or the stream's high-water mark, beyond which a paused
 * stream reads no further). Everything but 'data' is final: `decide` must answer or throw.
 */
export type PeekEvent = 'data' | 'end' | 'timeout' | 'limit';

/** The stream failed or closed before `decide` answered; `peeked`: how many bytes had come (all unread still). */
export class PeekCutError extends DebugkitError {
  override name = 'PeekCutError';
  constructor(
    message: string,
    readonly peeked: number,
    options?: { cause?: unknown },
  ) {
    super('ENGINE_FAILED', message, options);
  }
}

export interface PeekOptions {
  timeoutMs: number;
  maxBytes: number;
}

/**
 * Looks at the bytes a paused stream has buffered until `decide` answers, WITHOUT consuming them.
 * Each look is `read(n)` followed by `unshift` in the same tick, so the stream is never seen empty
 * and cannot emit 'end' under our feet; whoever reads or pipes the stream next gets every byte.
 */
export async function peekUntil<T>(stream: Readable, decide: (buf: Buffer, event: PeekEvent) => T | undefined, { timeoutMs, maxBytes }: PeekOptions): Promise<T> {
  let seen = -1;
  let current: Buffer = Buffer.alloc(0);
  type Answer = { value: T } | { err: unknown };
  const outcome = await waitBounded<Answer>(
    (settle) => {
      const ask = (event: PeekEvent) => {
        const answer = decideOnce(decide, current, event);
        if (answer) settle(answer);
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
      const onError = (err: Error) => settle({ err: new PeekCutError(err.message, current.length, { cause: err }) });
      const onClose = () => settle({ err: new PeekCutError('the connection closed while its first bytes were awaited', current.length) });
      if (stream.readableEnded) return ask('end');
      stream.on('readable', onReadable);
      stream.on('end', onEnd);
      stream.on('error', onError);
      stream.on('close', onClose);
      return () => {
        stream.off('readable', onReadable);
        stream.off('end', onEnd);
        stream.off('error', onError);
        stream.off('close', onClose);
      };
    },
    { timeoutMs, keepAlive: true },
  );
  // The wait ran out: `decide` has the last word on what has arrived.
  const answer = outcome.kind === 'value' ? outcome.value : decideOnce(decide, current, 'timeout')!;
  if ('err' in answer) throw answer.err;
  return answer.value;
}

/** One answer of `decide`: its value, its error, or undefined to wait for more (only after 'data'). */
function decideOnce<T>(decide: (buf: Buffer, event: PeekEvent) => T | undefined, current: Buffer, event: PeekEvent): { value: T } | { err: unknown } | undefined {
  let value: T | undefined;
  try {
    value = decide(current, event);
  } catch (err) {
    return { err };
  }
  if (value !== undefined) return { value };
  if (event !== 'data') return { err: new DebugkitError('INTERNAL', `peek: no decision after ${event}`) };
  return undefined;
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
