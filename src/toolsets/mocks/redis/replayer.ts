import type { Duplex } from 'node:stream';
import { previewBytes } from '../generic/keploy.js';
import type { GenericConnection } from '../generic/recorder.js';
import { ByteQueue } from '../../../core/byte-queue.js';
import { boundPromise, TimeSlice } from '../../../core/wait.js';
import { KeptShare, type KeptBytes, RELAYED_MAX_BYTES } from '../kept.js';
import type { RedisIndex } from './matcher.js';
import { CommandFramer, commandArgs, describeCommand, encodeCommand, errorReply, MAX_BUFFERED, redactArgs, RespFramer } from './wire.js';

/**
 * Replay answers each command with the recorded reply of the same command (same arguments,
 * passwords ignored), in recorded order when one repeats, the last answer repeating after that;
 * a command with no mock gets a RESP error naming the closest recorded command, which a Redis
 * client raises as an error, and the connection stays usable.
 */

export interface ReplayRedisOptions {
  onMatch?(m: { mock: string; reused: boolean }): void;
  onMiss?(m: { command: string; message: string }): void;
  /**
   * A miss's way to the real server (`onMiss` passthrough or record): given the command's bytes
   * (as the client sent them, password included) and the session's state commands so far (AUTH,
   * HELLO, SELECT, CLIENT SETNAME), resolves with the real reply. Without it a miss is an error reply.
   */
  fetch?(command: Buffer, state: readonly Buffer[]): Promise<Buffer>;
  /** A miss answered by `fetch`: the command (passwords redacted) and the reply. */
  onFetched?(m: { command: string; request: Buffer; reply: Buffer; startedAt: Date }): void;
  /**
   * The replay's budget (kept.ts) for the client's bytes not answered yet (a command not whole):
   * each connection may hold MAX_BUFFERED, but a thousand of them at once held no budget (attack
   * 18ak t1-2, as for MySQL). Past it the client gets an error and the connection is closed.
   */
  kept?: KeptBytes;
}

const STATE_COMMANDS = new Set(['AUTH', 'HELLO', 'SELECT', 'CLIENT']);
/** Replay answers for about this long at a time before letting the event loop run others' work. */
const SLICE_MS = 10;
/** Unanswered bytes past this, while commands are being answered, stop reading until they are. */
const HOLD_BYTES = 1 << 20;
/** Answers are written once this many bytes of them are ready (and at each slice's end). */
const FLUSH_BYTES = 1 << 20;

/** Serves one connection from recorded Redis mocks; resolves once it is closed. */
export function replayRedis(conn: GenericConnection, index: RedisIndex, options: ReplayRedisOptions = {}): Promise<void> {
  const { client } = conn;
  const target = `${conn.target.host}:${conn.target.port}`;
  const queue = new ByteQueue();
  /** What `queue` holds, charged to the replay's budget: given back as commands are consumed. */
  const share = new KeptShare(options.kept);
  const settle = () => share.downTo(queue.length);
  const framer = new CommandFramer();
  /** The commands that set this session up, as sent (a fetch replays them on the real server first). */
  const state: Buffer[] = [];
  let busy = false;
  /** Bytes came while the pump was busy: it looks again once done. */
  let more = false;
  let quit = false;
  /** Reading stopped while a backlog of pipelined commands is answered, or the client has not read what it was sent. */
  let held = false;
  let peerEnded = false;
  const hold = () => {
    if (held) return;
    held = true;
    client.pause();
  };
  /** Answers not yet written, and their size. */
  const out: Buffer[] = [];
  let outBytes = 0;
  /** Writes the answers so far, each as it is (no copy into one); waits while the client has not read them. */
  const flush = async () => {
    if (out.length > 0 && !client.destroyed) {
      client.cork();
      for (const b of out) client.write(b);
      client.uncork();
    }
    out.length = 0;
    outBytes = 0;
    if (client.writableNeedDrain && !client.destroyed) {
      // Answers only follow commands: not reading more commands is the backpressure.
      hold();
      await new Promise<void>((resolve) => {
        const done = () => {
          client.off('drain', done);
          client.off('close', done);
          resolve();
        };
        client.on('drain', done);
        client.on('close', done);
      });
    }
  };
  const answer = (reply: Buffer) => {
    out.push(reply);
    outBytes += reply.length;
  };
  /**
   * Answers every complete command in order; waits for a fetch before the next (replies stay in
   * order). A long pipelined burst is answered in slices, the event loop free between them, and
   * its answers written every FLUSH_BYTES.
   */
  const pump = async () => {
    if (busy) return;
    busy = true;
    more = false;
    try {
      const slice = new TimeSlice(SLICE_MS);
      while (!quit) {
        if (outBytes >= FLUSH_BYTES) await flush();
        if (slice.over()) {
          await flush();
          await slice.pause();
        }
        if (client.destroyed) break;
        let end: number;
        let args: Buffer[];
        let raw: Buffer;
        try {
          end = framer.end(queue.view());
          if (end <= 0) break;
          raw = Buffer.from(queue.view().subarray(0, end));
          args = commandArgs(raw);
        } catch (err) {
          const message = `redis ${target}: the client sent bytes that are not RESP (${(err as Error).message}): ${previewBytes(queue.view())}`;
          options.onMiss?.({ command: '', message });
          answer(errorReply(`ERR debugkit: ${message}`));
          quit = true;
          break;
        }
        queue.consume(end);
        settle();
        if (args.length === 0) continue;
        const name = args[0]!.toString('latin1').toUpperCase();
        const redacted = redactArgs(args).args;
        const hit = index.answer(redacted);
        if (hit) {
          answer(hit.entry.response);
          options.onMatch?.({ mock: hit.entry.name, reused: hit.reused });
        } else if (name === 'QUIT') {
          answer(Buffer.from('+OK\r\n'));
        } else if (options.fetch) {
          await flush();
          const startedAt = new Date();
          let reply: Buffer;
          try {
            reply = await options.fetch(raw, state);
            options.onFetched?.({ command: describeCommand(redacted), request: encodeCommand(redacted), reply, startedAt });
          } catch (err) {
            const message = `redis ${target}: ${describeCommand(redacted)} matched no mock and the real server could not answer it: ${(err as Error).message}`;
            options.onMiss?.({ command: describeCommand(redacted), message });
            reply = errorReply(`ERR debugkit: ${message}`);
          }
          answer(reply);
        } else {
          const near = index.closest(redacted);
          const command = describeCommand(redacted);
          const message = `redis ${target}: no recorded mock for ${command}${near ? `; closest ${near.name}: ${describeCommand(near.args)}` : index.size === 0 ? '; no Redis mocks were recorded' : ''}`;
          options.onMiss?.({ command, message });
          answer(errorReply(`ERR debugkit: ${message}`));
        }
        if (STATE_COMMANDS.has(name) && (name !== 'CLIENT' || args[1]?.toString('latin1').toUpperCase() === 'SETNAME')) state.push(raw);
        if (name === 'QUIT') quit = true;
      }
      if (!quit && queue.length > MAX_BUFFERED) {
        const message = `redis ${target}: the client sent a command over ${MAX_BUFFERED / (1 << 20)} MiB (${queue.length} bytes and not yet whole): ${previewBytes(queue.view())}`;
        options.onMiss?.({ command: '', message });
        answer(errorReply(`ERR debugkit: ${message}`));
        quit = true;
      }
      await flush();
      if (quit) {
        queue.clear();
        settle();
        client.end();
      }
    } finally {
      busy = false;
      if (held && !client.destroyed) {
        held = false;
        client.resume();
      }
    }
    if (quit || client.destroyed) return;
    if (more) void pump().catch(() => client.destroy());
    else if (peerEnded) client.end();
  };
  client.on('data', (chunk: Buffer) => {
    if (quit) return;
    if (!share.take(chunk.length)) {
      const message = `redis ${target}: the client's unanswered bytes (${queue.length + chunk.length}) went over what a replay holds of commands not whole yet (${options.kept?.limit ?? 0} bytes per replay, shared by its connections, under the server's budget): the connection was closed`;
      options.onMiss?.({ command: '', message });
      quit = true;
      queue.clear();
      settle();
      if (!client.destroyed) client.end(errorReply(`ERR debugkit: ${message}`));
      return;
    }
    queue.push(chunk);
    more = true;
    // A backlog waits in the client's socket, not here (a command still arriving is read on).
    if (busy && queue.length > HOLD_BYTES) hold();
    void pump().catch(() => client.destroy());
  });
  // The client is done sending: once what it sent is answered, so are we.
  client.on('end', () => {
    peerEnded = true;
    if (!busy) client.end();
  });
  client.on('error', () => {});
  return new Promise((resolve) => {
    if (client.destroyed) return resolve();
    client.once('close', () => {
      // A command cut off by the close (its bytes not whole) was sent and never answered: a miss, as HTTP's (attack
      // 18aj r1-2). Whole commands the program left without reading their answers are no misses.
      const cut = quit ? 0 : unframed(queue.view());
      if (cut > 0)
        options.onMiss?.({ command: '', message: `redis ${target}: the connection closed with ${cut} bytes of a command not whole: ${previewBytes(queue.view().subarray(queue.length - cut))}` });
      queue.clear();
      share.release();
      resolve();
    });
    client.resume();
  });
}

/**
 * One connection to the real Redis server for a replayed session's misses: opened on the first
 * miss, the session's state commands sent first (their replies dropped), then each missed
 * command, its reply read by RESP framing.
 *
 * Bounded (attack 18ah o1-1: one GET answered by an endless bulk reply held 1.4-2.1 GB, read on
 * after the timeout): what is read and not yet a whole reply is at most RELAYED_MAX_BYTES
 * (the one bound of an exchange every recorder has) and charged to `kept`, the replay's budget
 * for calls not finished. Past either, or past `timeoutMs` with no whole reply, the fetch fails
 * saying why and the connection is destroyed: nothing more is read from it, its bytes go back to
 * the budget, and the next miss opens a new one (the state commands sent again). Nothing is read
 * while no fetch waits.
 */
export function redisFetcher(
  connect: () => Promise<Duplex>,
  options: { timeoutMs?: number; kept?: KeptBytes } = {},
): { fetch: (command: Buffer, state: readonly Buffer[]) => Promise<Buffer>; close: () => void } {
  const timeoutMs = options.timeoutMs ?? 10_000;
  let socket: Duplex | undefined;
  let buf = new ByteQueue();
  let replies = new RespFramer();
  /** The bytes in `buf`, lent by the replay's budget. */
  const share = new KeptShare(options.kept);
  let waiting: { skip: number; resolve: (b: Buffer) => void; reject: (e: Error) => void } | undefined;
  let sent = 0;
  /** Ends the connection (destroyed: nothing more is read) and fails the fetch waiting, if any, with `err`. */
  const drop = (err: Error) => {
    const s = socket;
    socket = undefined;
    sent = 0;
    buf = new ByteQueue();
    replies = new RespFramer();
    share.release();
    s?.destroy();
    const w = waiting;
    waiting = undefined;
    w?.reject(err);
  };
  const onData = (chunk: Buffer) => {
    if (buf.length + chunk.length > RELAYED_MAX_BYTES) {
      return drop(
        new Error(
          `its reply is over ${RELAYED_MAX_BYTES} bytes, the bound of an answer relayed whole (${buf.length + chunk.length} bytes read and not yet whole); the connection to the server was closed`,
        ),
      );
    }
    if (!share.take(chunk.length)) {
      return drop(new Error(`its reply does not fit in the ${options.kept!.limit} bytes the replay keeps of calls not finished (other calls hold the rest); the connection to the server was closed`));
    }
    buf.push(chunk);
    try {
      for (let end = waiting ? replies.end(buf.view()) : -1; end > 0 && waiting; end = waiting ? replies.end(buf.view()) : -1) {
        const reply = Buffer.from(buf.view().subarray(0, end));
        buf.consume(end);
        share.give(end);
        if (waiting.skip > 0) waiting.skip--;
        else {
          const w = waiting;
          waiting = undefined;
          socket?.pause();
          w.resolve(reply);
        }
      }
    } catch (err) {
      drop(new Error(`it sent bytes that are not RESP (${(err as Error).message}); the connection to the server was closed`));
    }
  };
  return {
    async fetch(command, state) {
      if (!socket) {
        const s = await connect();
        socket = s;
        s.on('data', (chunk: Buffer) => void (socket === s && onData(chunk)));
        s.on('error', (err) => void (socket === s && drop(err)));
        s.on('close', () => void (socket === s && drop(new Error('the server closed the connection'))));
      }
      const fresh = state.slice(sent);
      sent = state.length;
      const s = socket;
      const reply = new Promise<Buffer>((resolve, reject) => {
        waiting = { skip: fresh.length, resolve, reject };
        s.write(Buffer.concat([...fresh, command]));
        s.resume();
      });
      const outcome = await boundPromise(reply, { timeoutMs, keepAlive: true });
      if (outcome.kind !== 'value') {
        // No reading after the timeout: the reply is given up, and the connection with it.
        const err = new Error(`no reply within ${timeoutMs} ms; the connection to the server was closed`);
        drop(err);
        throw err;
      }
      return outcome.value;
    },
    close: () => drop(new Error('the replay ended')),
  };
}

/** How many bytes at the end of `bytes` do not make a whole command (0: they end on one; all of them: not RESP). */
function unframed(bytes: Buffer): number {
  const framer = new CommandFramer();
  let rest = bytes;
  while (rest.length > 0) {
    let end: number;
    try {
      end = framer.end(rest);
    } catch {
      return rest.length;
    }
    if (end <= 0) return rest.length;
    rest = rest.subarray(end);
  }
  return 0;
}
