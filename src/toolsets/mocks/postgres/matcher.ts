import type { TimeSlice } from '../../../core/wait.js';
import type { PostgresMock } from '../keploy/types.js';
import type { FrontendMessage } from './frontend.js';
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
 * Answers are filed under the query TEXT (blanks between tokens collapsed, see collapseBlanks)
 * and, for Bind/Execute, the parameter values; never under statement or portal names, which
 * differ between clients and runs. That lets a replaying client group its messages differently from the recording one:
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

/** The last text asked for and its normalized form: a query group asks for the same text several times in a row. */
let lastText = '';
let lastNormalized = '';

export function normalizeQuery(q: string): string {
  if (q === lastText) return lastNormalized;
  let n = normalized.get(q);
  if (n === undefined) {
    n = collapseBlanks(q);
    if (q.length > CACHED_TEXT) return n;
    if (normalized.size >= NORMALIZED_CACHE) normalized.clear();
    normalized.set(q, n);
  }
  // Only a text the Map may hold is kept (it is short).
  lastText = q;
  lastNormalized = n;
  return n;
}

/** Space, tab, newline, carriage return, form feed: PostgreSQL's blanks (\v only since PostgreSQL 16, so not here). */
const isBlank = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0c;
const isNewline = (c: number) => c === 0x0a || c === 0x0d;
const isLetter = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c >= 0x80;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const QUOTE = 0x27;
const DOLLAR = 0x24;

/** The end of the dollar-quote tag `$tag$` or `$$` starting at `at` (after its closing `$`), or -1. */
function dollarTagEnd(q: string, at: number): number {
  let i = at + 1;
  if (i < q.length && isLetter(q.charCodeAt(i))) {
    i++;
    while (i < q.length && (isLetter(q.charCodeAt(i)) || isDigit(q.charCodeAt(i)))) i++;
  }
  return i < q.length && q.charCodeAt(i) === DOLLAR ? i + 1 : -1;
}

/**
 * A query text with every run of blanks between tokens made one space, and none at either end:
 * the same statement however a client spaced it. Only blanks (space, tab, line breaks, form
 * feed) outside quotes and comments are touched: the text of a string literal ('...' with '',
 * E'...' with backslash escapes), a quoted identifier ("..." with ""), a dollar-quoted string
 * ($tag$...$tag$) and a comment (-- to the end of the line; a block comment, nested ones
 * included) is kept as sent, so 'a  b' and 'a b' stay different queries (attack l1-2). A run
 * holding a line break stays one line break after a -- comment (the break ends it) and after a
 * '...' literal (PostgreSQL joins 'a'<newline>'b' into 'ab'). Where PostgreSQL itself reads the
 * text two ways, the rest of the text is kept as sent: a backslash in a '...' literal (where it
 * ends depends on standard_conforming_strings), and a $ or ' right after a number or a $n
 * parameter (versions split such a token differently). One pass, linear in the text.
 */
export function collapseBlanks(q: string): string {
  let out = '';
  let blank = ''; // the separator owed before the next token
  let start = 0; // where the text not copied to `out` yet starts
  let afterLine = false; // the last token was a '...' literal or a -- comment
  let word: 'none' | 'name' | 'number' = 'none'; // the identifier, number or $n the last character belongs to
  let i = 0;
  const keepRest = () => out + blank + q.slice(start);
  while (i < q.length) {
    const c = q.charCodeAt(i);
    if (isBlank(c)) {
      const run = i;
      let lineBreak = false;
      for (; i < q.length && isBlank(q.charCodeAt(i)); i++) lineBreak ||= isNewline(q.charCodeAt(i));
      word = 'none';
      const leading = out === '' && run === start;
      const separator = lineBreak && afterLine ? '\n' : ' ';
      // A run that is already its separator stays in the text copied next (most queries' only kind).
      if (!leading && i < q.length && i - run === 1 && q[run] === separator) continue;
      if (run > start) out += blank + q.slice(start, run);
      if (!leading) blank = separator;
      start = i;
      continue;
    }
    const next = i + 1 < q.length ? q.charCodeAt(i + 1) : -1;
    if (c === 0x2d && next === 0x2d) {
      i += 2;
      while (i < q.length && !isNewline(q.charCodeAt(i))) i++;
      afterLine = true;
      word = 'none';
      continue;
    }
    afterLine = false;
    if (c === 0x2f && next === 0x2a) {
      let depth = 1;
      i += 2;
      while (i < q.length && depth > 0) {
        const d = q.charCodeAt(i);
        const e = i + 1 < q.length ? q.charCodeAt(i + 1) : -1;
        const step = (d === 0x2f && e === 0x2a) || (d === 0x2a && e === 0x2f) ? 2 : 1;
        if (step === 2) depth += d === 0x2f ? 1 : -1;
        i += step;
      }
      word = 'none';
      continue;
    }
    if (c === QUOTE || ((c === 0x45 || c === 0x65) && next === QUOTE && word === 'none')) {
      if (word === 'number') return keepRest();
      const escapes = c !== QUOTE;
      i += escapes ? 2 : 1;
      for (;;) {
        if (i >= q.length) return keepRest();
        const d = q.charCodeAt(i);
        if (d === 0x5c) {
          if (!escapes) return keepRest();
          i += 2;
        } else if (d === QUOTE && i + 1 < q.length && q.charCodeAt(i + 1) === QUOTE) i += 2;
        else if (d === QUOTE) break;
        else i++;
      }
      i++;
      afterLine = true;
      word = 'none';
      continue;
    }
    if (c === 0x22) {
      for (i++; ;) {
        if (i >= q.length) return keepRest();
        const d = q.charCodeAt(i);
        if (d === 0x22 && i + 1 < q.length && q.charCodeAt(i + 1) === 0x22) i += 2;
        else if (d === 0x22) break;
        else i++;
      }
      i++;
      word = 'none';
      continue;
    }
    if (c === DOLLAR && word !== 'name') {
      if (word === 'number') return keepRest();
      const tagEnd = isDigit(next) ? -1 : dollarTagEnd(q, i);
      if (tagEnd >= 0) {
        const end = closingTag(q, i, tagEnd);
        if (end < 0) return keepRest();
        i = end;
        word = 'none';
        continue;
      }
      i++;
      word = isDigit(next) ? 'number' : 'none'; // $1 is a parameter; a lone $ is a token of its own
      continue;
    }
    i++;
    if (word === 'none') word = isDigit(c) ? 'number' : isLetter(c) ? 'name' : 'none';
    else if (!isLetter(c) && !isDigit(c) && c !== DOLLAR) word = 'none';
  }
  return start < q.length ? out + blank + q.slice(start) : out;
}

/**
 * The end of the dollar-quoted string whose tag is q[start, tagEnd), or -1 when it is not closed.
 * As PostgreSQL reads it: at each $, a tag; the same tag ends the string, another one does not
 * and its last $ is looked at again. Every character is looked at a bounded number of times.
 */
function closingTag(q: string, start: number, tagEnd: number): number {
  const tag = q.slice(start, tagEnd);
  let j = q.indexOf('$', tagEnd);
  while (j >= 0) {
    const end = dollarTagEnd(q, j);
    if (end < 0) j = q.indexOf('$', j + 1);
    else if (end - j === tag.length && q.startsWith(tag, j)) return end;
    else j = end - 1;
  }
  return -1;
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
    // Every question asks first: once all are filed (the usual case), nothing is made here.
    if (this.pending) this.buildUntil(() => false);
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
    // Each parameter's format as formatsFor gives it ([] all text, [f] all f, else one each), without making that list.
    const keys = new Array<string>(params.length);
    for (let i = 0; i < params.length; i++) {
      const format = formatCodes.length === 0 ? 0 : formatCodes.length === 1 ? formatCodes[0]! : (formatCodes[i] ?? 0);
      keys[i] = parameterKey(params[i]!, format, types?.[i] || undefined);
    }
    return keys;
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

/**
 * Each part length-prefixed: a parameter may hold any character, so no separator would tell one
 * parameter holding `'a'<NUL>'b'` from the two parameters 'a' and 'b' (attack l1-3's class).
 */
function execKey(query: string, keys: readonly string[]): string {
  const q = normalizeQuery(query);
  let key = `${q.length}:${q}`;
  for (const k of keys) key += `${k.length}:${k}`;
  return key;
}
