import type { Duplex } from 'node:stream';
import type { GenericConnection } from '../generic/recorder.js';
import type { RedisMock } from '../keploy/types.js';
import { ByteQueue } from '../../../core/byte-queue.js';
import { pipeBoth } from '../proxy/pipe.js';
import { toRedisMock } from './keploy.js';
import { KeptShare, RECORDING_KEPT_MAX_BYTES, WAITING_OVERHEAD_BYTES, type KeptBytes } from '../kept.js';
import { MAX_MOCK_EXCHANGE_BYTES } from '../protocol.js';
import { CommandFramer, commandArgs, encodeCommand, isPush, redactArgs, RespFramer } from './wire.js';

/**
 * Recording forwards the bytes unchanged and pairs replies with commands in order (Redis answers
 * in order). RESP3 pushes that arrive with no command waiting (pub/sub messages, invalidations)
 * join the previous mock's reply. Passwords (AUTH, HELLO ... AUTH, MIGRATE ... AUTH) are
 * written as `(redacted)`. Bytes that are not RESP stop the recording of that connection (the
 * traffic goes on).
 */

export interface RecordRedisOptions {
  onMock(mock: RedisMock): void;
  /** The recording's budget for calls not finished yet (kept.ts): commands awaiting replies are charged to it. */
  kept?: KeptBytes;
  /** What was relayed but not recorded (an exchange over MAX_MOCK_EXCHANGE_BYTES ends the connection's recording), and why. */
  onDropped?(why: string): void;
  onError?(err: unknown): void;
}

export interface RecordRedisResult {
  mocks: number;
  bytesUp: number;
  bytesDown: number;
  stoppedRecording?: string;
  error?: Error;
}

/** Forwards and records one Redis connection; resolves once both sides are closed. */
export function recordRedis(conn: GenericConnection, upstream: Duplex, options: RecordRedisOptions): Promise<RecordRedisResult> {
  const result: RecordRedisResult = { mocks: 0, bytesUp: 0, bytesDown: 0 };
  const host = `${conn.target.host}:${conn.target.port}`;
  const up = new ByteQueue();
  const down = new ByteQueue();
  const commands = new CommandFramer();
  const replies = new RespFramer();
  const waiting: Array<{ bytes: Buffer; at: Date }> = [];
  let open: { request: Buffer; replies: Buffer[]; bytes: number; at: Date; endedAt: Date } | undefined;
  let stopped = false;
  // Commands awaiting replies: a server that never answers must not make the list grow without bound (attack 18q).
  const share = new KeptShare(options.kept);
  const cost = (bytes: Buffer) => bytes.length + WAITING_OVERHEAD_BYTES;
  const stop = (why: string) => {
    stopped = true;
    result.stoppedRecording ??= why;
    up.clear();
    down.clear();
    open = undefined;
    waiting.length = 0;
    share.release();
  };
  // An exchange past the one bound of every recorder is not built into a mock (that runs on the event
  // loop, for a mock no set could keep: 6 connections reading a 56 MB list held other clients 3 s; attack
  // 18o). Framing needs the bytes from the value's start, so the connection's recording ends there.
  const over = (what: string) => {
    const why = `a Redis ${what}: it and the rest of its connection were relayed, not recorded`;
    options.onDropped?.(why);
    stop(why);
  };
  const emit = () => {
    if (!open) return;
    const o = open;
    open = undefined;
    try {
      options.onMock(toRedisMock(o.request, Buffer.concat(o.replies), o.at, o.endedAt, host, conn.id));
      result.mocks++;
    } catch (err) {
      options.onError?.(err);
    }
  };
  conn.client.on('data', (chunk: Buffer) => {
    if (stopped) return;
    up.push(chunk);
    try {
      for (let end = commands.end(up.view()); end > 0; end = commands.end(up.view())) {
        const raw = up.view().subarray(0, end);
        const { args, redacted } = redactArgs(commandArgs(raw));
        const bytes = redacted ? encodeCommand(args) : Buffer.from(raw);
        up.consume(end);
        if (!share.take(cost(bytes))) return over(`pipeline of ${waiting.length + 1} commands awaiting replies, past the ${RECORDING_KEPT_MAX_BYTES} bytes a recording keeps of calls not finished`);
        waiting.push({ bytes, at: new Date() });
      }
      if (up.length > MAX_MOCK_EXCHANGE_BYTES) over(`command over ${MAX_MOCK_EXCHANGE_BYTES} bytes`);
    } catch (err) {
      stop(`the client sent bytes that are not RESP (${(err as Error).message}); the rest of the connection was not recorded`);
    }
  });
  upstream.on('data', (chunk: Buffer) => {
    if (stopped) return;
    down.push(chunk);
    try {
      for (let end = replies.end(down.view()); end > 0; end = replies.end(down.view())) {
        const reply = Buffer.from(down.view().subarray(0, end));
        down.consume(end);
        const cmd = isPush(reply) && open ? undefined : waiting.shift();
        if (cmd) share.give(cost(cmd.bytes));
        if (cmd) {
          emit();
          open = { request: cmd.bytes, replies: [reply], bytes: cmd.bytes.length + reply.length, at: cmd.at, endedAt: new Date() };
        } else if (open) {
          open.replies.push(reply);
          open.bytes += reply.length;
          open.endedAt = new Date();
        } else {
          // A reply before any command (a server greeting): an exchange with no request.
          open = { request: Buffer.alloc(0), replies: [reply], bytes: reply.length, at: new Date(), endedAt: new Date() };
        }
      }
      if (down.length > MAX_MOCK_EXCHANGE_BYTES || (open?.bytes ?? 0) > MAX_MOCK_EXCHANGE_BYTES) over(`reply over ${MAX_MOCK_EXCHANGE_BYTES} bytes`);
    } catch (err) {
      stop(`the server sent bytes that are not RESP (${(err as Error).message}); the rest of the connection was not recorded`);
    }
  });
  const finish = () => emit();
  conn.client.once('close', finish);
  upstream.once('close', finish);
  return pipeBoth(conn.client, upstream, result);
}
