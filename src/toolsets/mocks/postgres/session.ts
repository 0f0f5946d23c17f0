import type { ReplayIndex, Execution } from './matcher.js';
import { formatsFor, type BindMessage, type DescribeMessage, type ExecuteMessage, type ParseMessage, type QueryMessage } from './frontend.js';
import type { Closest } from './similar.js';
import { convertValue } from './values.js';
import { backend, codeOf, dataRowValues, rowFields, type FieldSpec } from './wire.js';
import { Backend, Target, TargetCode, TxStatus } from './protocol.js';

/**
 * The query part of a replayed connection: answers each client message the way the recorded
 * server answered the same query (see matcher.ts), tracking the client's own statements and
 * portals so their names never matter. After an error it skips to Sync, as a server does.
 */

/** SQLSTATE of a replay miss: XX000 (internal_error), which every driver surfaces as a plain error. */
export const MISS_SQLSTATE = 'XX000';
/** A missed query is quoted in its error up to this many characters (a query may be 64 MiB). */
export const QUOTED_QUERY = 2000;

/** Most parameters a statement has: the protocol counts them in an (unsigned) Int16. */
export const MAX_PARAMETERS = 65535;

const quoted = (query: string) => (query.length > QUOTED_QUERY ? `${query.slice(0, QUOTED_QUERY)}... (${query.length} characters)` : query);

export interface ReplayMatch {
  mock: string;
  query: string;
}
export interface ReplayMiss {
  query: string;
  /** The parameters as compared (`'text'`, NULL, binary:hex), when the query itself was recorded. */
  parameters?: string[];
  closest?: Closest;
  /** The message sent to the client. */
  message: string;
}
export interface SessionEvents {
  onMatch?(match: ReplayMatch): void;
  onMiss?(miss: ReplayMiss): void;
}

/** What ends a request group: answered ('done'), or to be sent to the real server ('forward', passthrough/record). */
export type GroupEnd = 'done' | 'forward';

interface Portal {
  query: string;
  keys: string[];
  /** `ReplayIndex.runKey` of the query and keys. */
  runKey: string;
  resultFormats: number[];
}

export class QuerySession {
  matched = 0;
  missed = 0;
  private readonly statements = new Map<string, { query: string; paramTypes: number[] }>();
  private readonly portals = new Map<string, Portal>();
  private readonly descriptions = new Map<string, Buffer>();
  /** Skipping to Sync after an error. */
  private failed = false;
  private missedInGroup = false;
  private txStatus: string = TxStatus.Idle;
  /** Status of the recorded group whose answers this group replayed. */
  private groupStatus: string | undefined;
  /** COPY FROM STDIN: the recorded answers that follow the client's CopyDone. */
  private afterCopy: Buffer[] | undefined;
  /** The group missed and misses go to the real server: answer nothing more of it, forward it at its end. */
  private forwarding: string | undefined;
  /** The last RowDescription described, and its fields (see fieldsOf). */
  private lastRow: Buffer | undefined;
  private lastRowFields: readonly FieldSpec[] = [];

  /** @param forwardMisses passthrough/record: a miss makes its group 'forward' instead of an error. */
  constructor(
    private readonly index: ReplayIndex,
    private readonly send: (raw: Buffer) => void,
    private readonly events: SessionEvents,
    private readonly forwardMisses = false,
  ) {}

  /** The first missed query of the group being forwarded. */
  get forwardedQuery(): string | undefined {
    return this.forwarding;
  }

  /** The real server answered the forwarded group: it ended in this transaction status. */
  forwarded(txStatus: string): void {
    this.txStatus = txStatus;
    this.failed = false;
    this.missedInGroup = false;
    this.groupStatus = undefined;
    this.forwarding = undefined;
  }

  /** The group cannot be forwarded after all: its miss is an error, as with `onMiss: fail`. */
  abandonForward(why: string): void {
    const query = this.forwarding ?? '';
    this.forwarding = undefined;
    this.reportMiss(query, `debugkit: no recorded mock for query: ${quoted(query)}, and it cannot be passed through: ${why}`);
    this.failed = true;
    this.missedInGroup = true;
  }

  /**
   * The real server could not answer the forwarded group: it fails as a miss does, saying why,
   * and ends (a transaction the client is in fails).
   */
  forwardFailed(query: string, why: string): void {
    this.reportMiss(query, `debugkit: no recorded mock for query: ${quoted(query)}, and the real server could not answer it: ${why}`);
    const status = this.txStatus === TxStatus.Idle ? TxStatus.Idle : TxStatus.Failed;
    this.send(backend.readyForQuery(status));
    this.forwarded(status);
  }

  /**
   * The program closed its connection in the middle of a message (its bytes not whole): a request
   * it sent and never got an answer to, counted and reported as a miss (no one is left to tell).
   */
  cutOff(bytes: number): void {
    this.missed++;
    this.events.onMiss?.({ query: '', message: `the program closed its connection with ${bytes} bytes of a message not whole (a request sent and never answered)` });
  }

  /** A miss the client is told of: the error, counted and reported. */
  private reportMiss(query: string, message: string): void {
    this.send(backend.error({ S: 'ERROR', V: 'ERROR', C: MISS_SQLSTATE, M: message }));
    this.missed++;
    this.events.onMiss?.({ query, message });
  }

  /** The client's transaction status as replay has told it. */
  get transactionStatus(): string {
    return this.txStatus;
  }

  get skipping(): boolean {
    return this.failed;
  }

  parse(m: ParseMessage): void {
    const recorded = this.index.parse(m.query);
    if (!recorded && !this.index.knows(m.query)) {
      this.miss(m.query);
      // Forwarded: the real server will know the statement; later Binds to it miss and follow.
      if (this.forwarding !== undefined) this.statements.set(m.name, { query: m.query, paramTypes: m.paramTypes });
      return;
    }
    if (recorded) this.replay(recorded.messages, recorded.txStatus);
    else this.send(backend.parseComplete()); // recorded as a simple query only
    if (!this.failed) this.statements.set(m.name, { query: m.query, paramTypes: m.paramTypes });
  }

  bind(m: BindMessage): void {
    const statement = this.statements.get(m.statement);
    if (!statement) return this.fail('26000', `prepared statement "${m.statement}" does not exist`);
    const keys = this.index.paramKeys(statement.query, m.params, m.paramFormats);
    const runKey = this.index.runKey(statement.query, keys);
    const recorded = this.index.bind(runKey);
    if (!recorded) return this.miss(statement.query, keys);
    this.replay(recorded.messages, recorded.txStatus);
    if (!this.failed) this.portals.set(m.portal, { query: statement.query, keys, runKey, resultFormats: m.resultFormats });
  }

  describe(m: DescribeMessage): void {
    const target = m.target === Target.Statement ? this.statements.get(m.name) : this.portals.get(m.name);
    if (!target) return this.fail(m.target === Target.Statement ? '26000' : '34000', `${m.target === Target.Statement ? 'prepared statement' : 'portal'} "${m.name}" does not exist`);
    const d = this.index.describe(target.query);
    if (!d) return this.miss(target.query);
    if (m.target === Target.Statement) this.send(this.parameterDescription(target.query, (target as { paramTypes: number[] }).paramTypes));
    if (!d.row) return this.send(backend.noData());
    // A statement's description reports text format; a portal's the formats its Bind asked for.
    this.send(describeRow(d.row, this.fieldsOf(d.row), m.target === Target.Statement ? [] : (target as Portal).resultFormats));
  }

  execute(m: ExecuteMessage): void {
    const portal = this.portals.get(m.portal);
    if (!portal) return this.fail('34000', `portal "${m.portal}" does not exist`);
    const recorded = this.index.execute(portal.runKey);
    if (!recorded) return this.miss(portal.query, portal.keys);
    const rows = this.adaptRows(recorded, portal);
    if (typeof rows === 'string') return this.fail(MISS_SQLSTATE, rows);
    this.replay(rows, recorded.txStatus);
    this.matched++;
    this.events.onMatch?.({ mock: recorded.mock, query: portal.query });
  }

  close(target: TargetCode, name: string): void {
    if (target === Target.Statement) this.statements.delete(name);
    else this.portals.delete(name);
    this.send(backend.closeComplete());
  }

  sync(): GroupEnd {
    if (this.forwarding !== undefined) return 'forward';
    const base = this.groupStatus ?? this.txStatus;
    // A miss inside a transaction fails it, as any error there would.
    this.txStatus = this.missedInGroup && (base === TxStatus.InTransaction || base === TxStatus.Failed) ? TxStatus.Failed : base;
    this.send(backend.readyForQuery(this.txStatus));
    this.failed = false;
    this.missedInGroup = false;
    this.groupStatus = undefined;
    return 'done';
  }

  query(m: QueryMessage): GroupEnd {
    const recorded = this.index.simpleQuery(m.query);
    if (!recorded) {
      if (m.query.trim() === '') this.send(backend.emptyQuery());
      else this.miss(m.query);
      return this.sync();
    }
    this.matched++;
    this.events.onMatch?.({ mock: recorded.mock, query: m.query });
    this.txStatus = recorded.txStatus;
    // COPY FROM STDIN: the rest of the answer waits for the client's data to end.
    const copyIn = recorded.messages.findIndex((raw) => codeOf(raw) === Backend.CopyInResponse);
    const now = copyIn >= 0 ? recorded.messages.slice(0, copyIn + 1) : recorded.messages;
    if (copyIn >= 0) this.afterCopy = recorded.messages.slice(copyIn + 1);
    for (const raw of now) this.send(raw);
    return 'done';
  }

  /** CopyDone or CopyFail from the client: the recorded end of the COPY. */
  copyEnded(): void {
    for (const raw of this.afterCopy ?? []) this.send(raw);
    this.afterCopy = undefined;
  }

  functionCall(): GroupEnd {
    this.miss('(FunctionCall message)');
    return this.sync();
  }

  /**
   * Recorded parameter types, else the client's own from Parse; one per $n of the query, text
   * (25) where nothing says, so a driver that encodes by type sends text the recording can match.
   */
  private paramTypes(query: string, fromParse: readonly number[]): number[] {
    const known = this.index.paramTypes(query) ?? fromParse;
    // A $n past the protocol's count (2 bytes) is no parameter: sized by it, `$300000000` held the
    // loop 22 s and exhausted the heap (attack 18r K6). Counted in a loop: a long query's every $n
    // as arguments of Math.max overflows the stack.
    let count = Math.min(known.length, MAX_PARAMETERS);
    for (const [, n] of query.matchAll(/\$(\d+)/g)) {
      const i = Number(n);
      if (i > count && i <= MAX_PARAMETERS) count = i;
    }
    return Array.from({ length: count }, (_, i) => known[i] || 25);
  }

  /** The ParameterDescription of a statement, made once per query text and Parse types. */
  private parameterDescription(query: string, fromParse: readonly number[]): Buffer {
    const key = fromParse.length === 0 ? query : `${query}\u0000${fromParse.join(',')}`;
    let raw = this.descriptions.get(key);
    if (!raw) this.descriptions.set(key, (raw = backend.parameterDescription(this.paramTypes(query, fromParse))));
    return raw;
  }

  /** rowFields, remembering the last row described: a client describes the same statement over and over. */
  private fieldsOf(row: Buffer): readonly FieldSpec[] {
    if (row !== this.lastRow) {
      this.lastRowFields = rowFields(row);
      this.lastRow = row;
    }
    return this.lastRowFields;
  }

  private replay(messages: readonly Buffer[], txStatus: string): void {
    for (const raw of messages) this.send(raw);
    this.groupStatus = txStatus;
    if (messages.length > 0 && codeOf(messages[messages.length - 1]!) === Backend.ErrorResponse) this.failed = true;
  }

  private fail(sqlstate: string, message: string): void {
    this.send(backend.error({ S: 'ERROR', V: 'ERROR', C: sqlstate, M: message }));
    this.failed = true;
  }

  private miss(query: string, parameters?: string[]): void {
    if (this.forwardMisses) {
      this.forwarding ??= query;
      this.failed = true; // nothing more of the group is answered from mocks
      return;
    }
    const closest = this.index.closest(query, parameters);
    const where = closest ? `closest: ${closest.mock}: ${closest.difference}` : 'no queries were recorded';
    const message = `debugkit: no recorded mock for query: ${quoted(query)} (${where})`;
    this.send(backend.error({ S: 'ERROR', V: 'ERROR', C: MISS_SQLSTATE, M: message, H: 'Record the program again, or edit the mock set.' }));
    this.failed = true;
    this.missedInGroup = true;
    this.missed++;
    this.events.onMiss?.({ query, ...(parameters ? { parameters } : {}), ...(closest ? { closest } : {}), message });
  }

  /**
   * The recorded rows in the formats this client asked for. A client may want text where the
   * recording client got binary (pgx vs node-postgres); convertible types are converted, others
   * give an error naming the column rather than bytes the client would misread.
   */
  private adaptRows(recorded: Execution, portal: Portal): Buffer[] | string {
    if (sameFormats(recorded.resultFormats, portal.resultFormats)) return recorded.messages;
    const row = this.index.describe(portal.query)?.row;
    const fields = row ? rowFields(row) : [];
    const had = formatsFor(recorded.resultFormats, fields.length);
    const want = formatsFor(portal.resultFormats, fields.length);
    if (had.every((f, i) => f === want[i])) return recorded.messages;
    const out: Buffer[] = [];
    for (const raw of recorded.messages) {
      if (codeOf(raw) !== Backend.DataRow) {
        out.push(raw);
        continue;
      }
      const values = dataRowValues(raw);
      const converted: Array<Buffer | null> = [];
      for (const [i, v] of values.entries()) {
        const c = v === null ? null : convertValue(fields[i]?.typeOid ?? 0, v, had[i] ?? 0, want[i] ?? 0);
        if (c === undefined) {
          return `debugkit: the recording has column "${fields[i]?.name}" (type oid ${fields[i]?.typeOid}) in ${had[i] ? 'binary' : 'text'} format and cannot convert it to the ${want[i] ? 'binary' : 'text'} format this client asked for`;
        }
        converted.push(c);
      }
      out.push(backend.dataRow(converted));
    }
    return out;
  }
}

function sameFormats(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Every field already has the format `resultFormats` asks for (read as formatsFor reads them; nothing made). */
function fieldsIn(fields: readonly FieldSpec[], resultFormats: readonly number[]): boolean {
  for (let i = 0; i < fields.length; i++) {
    const format = resultFormats.length === 0 ? 0 : resultFormats.length === 1 ? resultFormats[0]! : (resultFormats[i] ?? 0);
    if (fields[i]!.format !== format) return false;
  }
  return true;
}

const rewritten = new WeakMap<Buffer, Map<string, Buffer>>();

/** A recorded RowDescription with the format codes a client asked for: as recorded when they agree, else rewritten once. */
function describeRow(row: Buffer, fields: readonly FieldSpec[], resultFormats: readonly number[]): Buffer {
  if (fieldsIn(fields, resultFormats)) return row;
  const formats = formatsFor(resultFormats, fields.length);
  const key = formats.join(',');
  let byFormats = rewritten.get(row);
  if (!byFormats) rewritten.set(row, (byFormats = new Map()));
  let raw = byFormats.get(key);
  if (!raw) byFormats.set(key, (raw = backend.rowDescription(fields.map((f, i) => ({ ...f, format: formats[i]! })))));
  return raw;
}
