import { randomInt } from 'node:crypto';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { serialize } from 'pg-protocol';
import { TimeSlice } from '../../../core/wait.js';
import type { PostgresMock } from '../keploy/types.js';
import { KeptShare, type KeptBytes } from '../kept.js';
import { ReplayIndex } from './matcher.js';
import { decodeTyped, FrontendParser, PgProtocolError, type BindMessage, type FrontendMessage, type ParseMessage, type StartupMessage, type TypedMessage } from './frontend.js';
import { RequestGrouper } from './grouping.js';
import { Auth, Backend, ENCRYPTION_REFUSED, Frontend, Target, TxStatus } from './protocol.js';
import type { PostgresConnection } from './recorder.js';
import { QuerySession, type GroupEnd, type SessionEvents } from './session.js';
import { PostgresUpstream, UpstreamError } from './upstream.js';
import { backend, codeOf } from './wire.js';

/**
 * Serves one client connection from recorded mocks, with no database behind it: a small
 * PostgreSQL-speaking server.
 *
 * - SSLRequest / GSSENCRequest: answered 'N' (no TLS), as the recorder did.
 * - Startup: AuthenticationOk straight away, whatever the client's credentials and whatever
 *   authentication the recording went through (replay has no secrets to check against); then
 *   the recorded ParameterStatus set (defaults when the set has no startup mock), BackendKeyData
 *   and ReadyForQuery 'I'. A client asking for protocol 3.x, x > 0, is told 3.0. With `upstream`
 *   (misses pass through) and a recording whose server asked for a password, the client is first
 *   asked for its password (cleartext request), for the real server (see upstream.ts).
 * - Queries: matched on their text and parameter values, never on statement names (see
 *   matcher.ts); the same query+parameters recorded several times is replayed in recorded order,
 *   the last answer repeating after that. A miss is an ErrorResponse (SQLSTATE XX000, "debugkit:
 *   no recorded mock for query: ... (closest: mock-N: ...)") then ReadyForQuery, and `onMiss`;
 *   with `upstream`, the request group it is in goes to the real server instead (`Passthrough`).
 * - Answers are held until the request group ends (Sync, Query, Flush) and written at once, or
 *   once MAX_HELD_BYTES of them are held (as a server writes when its output buffer is full).
 * - A burst of requests (a pipelined client) is answered in slices of SLICE_MS, yielding to the
 *   event loop between them (the client is paused meanwhile): other clients are not held. The
 *   index of a big set is built in such slices too, before the client is read.
 * - CancelRequest: ignored (its connection is closed); Terminate closes the connection.
 *
 * Pass a `ReplayIndex` instead of the mocks to share replay order across a client's connections.
 */

export interface ReplayPostgresOptions extends SessionEvents {
  /** A client that stops speaking the protocol (the connection is closed after a FATAL error). */
  onError?(err: unknown): void;
  /** The connection's start-up was answered from the set's start-up (`type: config`) mocks. */
  onStartup?(): void;
  /** passthrough / record: misses go to the real server (see upstream.ts) instead of failing. */
  upstream?: UpstreamOptions;
  /** The replay's budget for calls not finished (kept.ts): the client's bytes of a message not whole yet are charged to it. */
  kept?: KeptBytes;
}

export interface UpstreamOptions {
  /** Opens a connection to the recorded destination. */
  connect(): Promise<Duplex>;
  /** `host:port`, for messages and the recorded mocks' metadata. */
  where: string;
  /** A missed request group the real server answered. */
  onForwarded?(forwarded: Forwarded): void;
  /**
   * record: the exchange as a Keploy mock (it also replays on this index from now on). `false`
   * when it was not kept (past what a set may hold): then not on the index either.
   */
  record?(mock: PostgresMock): unknown;
  /** record: a missed group relayed but not recorded (over the size bound), and why. */
  dropped?(why: string): void;
  /** The connection id written on recorded mocks. */
  connectionId?: string;
  /** The replay's budget for calls not finished (kept.ts): what the real server's answer holds is charged to it (upstream.ts). */
  kept?: KeptBytes;
  /** How long the real server may take to answer one request group (default UPSTREAM_TIMEOUT_MS). */
  timeoutMs?: number;
}

export interface Forwarded {
  /** The first query of the group no mock answered. */
  query: string;
}

export interface ReplayPostgresResult {
  matched: number;
  missed: number;
  /** Request groups the real server answered (passthrough / record). */
  forwarded: number;
  error?: Error;
}

/** What a replayed server reports when the recording has no startup mock. */
export const DEFAULT_PARAMETER_STATUS: ReadonlyArray<readonly [string, string]> = [
  ['application_name', ''],
  ['client_encoding', 'UTF8'],
  ['DateStyle', 'ISO, MDY'],
  ['integer_datetimes', 'on'],
  ['IntervalStyle', 'postgres'],
  ['is_superuser', 'on'],
  ['server_encoding', 'UTF8'],
  ['server_version', '15.0'],
  ['standard_conforming_strings', 'on'],
  ['TimeZone', 'UTC'],
];

/** Answers held beyond this are written before their group ends (a Bind/Execute stream with no Sync). */
export const MAX_HELD_BYTES = 1024 * 1024;
/** Requests of a burst are answered for this long (ms) before the event loop gets a turn. */
export const SLICE_MS = 10;

/** Replays one connection; resolves once it is closed. */
export function replayPostgres(conn: PostgresConnection, mocks: readonly PostgresMock[] | ReplayIndex, options: ReplayPostgresOptions = {}): Promise<ReplayPostgresResult> {
  const index = mocks instanceof ReplayIndex ? mocks : new ReplayIndex(mocks);
  const { client } = conn;
  if (client instanceof Socket) client.setNoDelay(true);
  const result: ReplayPostgresResult = { matched: 0, missed: 0, forwarded: 0 };
  /** Answers of the group in progress; written at its end (Sync, Query, Flush), in one write. */
  let held: Buffer[] = [];
  let heldBytes = 0;
  const hold = (raw: Buffer) => {
    held.push(raw);
    heldBytes += raw.length;
  };
  const session = new QuerySession(index, hold, options, options.upstream !== undefined);
  const parser = new FrontendParser();
  const passthrough = options.upstream ? new Passthrough(options.upstream, session, index, hold) : undefined;
  let ended = false;
  let clientEnded = false;
  /** Messages not handled yet: they wait while the real server answers a forwarded group. */
  let queue: FrontendMessage[] = [];
  let next = 0;
  let waiting = false;
  /** The client is paused until what it wrote has been read (`drain`). */
  let draining = false;
  /** A burst is being answered in slices: the next one is scheduled. */
  let slicing = false;
  /** The index is being built (in slices): nothing is read from the client meanwhile. */
  let building = true;
  /** passthrough: waiting for the client's password (see startup). */
  let startupMessage: StartupMessage | undefined;

  /** Writes what is held; false when the client is to be paused until it drains. */
  const write = (): boolean => {
    if (held.length === 0 || client.destroyed) return true;
    const ok = client.write(held.length === 1 ? held[0]! : Buffer.concat(held));
    held = [];
    heldBytes = 0;
    // Answers only follow requests: holding the requests back is the backpressure.
    if (!ok && !draining) {
      draining = true;
      client.pause();
      client.once('drain', () => {
        draining = false;
        resume();
      });
    }
    return ok;
  };
  /** Reads from the client again, unless something else holds it. */
  const resume = () => {
    if (!building && !waiting && !draining && !slicing && !ended) client.resume();
  };
  const end = () => {
    if (ended) return;
    ended = true;
    write();
    passthrough?.close();
    client.end();
  };
  const fatal = (err: unknown) => {
    options.onError?.(err);
    held.push(backend.error({ S: 'FATAL', V: 'FATAL', C: '08P01', M: `debugkit: ${(err as Error).message}` }));
    end();
  };
  /** Handles one message; false when the rest must wait for the real server. */
  const handle = (m: FrontendMessage): boolean => {
    if (m.type === 'ssl' || m.type === 'gssenc') {
      held.push(Buffer.from(ENCRYPTION_REFUSED));
      write();
      return true;
    }
    if (m.type === 'cancel' || m.type === Frontend.Terminate) {
      end();
      return true;
    }
    if (m.type === 'startup') {
      // Misses may reach the real server, which asked the recording for a password: ask the program for it.
      if (passthrough && index.startup.passwordAsked) {
        startupMessage = m;
        held.push(backend.authentication(Auth.CleartextPassword));
      } else {
        passthrough?.started(m, undefined);
        startup(m, index, hold);
        options.onStartup?.();
      }
      write();
      return true;
    }
    if (startupMessage) {
      if (m.type !== Frontend.Password) throw new PgProtocolError(`expected a password message, got '${m.type}'`);
      const password = m.body.toString('utf8', 0, Math.max(0, m.body.indexOf(0)));
      passthrough!.started(startupMessage, password);
      startup(startupMessage, index, hold);
      options.onStartup?.();
      startupMessage = undefined;
      write();
      return true;
    }
    if (!passthrough) {
      if (dispatch(session, m) === 'done' || m.type === Frontend.Flush || heldBytes >= MAX_HELD_BYTES) write();
      return true;
    }
    passthrough.note(m);
    const groupEnd = dispatch(session, m);
    if (groupEnd === 'forward') {
      // What mocks answered of this group (since its last Sync or Flush) is answered again by the real server.
      held = [];
      heldBytes = 0;
      waiting = true;
      client.pause();
      void passthrough.forward().then(
        () => {
          waiting = false;
          write();
          resume();
          pump();
        },
        (err) => fatal(err),
      );
      return false;
    }
    if (m.type === Frontend.Flush && session.forwardedQuery !== undefined) {
      // The client waits for answers before its Sync: the group cannot go to the real server whole.
      session.abandonForward('the client asked for answers (Flush) before the end of the request group (Sync); only whole groups can be passed through');
    }
    // Too much held before the group's end (and no miss yet to forward): written as at a Flush.
    const full = heldBytes >= MAX_HELD_BYTES && session.forwardedQuery === undefined;
    if (groupEnd === 'done' || m.type === Frontend.Flush || full) {
      passthrough.answered();
      write();
    }
    return true;
  };
  /** The slice requests are answered in: begun again at each pump (one per connection, not one per chunk read). */
  const slice = new TimeSlice(SLICE_MS);
  const pump = () => {
    if (slicing) return; // the scheduled slice goes on, in order
    slice.restart();
    try {
      while (!waiting && !ended && next < queue.length) {
        if (slice.over()) {
          // The rest of the burst waits for the next turn of the event loop, and the client with it.
          slicing = true;
          client.pause();
          void slice.next().then(() => {
            slicing = false;
            pump();
          });
          return;
        }
        const m = queue[next++]!;
        if (!handle(m)) break;
      }
    } catch (err) {
      fatal(err);
    }
    if (next >= queue.length) {
      queue = [];
      next = 0;
      if (clientEnded) end();
      else resume();
    }
  };

  // Nothing is read before the index is built: a 'data' listener alone would start the flow.
  client.pause();
  // The bytes of a message not whole yet are charged to the replay's budget for calls not finished, shared by its connections,
  // as MySQL's and Redis's are: 12 connections each holding 63 MB of one message held 755 MB (attack 18ao d2-2).
  const share = new KeptShare(options.kept);
  client.on('data', (chunk: Buffer) => {
    if (ended) return;
    if (!share.take(chunk.length)) {
      return fatal(
        new Error(
          `the client's bytes of messages not whole yet (${parser.buffered + chunk.length}) went over what a replay holds of calls not finished (${options.kept?.limit ?? 0} bytes per replay, shared by its connections, under the server's budget): the connection was closed`,
        ),
      );
    }
    let messages: FrontendMessage[];
    try {
      messages = parser.push(chunk);
    } catch (err) {
      return fatal(err);
    }
    share.downTo(parser.buffered);
    if (queue.length === 0) queue = messages;
    else queue.push(...messages);
    pump();
  });
  client.on('end', () => {
    clientEnded = true;
    if (!waiting) pump();
  });
  return new Promise((resolve) => {
    client.on('error', (err) => (result.error ??= err));
    client.once('close', () => {
      share.release();
      // A message cut off by the close was sent and never answered: a miss, as HTTP's and Redis's (attack 18aj r1-2).
      if (parser.buffered > 0) session.cutOff(parser.buffered);
      passthrough?.close();
      resolve({ ...result, matched: session.matched, missed: session.missed, forwarded: passthrough?.count ?? 0 });
    });
    // A big set's index is built in slices first (19,000 mocks: 200 ms), the client waiting meanwhile.
    index.ready(new TimeSlice(SLICE_MS)).then(
      () => {
        building = false;
        resume();
      },
      (err: unknown) => {
        building = false;
        fatal(err);
      },
    );
  });
}

/**
 * passthrough / record: the client's statements and portals as it defined them (whoever
 * answered), the messages of the group in progress, and the real server they go to when the
 * group misses. A forwarded group first gets the Parse (and Bind) of each statement (portal) it
 * uses that the real server does not have yet, since mocks answered those; their answers are
 * not the client's and are dropped. The real server runs without the client's transaction (it
 * began among mocks): its ReadyForQuery status is replaced by the one replay has told the client.
 */
class Passthrough {
  count = 0;
  private upstream: PostgresUpstream | undefined;
  private broken: string | undefined;
  private group: TypedMessage[] = [];
  private readonly statements = new Map<string, ParseMessage>();
  private readonly portals = new Map<string, BindMessage>();
  /** What the real server has: statement name → the Parse it got. */
  private readonly upstreamStatements = new Map<string, Buffer>();
  private readonly grouper: RequestGrouper | undefined;
  private recorded = 0;
  /** The first missed query of the group the real server is answering now. */
  private pending: string | undefined;
  /** The program's connection is gone: a forward still under way was counted then, and is not again. */
  private ended = false;

  constructor(
    private readonly options: UpstreamOptions,
    private readonly session: QuerySession,
    private readonly index: ReplayIndex,
    private readonly hold: (raw: Buffer) => void,
  ) {
    const record = options.record;
    if (record) {
      this.grouper = new RequestGrouper({
        afterStartup: true,
        host: options.where,
        connectionId: options.connectionId,
        onMock: (mock) => {
          if (record(mock) !== false) this.index.add(mock, `recorded-${++this.recorded}`);
        },
        ...(options.dropped ? { onDropped: options.dropped } : {}),
      });
    }
  }

  started(m: StartupMessage, password: string | undefined): void {
    const { kept, timeoutMs } = this.options;
    this.upstream = new PostgresUpstream(this.options.connect, m, password, this.options.where, { ...(kept ? { kept } : {}), ...(timeoutMs !== undefined ? { timeoutMs } : {}) });
  }

  /** Notes a message of the current group. */
  note(m: TypedMessage): void {
    this.group.push(m);
  }

  /** The group was answered from mocks: the client's definitions stand, the real server's may be stale. */
  answered(): void {
    for (const m of this.group) this.define(m);
    this.group = [];
  }

  async forward(): Promise<void> {
    const query = this.session.forwardedQuery ?? '';
    const group = this.group;
    this.group = [];
    if (group.at(-1)?.type === Frontend.Flush) group.pop();
    const end = group.at(-1)?.type;
    if (end !== Frontend.Sync && end !== Frontend.Query && end !== Frontend.FunctionCall) group.push(decodeTyped(SYNC));
    const prelude = this.prelude(group);
    for (const m of group) this.define(m);
    const requests = [...prelude, ...group];
    let answers: Buffer[];
    this.pending = query;
    try {
      if (this.broken) throw new UpstreamError(this.broken);
      answers = await this.upstream!.exchange(requests.map((m) => m.raw));
    } catch (err) {
      if (this.ended) return;
      if (!(err instanceof UpstreamError)) throw err;
      this.broken ??= err.message;
      this.upstream?.close();
      return this.session.forwardFailed(query, err.message);
    } finally {
      this.pending = undefined;
    }
    if (this.ended) return;
    for (const m of group) {
      if (m.type === Frontend.Parse) this.upstreamStatements.set(m.name, m.raw);
      if (m.type === Frontend.Close && m.target === Target.Statement) this.upstreamStatements.delete(m.name);
    }
    // The prelude's own answers (ParseComplete, BindComplete, CloseComplete) are not the client's.
    let skip = 0;
    while (skip < prelude.length && PRELUDE_ANSWERS.has(codeOf(answers[skip]!))) skip++;
    const errored = answers.some((raw) => codeOf(raw) === Backend.ErrorResponse);
    const real = this.upstream!.status;
    const told = this.session.transactionStatus;
    const status = real !== TxStatus.Idle ? real : errored && told !== TxStatus.Idle ? TxStatus.Failed : told;
    answers[answers.length - 1] = backend.readyForQuery(status);
    for (const raw of answers.slice(skip)) this.hold(raw);
    this.session.forwarded(status);
    this.count++;
    this.options.onForwarded?.({ query });
    if (this.grouper) {
      for (const m of requests) this.grouper.frontend(m);
      for (const raw of answers) this.grouper.backend(raw);
      // A large answer's rows are read in slices: its mock is in the set (and matched) before the next request is forwarded or the run ends.
      await this.grouper.settled();
    }
  }

  close(): void {
    // A group the real server had not answered when the program's connection went (attack 18ah o1-3: the
    // program timed out waiting, and the replay said no miss): a miss, counted now, before the replay reports.
    if (this.pending !== undefined && !this.ended) this.session.forwardFailed(this.pending, 'the program closed its connection before the real server answered it');
    this.ended = true;
    this.upstream?.close();
    this.grouper?.close();
  }

  private define(m: TypedMessage): void {
    if (m.type === Frontend.Parse) this.statements.set(m.name, m);
    else if (m.type === Frontend.Bind) this.portals.set(m.portal, m);
    else if (m.type === Frontend.Close) (m.target === Target.Statement ? this.statements : this.portals).delete(m.name);
  }

  /** What the real server needs before the group: the statements and portals it uses that mocks defined. */
  private prelude(group: readonly TypedMessage[]): TypedMessage[] {
    const out: TypedMessage[] = [];
    const parsed = new Set<string>();
    const bound = new Set<string>();
    const statement = (name: string) => {
      if (parsed.has(name)) return;
      parsed.add(name);
      const want = this.statements.get(name);
      const have = this.upstreamStatements.get(name);
      if (!want || (have && have.equals(want.raw))) return;
      if (name !== '' && have) out.push(decodeTyped(serialize.close({ type: Target.Statement, name })));
      out.push(want);
      this.upstreamStatements.set(name, want.raw);
    };
    for (const m of group) {
      if (m.type === Frontend.Parse) {
        if (m.name !== '' && this.upstreamStatements.has(m.name) && !parsed.has(m.name)) out.push(decodeTyped(serialize.close({ type: Target.Statement, name: m.name })));
        parsed.add(m.name);
      } else if (m.type === Frontend.Bind) {
        statement(m.statement);
        bound.add(m.portal);
      } else if (m.type === Frontend.Describe && m.target === Target.Statement) statement(m.name);
      else if ((m.type === Frontend.Describe && m.target === Target.Portal) || m.type === Frontend.Execute) {
        const name = m.type === Frontend.Execute ? m.portal : m.name;
        const bind = this.portals.get(name);
        if (bound.has(name) || !bind) continue;
        statement(bind.statement);
        out.push(bind);
        bound.add(name);
      }
    }
    return out;
  }
}

const SYNC = Buffer.from([Frontend.Sync.charCodeAt(0), 0, 0, 0, 4]);
const PRELUDE_ANSWERS = new Set<string>([Backend.ParseComplete, Backend.BindComplete, Backend.CloseComplete]);

function startup(m: StartupMessage, index: ReplayIndex, send: (raw: Buffer) => void): void {
  const minor = m.protocolVersion & 0xffff;
  const options = Object.keys(m.parameters).filter((k) => k.startsWith('_pq_.'));
  if (minor > 0 || options.length > 0) send(backend.negotiateProtocolVersion(0, options));
  send(backend.authenticationOk());
  const status = index.startup.parameterStatus.length > 0 ? index.startup.parameterStatus : DEFAULT_PARAMETER_STATUS;
  for (const [name, value] of status) send(backend.parameterStatus(name, value));
  const key = index.startup.backendKey ?? { processId: randomInt(1, 2 ** 31 - 1), secretKey: randomInt(1, 2 ** 31 - 1) };
  send(backend.backendKeyData(key.processId, key.secretKey));
  send(backend.readyForQuery(TxStatus.Idle));
}

function dispatch(session: QuerySession, m: FrontendMessage): GroupEnd | undefined {
  if (session.skipping && m.type !== Frontend.Sync) return;
  switch (m.type) {
    case Frontend.Parse:
      session.parse(m);
      return;
    case Frontend.Bind:
      session.bind(m);
      return;
    case Frontend.Describe:
      session.describe(m);
      return;
    case Frontend.Execute:
      session.execute(m);
      return;
    case Frontend.Close:
      session.close(m.target, m.name);
      return;
    case Frontend.Sync:
      return session.sync();
    case Frontend.Query:
      return session.query(m);
    case Frontend.FunctionCall:
      return session.functionCall();
    case Frontend.CopyDone:
    case Frontend.CopyFail:
      session.copyEnded();
      return 'done';
    // Flush: the caller writes what is held. Password/SASL after AuthenticationOk and COPY data: nothing to answer.
  }
  return undefined;
}
