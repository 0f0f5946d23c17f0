import type { TimeSlice } from '../../../core/wait.js';
import type { PostgresMock } from '../keploy/types.js';
import { formatsFor, type FrontendMessage } from './frontend.js';
import { requestMessages, responseMessages } from './keploy.js';
import { parameterDifference, QueryNeighbors, type Closest } from './similar.js';
import { parameterKey } from './values.js';
import { AUTH_ASKS_PASSWORD, Backend, Frontend, Target, TxStatus } from './protocol.js';
import { authCodeOf, codeOf, decodeBackend } from './wire.js';

/**
 * What a replayer looks answers up in, built from recorded mocks by walking each recorded
 * conversation the way the server answered it: every client message gets the server messages
 * that answered it (Parse → ParseComplete, Describe → ParameterDescription + RowDescription,
 * Execute → DataRows + CommandComplete, Query → everything up to ReadyForQuery, ...).
 *
 * Answers are filed under the query TEXT (whitespace runs collapsed) and, for Bind/Execute, the
 * parameter values; never under statement or portal names, which differ between clients and
 * runs. That lets a replaying client group its messages differently from the recording one:
 * node-postgres sends Parse/Bind/Describe/Execute/Sync at once where pgx (Keploy's fixture) sent
 * Parse/Describe/Sync and then Bind/Execute/Sync.
 */

export interface Answer {
  /** The mock it came from (`mock-N`). */
  mock: string;
  messages: Buffer[];
  /** Transaction status of the ReadyForQuery that closed its recorded group ('I', 'T', 'E'). */
  txStatus: string;
}
export interface Execution extends Answer {
  /** Result format codes of the recorded Bind, as sent. */
  resultFormats: number[];
}
export interface Description {
  mock: string;
  /** From a recorded ParameterDescription. */
  paramTypes?: number[];
  /** The recorded RowDescription; null: NoData (the statement returns no rows). */
  row?: Buffer | null;
}
export interface StartupAnswer {
  parameterStatus: Array<[string, string]>;
  backendKey?: { processId: number; secretKey: number };
  /** The recorded server asked the client for a password (cleartext, MD5 or SASL). */
  passwordAsked?: boolean;
}

interface RecordedBind {
  query: string;
  params: Array<Buffer | null>;
  formats: number[];
  bind?: Answer;
  execution?: Execution;
}
interface Connection {
  statements: Map<string, { query: string; paramTypes: number[] }>;
  portals: Map<string, RecordedBind & { resultFormats: number[] }>;
}

/** A list replayed in order; past its end, the last answer again. */
class Cursor<T> {
  private next = 0;
  constructor(readonly items: T[]) {}
  take(): T | undefined {
    return this.items[Math.min(this.next++, this.items.length - 1)];
  }
}

/** Normalized texts of the queries seen lately: a client sends the same few texts over and over. */
const normalized = new Map<string, string>();
const NORMALIZED_CACHE = 4096;
/** Only texts this short are kept in the caches (4,096 texts of up to 64 MiB each would be a lot of memory). */
const CACHED_TEXT = 4096;
const CLOSEST_CACHE = 1024;

export function normalizeQuery(q: string): string {
  let n = normalized.get(q);
  if (n === undefined) {
    n = q.replace(/\s+/g, ' ').trim();
    if (q.length > CACHED_TEXT) return n;
    if (normalized.size >= NORMALIZED_CACHE) normalized.clear();
    normalized.set(q, n);
  }
  return n;
}

export class ReplayIndex {
  private readonly startupAnswer: StartupAnswer = { parameterStatus: [] };
  private readonly problemList: string[] = [];
  /** The mocks not filed yet, and the recorded Binds not filed yet (see `build`). */
  private pending: { mocks: readonly PostgresMock[]; unique: boolean; next: number; nextBind: number } | undefined;
  private readonly parses = new Map<string, Answer>();
  private readonly descriptions = new Map<string, Description>();
  private readonly parseTypes = new Map<string, number[]>();
  private readonly recordedBinds: RecordedBind[] = [];
  private readonly binds = new Map<string, Answer>();
  private readonly executions = new Map<string, Cursor<Execution>>();
  private readonly simple = new Map<string, Cursor<Answer>>();
  /** Every recorded query and the first mock with it, for "closest" diagnostics. */
  private readonly queries = new Map<string, string>();
  private readonly neighbors = new QueryNeighbors(this.queries);
  /** The recorded Binds of each query (normalized text), with their parameter keys, in recorded order. */
  private readonly bindsOf = new Map<string, Array<{ mock: string; keys: string[] }>>();
  /** Misses seen lately and their closest mock: a client repeats the same few. */
  private readonly closestSeen = new Map<string, Closest | undefined>();
  /** Each recorded connection's statements and portals, by connection id. */
  private readonly connections = new Map<string, Connection>();

  /** The mocks are filed at the first question, or in slices by `ready`. */
  constructor(mocks: readonly PostgresMock[]) {
    const unique = new Set(mocks.map((m) => m.name)).size === mocks.length;
    this.pending = { mocks, unique, next: 0, nextBind: 0 };
  }

  get startup(): StartupAnswer {
    this.build();
    return this.startupAnswer;
  }
  /** Mocks that could not be used, and why. */
  get problems(): string[] {
    this.build();
    return this.problemList;
  }

  /** Files every mock not filed yet. */
  build(): void {
    this.buildUntil(() => false);
  }

  /**
   * Files the mocks in slices, giving the event loop a turn between them: 19,000 mocks take
   * 200 ms and more, which would hold the server's other clients.
   */
  async ready(slice: TimeSlice): Promise<void> {
    while (!this.buildUntil(() => slice.over())) await slice.pause();
  }

  /** Files mocks until `late()`; true once all are. */
  private buildUntil(late: () => boolean): boolean {
    const p = this.pending;
    if (!p) return true;
    while (p.next < p.mocks.length) {
      const mock = p.mocks[p.next]!;
      this.addMock(mock, p.unique ? mock.name : `mock-${p.next}`);
      p.next++;
      if (late()) return false;
    }
    // Parameter keys need the parameter types, which a later mock may be the one to describe.
    while (p.nextBind < this.recordedBinds.length) {
      this.fileBind(this.recordedBinds[p.nextBind++]!);
      if (late()) return false;
    }
    this.pending = undefined;
    return true;
  }

  /** A mock captured during replay (`onMiss: record`): its answers replay from now on. */
  add(mock: PostgresMock, name: string): void {
    this.build();
    const before = this.recordedBinds.length;
    this.closestSeen.clear();
    this.addMock(mock, name);
    for (const b of this.recordedBinds.slice(before)) this.fileBind(b);
  }

  private addMock(mock: PostgresMock, name: string): void {
    try {
      const requests = mock.spec.postgresrequests.flatMap(requestMessages);
      const responses = mock.spec.postgresresponses.flatMap(responseMessages);
      const first = requests[0];
      if (!first || first.type === 'startup' || first.type === Frontend.Password) return this.addStartup(responses);
      const key = mock.connectionId ?? '';
      if (!this.connections.has(key)) this.connections.set(key, { statements: new Map(), portals: new Map() });
      this.walk(name, requests, responses, this.connections.get(key)!);
    } catch (err) {
      this.problemList.push(`${name}: ${(err as Error).message}`);
    }
  }

  knows(query: string): boolean {
    this.build();
    return this.queries.has(normalizeQuery(query));
  }
  parse(query: string): Answer | undefined {
    this.build();
    return this.parses.get(normalizeQuery(query));
  }
  describe(query: string): Description | undefined {
    this.build();
    return this.descriptions.get(normalizeQuery(query));
  }
  /** Parameter types: recorded ParameterDescription, else the recorded Parse's explicit ones. */
  paramTypes(query: string): number[] | undefined {
    this.build();
    return this.typesOf(query);
  }
  paramKeys(query: string, params: ReadonlyArray<Buffer | null>, formatCodes: readonly number[]): string[] {
    this.build();
    return this.keysOf(query, params, formatCodes);
  }
  private typesOf(query: string): number[] | undefined {
    const q = normalizeQuery(query);
    return this.descriptions.get(q)?.paramTypes ?? this.parseTypes.get(q);
  }
  private keysOf(query: string, params: ReadonlyArray<Buffer | null>, formatCodes: readonly number[]): string[] {
    const types = this.typesOf(query);
    const formats = formatsFor(formatCodes, params.length);
    return params.map((p, i) => parameterKey(p, formats[i]!, types?.[i] || undefined));
  }
  /** The key of a query run with these parameters, for `bind` and `execute` (made once per Bind). */
  runKey(query: string, keys: readonly string[]): string {
    return execKey(query, keys);
  }
  bind(runKey: string): Answer | undefined {
    this.build();
    return this.binds.get(runKey);
  }
  /** The next recorded execution of this query with these parameters (in recorded order). */
  execute(runKey: string): Execution | undefined {
    this.build();
    return this.executions.get(runKey)?.take();
  }
  simpleQuery(query: string): Answer | undefined {
    this.build();
    return this.simple.get(normalizeQuery(query))?.take();
  }
  /** The recorded request nearest to a missed one, and how they differ. */
  closest(query: string, keys?: readonly string[]): Closest | undefined {
    this.build();
    const q = normalizeQuery(query);
    const same = this.queries.get(q);
    if (same === undefined) {
      if (this.closestSeen.has(q)) return this.closestSeen.get(q);
      const found = this.neighbors.closest(q);
      if (q.length > CACHED_TEXT) return found;
      if (this.closestSeen.size >= CLOSEST_CACHE) this.closestSeen.clear();
      this.closestSeen.set(q, found);
      return found;
    }
    if (!keys) return { mock: same, difference: 'the query was recorded, but not this step of it (e.g. never described)' };
    const found = parameterDifference(keys, this.bindsOf.get(q) ?? []);
    return found ?? { mock: same, difference: 'the query was recorded, but never run with parameters (prepared only, or as a simple query)' };
  }

  private addStartup(responses: Buffer[]): void {
    const status = new Map(this.startupAnswer.parameterStatus);
    for (const raw of responses) {
      const msg = decodeBackend(raw);
      if (codeOf(raw) === Backend.ParameterStatus && msg) status.set(String(msg.parameterName), String(msg.parameterValue));
      if (codeOf(raw) === Backend.BackendKeyData) this.startupAnswer.backendKey = { processId: raw.readInt32BE(5), secretKey: raw.readInt32BE(9) };
      const auth = codeOf(raw) === Backend.Authentication ? authCodeOf(raw) : -1;
      if (AUTH_ASKS_PASSWORD.has(auth)) this.startupAnswer.passwordAsked = true;
    }
    this.startupAnswer.parameterStatus = [...status];
  }

  /** Pairs one recorded group's client messages with the server messages that answered them. */
  private walk(mock: string, requests: FrontendMessage[], responses: Buffer[], conn: Connection): void {
    let at = 0;
    const until = (...codes: string[]): Buffer[] => {
      const start = at;
      while (at < responses.length && !codes.includes(codeOf(responses[at]!))) at++;
      if (at >= responses.length) throw new Error(`the recorded answer ends before a ${codes.join('/')} message`);
      return responses.slice(start, ++at);
    };
    const made: Answer[] = [];
    const answer = (messages: Buffer[]): Answer => {
      const a = { mock, messages, txStatus: TxStatus.Idle as string };
      made.push(a);
      return a;
    };
    const isError = (messages: Buffer[]) => codeOf(messages[messages.length - 1]!) === Backend.ErrorResponse;
    let failed = false;
    // Each group's end gives every answer made so far (made[0..closed)) its status, the last end
    // winning: noted here and applied once when the walk ends (rewriting them all at every Sync
    // was quadratic in the number of groups a mock holds).
    let closed = 0;
    let closedStatus = TxStatus.Idle as string;
    const closeGroup = () => {
      closedStatus = String.fromCharCode(until(Backend.ReadyForQuery).at(-1)![5]!);
      closed = made.length;
      failed = false;
    };
    try {
      for (const m of requests) {
        if (failed && m.type !== Frontend.Sync) continue; // the server skips to Sync after an error
        switch (m.type) {
          case Frontend.Parse: {
            const q = normalizeQuery(m.query);
            const a = answer(until(Backend.ParseComplete, Backend.ErrorResponse));
            if (!this.parses.has(q)) this.parses.set(q, a);
            if (m.paramTypes.some(Boolean) && !this.parseTypes.has(q)) this.parseTypes.set(q, m.paramTypes);
            this.noteQuery(q, mock);
            conn.statements.set(m.name, { query: m.query, paramTypes: m.paramTypes });
            failed = isError(a.messages);
            break;
          }
          case Frontend.Bind: {
            const a = answer(until(Backend.BindComplete, Backend.ErrorResponse));
            const statement = conn.statements.get(m.statement);
            if (!statement) throw new Error(`Bind to statement "${m.statement}", which the recording never prepared`);
            const recorded = { query: statement.query, params: m.params, formats: m.paramFormats, bind: a, resultFormats: m.resultFormats };
            this.recordedBinds.push(recorded);
            conn.portals.set(m.portal, recorded);
            failed = isError(a.messages);
            break;
          }
          case Frontend.Describe:
            failed = this.addDescription(mock, m, until(Backend.RowDescription, Backend.NoData, Backend.ErrorResponse), conn);
            break;
          case Frontend.Execute: {
            const portal = conn.portals.get(m.portal);
            const execution: Execution = { ...answer(until(Backend.CommandComplete, Backend.EmptyQuery, Backend.PortalSuspended, Backend.ErrorResponse)), resultFormats: portal?.resultFormats ?? [] };
            made[made.length - 1] = execution; // the copy is what gets its txStatus at Sync
            if (portal) portal.execution = execution;
            failed = isError(execution.messages);
            break;
          }
          case Frontend.Close:
            until(Backend.CloseComplete, Backend.ErrorResponse);
            break;
          case Frontend.Sync:
            closeGroup();
            break;
          case Frontend.Query:
            this.addSimple(mock, m.query, until(Backend.ReadyForQuery));
            break;
          case Frontend.FunctionCall:
            until(Backend.ReadyForQuery);
            break;
        }
      }
      // Keploy's typed packets leave out the final Sync: a trailing ReadyForQuery still closes the group.
      if (at < responses.length && codeOf(responses[at]!) === Backend.ReadyForQuery) closeGroup();
    } finally {
      for (let i = 0; i < closed; i++) made[i]!.txStatus = closedStatus;
    }
  }

  private addDescription(mock: string, m: Extract<FrontendMessage, { type: typeof Frontend.Describe }>, messages: Buffer[], conn: Connection): boolean {
    const last = messages[messages.length - 1]!;
    if (codeOf(last) === Backend.ErrorResponse) return true;
    const query = m.target === Target.Statement ? conn.statements.get(m.name)?.query : conn.portals.get(m.name)?.query;
    if (query === undefined) return false;
    const q = normalizeQuery(query);
    const d = this.descriptions.get(q) ?? { mock };
    const t = messages.find((raw) => codeOf(raw) === Backend.ParameterDescription);
    if (t && !d.paramTypes) d.paramTypes = (decodeBackend(t)?.dataTypeIDs as number[] | undefined) ?? [];
    if (d.row === undefined) d.row = codeOf(last) === Backend.RowDescription ? last : null;
    this.descriptions.set(q, d);
    return false;
  }

  private addSimple(mock: string, query: string, messages: Buffer[]): void {
    const q = normalizeQuery(query);
    const a: Answer = { mock, messages, txStatus: String.fromCharCode(messages.at(-1)![5]!) };
    if (!this.simple.has(q)) this.simple.set(q, new Cursor([]));
    this.simple.get(q)!.items.push(a);
    this.noteQuery(q, mock);
    // A single-statement result tells how its rows look, for a client that later prepares it.
    const row = messages.find((raw) => codeOf(raw) === Backend.RowDescription);
    if (row && !this.descriptions.has(q)) this.descriptions.set(q, { mock, row });
  }

  private fileBind(b: RecordedBind): void {
    const keys = this.keysOf(b.query, b.params, b.formats);
    const key = execKey(b.query, keys);
    if (b.bind) {
      if (!this.binds.has(key)) this.binds.set(key, b.bind);
      const q = normalizeQuery(b.query);
      if (!this.bindsOf.has(q)) this.bindsOf.set(q, []);
      this.bindsOf.get(q)!.push({ mock: b.bind.mock, keys });
    }
    if (!b.execution) return;
    if (!this.executions.has(key)) this.executions.set(key, new Cursor([]));
    this.executions.get(key)!.items.push(b.execution);
  }

  private noteQuery(q: string, mock: string): void {
    if (!this.queries.has(q)) this.queries.set(q, mock);
  }
}

function execKey(query: string, keys: readonly string[]): string {
  return `${normalizeQuery(query)}\u0000${keys.join('\u0000')}`;
}
