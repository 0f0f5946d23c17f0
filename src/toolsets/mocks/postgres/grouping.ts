import { serialize } from 'pg-protocol';
import { TimeSlice } from '../../../core/wait.js';
import { keployTime } from '../keploy/time.js';
import { KeptShare, RECORDING_KEPT_MAX_BYTES, WAITING_OVERHEAD_BYTES, type KeptBytes } from '../kept.js';
import { MAX_MOCK_EXCHANGE_BYTES } from '../protocol.js';
import { KEPLOY_MOCK_VERSION, type PostgresMock } from '../keploy/types.js';
import { decodeTyped, type FrontendMessage, type StartupMessage, type TypedMessage } from './frontend.js';
import { buildRequestPacket, ResponseBuilder, type PacketContext } from './keploy.js';
import { Auth, AUTH_NEEDS_ANSWER, Backend, Frontend } from './protocol.js';
import { authCodeOf, codeOf } from './wire.js';

/**
 * Turns one connection's parsed traffic into Keploy Postgres mocks, one per request group:
 * - the startup exchange: the StartupMessage, then each password/SASL message, each with the
 *   server messages up to the next authentication request the client must answer, or up to the
 *   first ReadyForQuery (`metadata.type: config`, as Keploy marks them);
 * - then every client message up to a Sync, a simple Query or a FunctionCall, with the server
 *   messages up to the ReadyForQuery that answers it (exactly one per Sync/Query/FunctionCall,
 *   so pipelined groups pair up in order). COPY data the client streams joins the group of the
 *   COPY it feeds; a Terminate is not a mock (nothing answers it).
 * A group whose answer never completes (the connection died) is dropped, as replaying it would hang.
 * Authentication secrets are not stored: passwords and SCRAM proofs are replaced by REDACTED
 * (replay accepts any credentials, so nothing needs them).
 */

export const REDACTED = 'debugkit-redacted';
/** A group holding more than this (a big result set) is relayed, not recorded: the one bound of every recorder. */
export const DEFAULT_MAX_MOCK_BYTES = MAX_MOCK_EXCHANGE_BYTES;

interface Group {
  config: boolean;
  requests: FrontendMessage[];
  responses: Buffer[];
  /** The answer's typed fields, built in slices as its messages arrive. */
  answer?: ResponseBuilder;
  /** Reading the answer's messages is waiting for a turn (or running). */
  reading?: boolean;
  bytes: number;
  startedAt: Date;
  endedAt?: Date;
  /** The authentication request a `p` answered. */
  authCode?: number;
  tooLarge?: boolean;
  /** Why it is not recorded, past a bound: its own size, or the recording's budget. */
  why?: string;
  /** What it holds of the recording's budget (kept.ts). */
  charged: number;
}

export interface GrouperOptions {
  onMock(mock: PostgresMock): void;
  /** A group relayed whole but not recorded, and why (counted in the answer). */
  onDropped?(why: string): void;
  onError?(err: unknown): void;
  connectionId?: string;
  /** `host:port` of the server, written as `metadata.host` (Keploy ignores unknown metadata). */
  host?: string;
  maxMockBytes?: number;
  utcOffsetMinutes?: number;
  /** The session is past its startup (a replayed one whose misses are recorded): every group is a query group. */
  afterStartup?: boolean;
  /** The recording's budget for calls not finished yet (kept.ts): groups awaiting their answer are charged to it. */
  kept?: KeptBytes;
}

/** A connection's answers are read in slices of this long (ms) at most, the loop's other work between. */
const SLICE_MS = 10;
/**
 * And of this many messages at most (a connection's data in one turn can be many chunks): so a
 * small answer is read at once, as it comes, and a big one in a number of turns that does not
 * depend on the host's speed.
 */
export const MESSAGES_PER_TURN = 4096;

type Task = (late: () => boolean) => boolean;

export class RequestGrouper {
  private open: Group | undefined;
  private readonly slice = new TimeSlice(SLICE_MS);
  /** Work waiting for a turn, in order: reading answers and giving the mocks they end (in the order they ended). */
  private readonly tasks: Task[] = [];
  private readonly waiters: Array<() => void> = [];
  /** Messages read in this turn (reset by the next). */
  private spent = 0;
  private readonly waiting: Group[] = [];
  private authenticating = true;
  private authCode = 0;
  private startupLength = 0;
  mocks = 0;
  private readonly share: KeptShare;

  constructor(private readonly options: GrouperOptions) {
    if (options.afterStartup) this.authenticating = false;
    this.share = new KeptShare(options.kept);
  }

  /** The connection is gone: what its unfinished groups held goes back to the budget. */
  close(): void {
    this.share.release();
  }

  /** Resolves once every mock of a group already answered has been given. */
  settled(): Promise<void> {
    return this.tasks.length === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Runs `task` now if nothing waits and this turn's messages are not spent, else (the rest of it) after what waits. */
  private later(task: Task): void {
    if (this.tasks.length === 0 && this.attempt(task, () => this.spend())) return;
    this.tasks.push(task);
    if (this.tasks.length === 1) void this.drain();
  }

  /** Counts one message read in this turn: true when this turn's are spent. */
  private spend(): boolean {
    if (this.spent === 0) setImmediate(() => (this.spent = 0));
    return ++this.spent > MESSAGES_PER_TURN;
  }

  private attempt(task: Task, late: () => boolean): boolean {
    try {
      return task(late);
    } catch (err) {
      this.options.onError?.(err);
      return true;
    }
  }

  private async drain(): Promise<void> {
    const late = () => this.spend() || this.slice.over();
    while (this.tasks.length > 0) {
      await this.slice.next();
      this.slice.restart();
      this.spent = 0;
      do {
        if (!this.attempt(this.tasks[0]!, late)) break;
        this.tasks.shift();
      } while (this.tasks.length > 0 && !this.slice.over());
    }
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  /** Reads `group`'s answer in slices, as its messages come. */
  private read(group: Group): void {
    const answer = group.answer;
    if (!answer || group.reading) return;
    group.reading = true;
    this.later((late) => {
      const done = answer.run(late);
      if (done) group.reading = false;
      return done;
    });
  }

  private stopped = false;

  /**
   * The recording's budget has no room for this connection's groups awaiting answers: nothing more
   * of the connection is recorded (the traffic goes on), and what it held is let go.
   */
  private stopRecording(): void {
    this.stopped = true;
    for (const g of [...this.waiting, this.open]) g?.answer?.abandon();
    const pending = this.waiting.length + (this.open ? 1 : 0);
    this.waiting.length = 0;
    this.open = undefined;
    this.share.release();
    const why = `${pending} PostgreSQL requests awaiting answers, past the ${RECORDING_KEPT_MAX_BYTES} bytes a recording keeps of calls not finished: the rest of the connection was relayed, not recorded`;
    if (this.options.onDropped) this.options.onDropped(why);
    else this.options.onError?.(new Error(why));
  }

  startup(m: StartupMessage): void {
    if (this.stopped) return;
    this.startupLength = m.raw.length;
    this.waiting.push(newGroup(true, m));
  }

  frontend(m: TypedMessage): void {
    if (this.stopped) return;
    if (this.authenticating) {
      if (m.type === Frontend.Password) this.waiting.push({ ...newGroup(true, redact(m, this.authCode)), authCode: this.authCode });
      return;
    }
    if (m.type === Frontend.Terminate) return;
    if (m.type === Frontend.CopyData || m.type === Frontend.CopyDone || m.type === Frontend.CopyFail) {
      const feeding = this.waiting[this.waiting.length - 1] ?? this.open;
      if (feeding) this.add(feeding, m);
      return;
    }
    if (!this.open) this.open = newGroup(false);
    this.add(this.open, m);
    if (m.type === Frontend.Sync || m.type === Frontend.Query || m.type === Frontend.FunctionCall) {
      this.waiting.push(this.open);
      this.open = undefined;
    }
  }

  backend(raw: Buffer): void {
    if (this.stopped) return;
    // Answers go to the oldest group still waiting; before its Sync (after a Flush) to the open one.
    const group = this.waiting[0] ?? this.open;
    if (!group) return; // an asynchronous message outside any request (NOTIFY, a notice): not part of a mock
    this.add(group, raw);
    const c = codeOf(raw);
    if (this.authenticating) {
      if (c === Backend.Authentication) this.authCode = authCodeOf(raw);
      if (c === Backend.ReadyForQuery) this.authenticating = false;
      if ((c === Backend.Authentication && AUTH_NEEDS_ANSWER.has(this.authCode)) || c === Backend.ReadyForQuery || c === Backend.ErrorResponse) this.finish(group);
      return;
    }
    if (c === Backend.ReadyForQuery) this.finish(group);
  }

  private add(group: Group, item: FrontendMessage | Buffer): void {
    if (group.tooLarge) return;
    const size = Buffer.isBuffer(item) ? item.length : item.raw.length;
    group.bytes += size;
    const max = this.options.maxMockBytes ?? DEFAULT_MAX_MOCK_BYTES;
    // Groups awaiting answers from a server that never gives them must not pile up without bound (attack 18q: 185 MB of
    // small queries never answered filled a 4 GB heap): each is charged to the recording's budget, its objects included.
    const cost = size + (group.charged === 0 ? WAITING_OVERHEAD_BYTES : 0);
    if (group.bytes <= max && !this.share.take(cost)) return this.stopRecording();
    if (group.bytes > max) {
      group.why = `a PostgreSQL request and its answer over ${max} bytes (relayed, not recorded)`;
      group.tooLarge = true;
      this.share.give(group.charged);
      group.charged = 0;
      group.requests = [];
      group.responses = [];
      group.answer?.abandon();
      group.answer = undefined;
      return;
    }
    group.charged += cost;
    if (Buffer.isBuffer(item)) {
      group.responses.push(item);
      (group.answer ??= new ResponseBuilder(this.context())).add(item);
      this.read(group);
    } else group.requests.push(item);
  }

  private finish(group: Group): void {
    const i = this.waiting.indexOf(group);
    if (i >= 0) this.waiting.splice(i, 1);
    if (group === this.open) this.open = undefined;
    group.endedAt = new Date();
    this.share.give(group.charged);
    group.charged = 0;
    if (group.tooLarge) {
      const why = group.why ?? `a PostgreSQL request and its answer over ${this.options.maxMockBytes ?? DEFAULT_MAX_MOCK_BYTES} bytes (relayed, not recorded)`;
      if (this.options.onDropped) this.options.onDropped(why);
      else this.options.onError?.(new Error(why));
      return;
    }
    // After the answer's reading (queued before): its mock, then the next group's, in order.
    this.later(() => {
      const mock = this.toMock(group);
      this.mocks++;
      this.options.onMock(mock);
      return true;
    });
  }

  private context(): PacketContext {
    return { length: this.startupLength, ...(this.options.kept ? { budget: this.options.kept } : {}) };
  }

  private toMock(g: Group): PostgresMock {
    const ctx = { ...this.context(), authCode: g.authCode };
    const answer = g.answer ?? new ResponseBuilder(ctx);
    const metadata: Record<string, string> = g.config ? { type: 'config' } : {};
    if (this.options.host) metadata.host = this.options.host;
    const mock: PostgresMock = {
      version: KEPLOY_MOCK_VERSION,
      kind: 'Postgres',
      name: 'mocks',
      spec: {
        metadata,
        postgresrequests: [buildRequestPacket(g.requests, ctx)],
        postgresresponses: [answer.finish(g.responses)],
        reqtimestampmock: keployTime(g.startedAt, this.options.utcOffsetMinutes),
        restimestampmock: keployTime(g.endedAt ?? g.startedAt, this.options.utcOffsetMinutes),
      },
    };
    if (this.options.connectionId) mock.connectionId = this.options.connectionId;
    return mock;
  }
}

function newGroup(config: boolean, first?: FrontendMessage): Group {
  return { config, requests: first ? [first] : [], responses: [], bytes: first?.raw.length ?? 0, startedAt: new Date(), charged: 0 };
}

/** A `p` message with its secret replaced (SASL's first message only names the mechanism and a nonce). */
function redact(m: TypedMessage, authCode: number): TypedMessage {
  if (authCode === Auth.CleartextPassword || authCode === Auth.MD5Password) return decodeTyped(serialize.password(REDACTED));
  if (authCode === Auth.SASLContinue) return decodeTyped(serialize.sendSCRAMClientFinalMessage(REDACTED));
  return m;
}
