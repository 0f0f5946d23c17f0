import type { Duplex } from 'node:stream';
import { buildGenericMock, payloadBytes, previewBytes } from '../generic/format.js';
import type { GenericConnection } from '../generic/recorder.js';
import type { RedisMock } from '../keploy/types.js';
import { ByteQueue } from '../../../core/byte-queue.js';
import { TimeSlice } from '../../../core/wait.js';
import { pipeBoth } from '../proxy/pipe.js';
import { CommandFramer, commandArgs, commandEnd, describeCommand, encodeCommand, errorReply, isPush, redactArgs, RespError, RespFramer } from './resp.js';

/**
 * Redis as Keploy's `Redis` kind: one mock per command and its reply (`redisrequests` holds the
 * command, `redisresponses` the reply), framed by RESP so pipelined commands are told apart.
 *
 * Recording forwards the bytes unchanged and pairs replies with commands in order (Redis answers
 * in order). RESP3 pushes that arrive with no command waiting (pub/sub messages, invalidations)
 * join the previous mock's reply. Passwords (AUTH, HELLO ... AUTH, MIGRATE ... AUTH) are
 * written as `(redacted)`. Bytes that are not RESP stop the recording of that connection (the
 * traffic goes on).
 *
 * Replay answers each command with the recorded reply of the same command (same arguments,
 * passwords ignored), in recorded order when one repeats, the last answer repeating after that;
 * a command with no mock gets a RESP error naming the closest recorded command, which a Redis
 * client raises as an error, and the connection stays usable.
 */

export interface RecordRedisOptions {
  onMock(mock: RedisMock): void;
  onError?(err: unknown): void;
}

export interface RecordRedisResult {
  mocks: number;
  bytesUp: number;
  bytesDown: number;
  stoppedRecording?: string;
  error?: Error;
}

const MAX_BUFFERED = 64 * 1024 * 1024;

export function toRedisMock(request: Buffer, response: Buffer, startedAt: Date, endedAt: Date, host: string, connectionId?: string): RedisMock {
  const g = buildGenericMock({ request, response, startedAt, endedAt, host, ...(connectionId ? { connectionId } : {}) });
  const mock: RedisMock = {
    version: g.version,
    kind: 'Redis',
    name: g.name,
    spec: {
      metadata: g.spec.metadata,
      redisrequests: g.spec.genericrequests,
      redisresponses: g.spec.genericresponses,
      reqtimestampmock: g.spec.reqtimestampmock,
      restimestampmock: g.spec.restimestampmock,
    },
  };
  if (g.connectionId) mock.connectionId = g.connectionId;
  return mock;
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
  let open: { request: Buffer; replies: Buffer[]; at: Date; endedAt: Date } | undefined;
  let stopped = false;
  const stop = (why: string) => {
    stopped = true;
    result.stoppedRecording ??= why;
    up.clear();
    down.clear();
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
        waiting.push({ bytes: redacted ? encodeCommand(args) : Buffer.from(raw), at: new Date() });
        up.consume(end);
      }
      if (up.length > MAX_BUFFERED) stop('a command over 64 MiB');
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
        if (cmd) {
          emit();
          open = { request: cmd.bytes, replies: [reply], at: cmd.at, endedAt: new Date() };
        } else if (open) {
          open.replies.push(reply);
          open.endedAt = new Date();
        } else {
          // A reply before any command (a server greeting): an exchange with no request.
          open = { request: Buffer.alloc(0), replies: [reply], at: new Date(), endedAt: new Date() };
        }
      }
      if (down.length > MAX_BUFFERED) stop('a reply over 64 MiB');
    } catch (err) {
      stop(`the server sent bytes that are not RESP (${(err as Error).message}); the rest of the connection was not recorded`);
    }
  });
  const finish = () => emit();
  conn.client.once('close', finish);
  upstream.once('close', finish);
  return pipeBoth(conn.client, upstream, result);
}

// ---------------------------------------------------------------- replay

interface Entry {
  name: string;
  args: Buffer[];
  response: Buffer;
}

/** How many recorded commands a miss compares with at most, to name the closest. */
const CLOSEST_SCAN = 512;

/** Recorded replies by command (passwords ignored), shared by a program's connections. */
export class RedisIndex {
  private readonly byKey = new Map<string, { entries: Entry[]; next: number }>();
  /** By command name: every recorded command, and those by their first argument (the key, or a subcommand). */
  private readonly byName = new Map<string, { all: Entry[]; byFirst: Map<string, Entry[]> }>();
  readonly problems: string[] = [];
  /** How many recorded commands it holds. */
  size = 0;

  constructor(mocks: readonly RedisMock[] = []) {
    for (const mock of mocks) this.addMock(mock);
  }

  /** The index of a large set, built in slices that leave the event loop to others' work. */
  static async build(mocks: readonly RedisMock[], slice: TimeSlice): Promise<RedisIndex> {
    const index = new RedisIndex();
    for (const mock of mocks) {
      await slice.pause();
      index.addMock(mock);
    }
    return index;
  }

  private addMock(mock: RedisMock): void {
    try {
      const request = payloadBytes(mock.spec.redisrequests);
      if (request.length === 0) return; // a greeting: Redis servers send none
      const end = commandEnd(request, 0);
      if (end !== request.length) throw new RespError('the request is not exactly one command');
      const args = redactArgs(commandArgs(request)).args;
      this.add({ name: mock.name, args, response: payloadBytes(mock.spec.redisresponses) });
      this.size++;
    } catch (err) {
      this.problems.push(`${mock.name}: ${(err as Error).message}`);
    }
  }

  /** Adds an answer (a mock recorded during replay); it answers the next repeats. */
  add(entry: Entry): void {
    const key = keyOf(entry.args);
    const slot = this.byKey.get(key);
    if (slot) slot.entries.push(entry);
    else this.byKey.set(key, { entries: [entry], next: 0 });
    const name = entry.args[0]?.toString('latin1').toUpperCase() ?? '';
    let same = this.byName.get(name);
    if (!same) this.byName.set(name, (same = { all: [], byFirst: new Map() }));
    same.all.push(entry);
    const first = entry.args[1]?.toString('latin1');
    if (first !== undefined) {
      const list = same.byFirst.get(first);
      if (list) list.push(entry);
      else same.byFirst.set(first, [entry]);
    }
  }

  /** The next recorded answer to `args` (the last one again once all were used). */
  answer(args: readonly Buffer[]): { entry: Entry; reused: boolean } | undefined {
    const slot = this.byKey.get(keyOf(args));
    if (!slot) return undefined;
    const reused = slot.next >= slot.entries.length;
    const entry = slot.entries[Math.min(slot.next, slot.entries.length - 1)]!;
    slot.next++;
    return { entry, reused };
  }

  /**
   * The recorded command most like `args`: the same name, then the same first argument (the key)
   * when one was recorded, then the most equal arguments in the same places (the first recorded
   * wins a tie). Looked for among at most CLOSEST_SCAN commands, so that a miss costs the same
   * whatever the size of the set.
   */
  closest(args: readonly Buffer[]): Entry | undefined {
    const same = this.byName.get(args[0]?.toString('latin1').toUpperCase() ?? '');
    if (!same) return undefined;
    const candidates = (args[1] !== undefined ? same.byFirst.get(args[1].toString('latin1')) : undefined) ?? same.all;
    let best: Entry | undefined;
    let bestScore = -1;
    for (let c = 0; c < Math.min(candidates.length, CLOSEST_SCAN); c++) {
      const e = candidates[c]!;
      let score = e.args.length === args.length ? 1 : 0;
      for (let i = 1; i < Math.min(e.args.length, args.length); i++) if (e.args[i]!.equals(args[i]!)) score += 2;
      if (score > bestScore) [best, bestScore] = [e, score];
    }
    return best;
  }
}

function keyOf(args: readonly Buffer[]): string {
  return args.map((a, i) => (i === 0 ? a.toString('latin1').toUpperCase() : a.toString('latin1'))).join('\u0000');
}

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
    client.once('close', () => resolve());
    client.resume();
  });
}

/**
 * One connection to the real Redis server for a replayed session's misses: opened on the first
 * miss, the session's state commands sent first (their replies dropped), then each missed
 * command, its reply read by RESP framing. Bounded: each reply within `timeoutMs`.
 */
export function redisFetcher(connect: () => Promise<Duplex>, timeoutMs = 10_000): { fetch: (command: Buffer, state: readonly Buffer[]) => Promise<Buffer>; close: () => void } {
  let socket: Duplex | undefined;
  const buf = new ByteQueue();
  const replies = new RespFramer();
  let waiting: { skip: number; resolve: (b: Buffer) => void; reject: (e: Error) => void } | undefined;
  let sent = 0;
  const onData = (chunk: Buffer) => {
    buf.push(chunk);
    try {
      for (let end = waiting ? replies.end(buf.view()) : -1; end > 0 && waiting; end = waiting ? replies.end(buf.view()) : -1) {
        const reply = Buffer.from(buf.view().subarray(0, end));
        buf.consume(end);
        if (waiting.skip > 0) waiting.skip--;
        else {
          const w = waiting;
          waiting = undefined;
          w.resolve(reply);
        }
      }
    } catch (err) {
      waiting?.reject(err as Error);
      socket?.destroy();
    }
  };
  return {
    async fetch(command, state) {
      if (!socket) {
        socket = await connect();
        socket.on('data', onData);
        socket.on('error', (err) => waiting?.reject(err));
        socket.on('close', () => waiting?.reject(new Error('the server closed the connection')));
      }
      const fresh = state.slice(sent);
      sent = state.length;
      return await new Promise<Buffer>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no reply within ${timeoutMs} ms`)), timeoutMs);
        waiting = {
          skip: fresh.length,
          resolve: (b) => (clearTimeout(timer), resolve(b)),
          reject: (e) => (clearTimeout(timer), reject(e)),
        };
        socket!.write(Buffer.concat([...fresh, command]));
      });
    },
    close: () => socket?.destroy(),
  };
}
