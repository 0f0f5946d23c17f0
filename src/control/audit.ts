import { createHash, createHmac, randomBytes } from 'node:crypto';
import path from 'node:path';
import {
  decidesCode,
  GDB_SHELL_LINE,
  REDACTED,
  SECRET_NAME,
  SECRET_WORD,
  mentionedVariables,
  NAMES_A_COMMAND,
  valueIsCode,
  SHELL_ACTIVE,
  READ_AS_COMMAND,
  argvSecretWords,
  codeOption,
  commandRuns,
  FORWARDS_ARGUMENTS,
  shellScriptAt,
  findSecrets,
  hideSpans,
  hideUrlPasswords,
  hiddenInRun,
  redactText,
  unusedName,
} from '../core/secrets.js';
import { jsonSliced } from '../core/json-sliced.js';
import { TimeSlice } from '../core/wait.js';
import { WorkerPool, workerEntry } from '../core/workers.js';

/** One audit record as stored. `hash` links it to the record before it. */
export interface AuditRecord {
  seq: number;
  ts: string;
  /** call: a tool call admitted (written before it runs); result: how it ended; denied: refused before running. */
  event: 'call' | 'result' | 'denied';
  call_id: string;
  node: string;
  key_id: string;
  client: string;
  transport: string;
  /** The MCP session (HTTP) and the debug session the arguments name, when there are. */
  session: string | null;
  debug_session: string | null;
  tool: string;
  args: unknown;
  outcome: string | null;
  error: string | null;
  duration_ms: number | null;
  traceparent: string | null;
  prev_hash: string;
  hash: string;
}

export type AuditBody = Omit<AuditRecord, 'seq' | 'prev_hash' | 'hash'>;

export const GENESIS = '0'.repeat(64);

/** JSON with object keys sorted at every level and no whitespace: one text per value. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * Text exactly as both stores keep it, so that what is hashed is what reads back: a lone UTF-16
 * surrogate (SQLite stores U+FFFD for it, PostgreSQL refuses it in JSON) and NUL (PostgreSQL text
 * cannot hold it) become their escapes, `\udc80` and `\u0000`. Not U+FFFD, which made distinct code
 * read alike: `["\uFFFD"].includes("\u0000") ? "not run" : run()` ran `run()`, and was stored as
 * a test that could only be true (attack r2-1). Inside a string literal, where alone such a
 * character can stand in JavaScript or Python code, the escape means what the character did.
 */
export function storableText(text: string): string {
  const t = text as string & { isWellFormed(): boolean };
  if (t.isWellFormed() && !text.includes('\u0000')) return text;
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      i++; // a pair: kept
      continue;
    }
    if (c !== 0 && (c < 0xd800 || c > 0xdfff)) continue;
    out += `${text.slice(from, i)}\\u${c.toString(16).padStart(4, '0')}`;
    from = i + 1;
  }
  return out + text.slice(from);
}

/**
 * A copy of `value` whose every string, object keys included, is storable text. Names that read
 * alike once stored are numbered (unusedName), never one dropped for the other: `{"A\udc80": x,
 * "A\\udc80": y}` kept one value before (attack r2-2).
 */
export function storableValue(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(storableValue);
  const out: Record<string, unknown> = Object.create(null);
  const numbered = new Map<string, number>();
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const name = storableText(k);
    out[unusedName(name, out, numbered)] = storableValue(v);
  }
  return out;
}

/**
 * A record's hash without the audit key: SHA-256 over "prev_hash:seq:digest", where digest is
 * SHA-256 over the canonical JSON of the body. Entries written before the store had an audit key
 * are hashed so (and stay verifiable).
 */
export function chainHash(prevHash: string, seq: number, bodyDigest: string): string {
  return sha256Hex(`${prevHash}:${seq}:${bodyDigest}`);
}

/**
 * The audit key: 32 random bytes the server holds outside the database. Entries are hashed with
 * HMAC-SHA256 under it, so whoever can write the database but not read the key cannot re-hash
 * entries they changed.
 */
export class AuditKey {
  /**
   * `keyedFrom`: the first entry the key signs in the store it was made for (1 for a store that had
   * no entry then), from its file: an entry at or past it hashed without the key was re-hashed by
   * whoever wrote the database, even on a node whose checkpoint does not cover it (attack 18ao e2-7:
   * a chain keyed from entry 1, re-hashed whole without the key, verified as "written before the
   * store had one"). Absent in a key file made before debugkit wrote it, or by hand.
   */
  private constructor(
    private readonly secret: Buffer,
    readonly keyedFrom?: number,
  ) {}

  /** The key as kept in its file: 64 hexadecimal characters, and optionally a line `keyed-from N`. */
  static fromText(text: string, source: string): AuditKey {
    const lines = text.length <= 4096 ? text.trim().split(/\r?\n/) : [''];
    const hex = lines[0]!.trim();
    if (!/^(?:[0-9a-fA-F]{2}){32,64}$/.test(hex)) {
      throw new Error(`${source} is not an audit key: it must hold 64 hexadecimal characters (32 random bytes; debugkit writes one on first use)`);
    }
    const pinned = lines.slice(1).map((l) => /^keyed-from ([1-9][0-9]{0,15})$/.exec(l.trim()));
    if (pinned.some((m) => m === null) || pinned.length > 1) {
      throw new Error(`${source} is not an audit key: after the key's line it may hold one line "keyed-from N" (N the first entry the key signs), nothing else`);
    }
    return new AuditKey(Buffer.from(hex, 'hex'), pinned[0] ? Number(pinned[0][1]) : undefined);
  }

  /** A new key, signing from entry `keyedFrom` when given (the store it is made for had no entry then). */
  static generate(keyedFrom?: number): { key: AuditKey; text: string } {
    const secret = randomBytes(32);
    return { key: new AuditKey(secret, keyedFrom), text: `${secret.toString('hex')}\n${keyedFrom !== undefined ? `keyed-from ${keyedFrom}\n` : ''}` };
  }

  /** Names the key without revealing it: kept in the store, to tell a node with another key. */
  get id(): string {
    return createHmac('sha256', this.secret).update('debugkit audit key id').digest('hex').slice(0, 16);
  }

  /** A keyed record's hash: HMAC-SHA256 over "prev_hash:seq:digest". */
  chainHash(prevHash: string, seq: number, bodyDigest: string): string {
    return createHmac('sha256', this.secret).update(`${prevHash}:${seq}:${bodyDigest}`).digest('hex');
  }
}

export function bodyOf(record: AuditRecord): AuditBody {
  const { seq: _s, prev_hash: _p, hash: _h, ...body } = record;
  return body;
}

/** How an entry's hash was made from its content and link: with the audit key, without it, or neither (changed). */
export function entryKind(record: AuditRecord, key?: AuditKey): 'keyed' | 'plain' | undefined {
  const digest = sha256Hex(canonicalJson(bodyOf(record)));
  if (key && record.hash === key.chainHash(record.prev_hash, record.seq, digest)) return 'keyed';
  if (record.hash === chainHash(record.prev_hash, record.seq, digest)) return 'plain';
  return undefined;
}

/**
 * The head of the chain as known outside the database: an entry and its hash. The server keeps
 * one in a file beside the store (updated as it appends); `debugkit audit checkpoint` prints one
 * for the operator to keep elsewhere.
 */
export interface Checkpoint {
  seq: number;
  hash: string;
  /** Where it came from (a file, or the command line), for reports. */
  source: string;
}

/** A checkpoint as the operator keeps it: "SEQ:HASH". */
export function formatCheckpoint(seq: number, hash: string): string {
  return `${seq}:${hash}`;
}

export function parseCheckpoint(text: string, source: string): Checkpoint {
  const m = /^\s*(\d{1,15}):([0-9a-f]{64})\s*$/.exec(text.length <= 200 ? text : '');
  if (!m || Number(m[1]) < 1) throw new Error(`${source} is not an audit checkpoint: expected SEQ:HASH as printed by debugkit audit checkpoint`);
  return { seq: Number(m[1]), hash: m[2]!, source };
}

export interface ChainState {
  ok: boolean;
  /** Entries checked in this pass. */
  checked: number;
  /** The first entry this pass checked from: 1 for the whole chain, more when it went on from an anchor. */
  from_seq: number;
  /** The newest entry checked (0 for an empty chain). */
  head_seq: number;
  /** The first record whose hash or link does not match (or the first one missing), and why. */
  first_broken?: { seq: number; reason: string };
  head?: string;
  /**
   * The first entry hashed with the audit key: entries before it were written before the store
   * had a key (hashed without it, still linked). Absent when no entry checked is keyed.
   */
  keyed_from?: number;
  /** The checkpoints this pass found their entry for (each matched, or the pass is broken). */
  checkpoints?: Array<{ seq: number; source: string }>;
}

/** An entry already verified, with its hash: where a later pass can go on from. */
export interface ChainAnchor {
  seq: number;
  hash: string;
  /** The first keyed entry at or before it, when there is one: no entry after may be unkeyed. */
  keyed_from?: number;
}

export interface VerifyOptions {
  /** The audit key: without it, keyed entries cannot be told from changed ones. */
  key?: AuditKey;
  /** Heads known outside the database: each must still be in the chain with the same hash. */
  checkpoints?: readonly Checkpoint[];
}

const CHANGED = 'hash does not match the entry (its content was changed)';

/**
 * Checks records in seq order, from the start of the chain or on from an anchor: each link, each
 * hash (keyed or, before the first keyed entry, unkeyed), and the checkpoints held outside the
 * database (an entry they name changed, or gone from the end).
 */
export class ChainVerifier {
  private prev: string;
  private expectSeq: number | undefined;
  private readonly fromSeq: number;
  private keyedFrom: number | undefined;
  private readonly key: AuditKey | undefined;
  private readonly checkpoints: readonly Checkpoint[];
  checked = 0;
  broken: ChainState['first_broken'];

  constructor(anchor?: ChainAnchor, opts: VerifyOptions = {}) {
    this.prev = anchor?.hash ?? GENESIS;
    this.expectSeq = anchor ? anchor.seq + 1 : undefined;
    this.fromSeq = anchor ? anchor.seq + 1 : 1;
    this.keyedFrom = anchor?.keyed_from;
    this.key = opts.key;
    this.checkpoints = opts.checkpoints ?? [];
  }

  /** The anchor's own entry, read again: it must still be there with the hash it had. */
  checkAnchor(anchor: ChainAnchor, stored: AuditRecord | undefined): boolean {
    const kind = stored && stored.hash === anchor.hash ? this.kindOf(stored) : undefined;
    if (kind) {
      if (kind === 'keyed') this.keyedFrom ??= stored!.seq;
      return true;
    }
    this.broken = { seq: anchor.seq, reason: stored ? 'the entry changed since it was last verified' : 'the entry was removed since it was last verified' };
    return false;
  }

  /** 'keyed', 'plain' (and allowed there), or undefined with `why` set. */
  private kindOf(record: AuditRecord): 'keyed' | 'plain' | undefined {
    const kind = entryKind(record, this.key);
    if (kind === 'plain' && ((this.keyedFrom !== undefined && record.seq > this.keyedFrom) || this.pinnedPast(record.seq))) return undefined;
    return kind;
  }

  /** Whether the key's file says it signs every entry from one at or before `seq`. */
  private pinnedPast(seq: number): boolean {
    return this.key?.keyedFrom !== undefined && seq >= this.key.keyedFrom;
  }

  add(record: AuditRecord): boolean {
    if (this.broken) return false;
    this.checked++;
    const fail = (reason: string) => ((this.broken = { seq: record.seq, reason }), false);
    if (this.expectSeq !== undefined && record.seq !== this.expectSeq) return fail(`expected entry ${this.expectSeq} next, found ${record.seq} (entries missing)`);
    if (record.prev_hash !== this.prev) return fail(`prev_hash does not match the hash of the entry before it`);
    const kind = entryKind(record, this.key);
    if (!kind) return fail(this.key ? CHANGED : `${CHANGED}, or it is keyed and no audit key was given`);
    if (kind === 'plain' && this.keyedFrom !== undefined) {
      return fail(`hashed without the audit key, after entries hashed with it from entry ${this.keyedFrom}: the chain was re-hashed from here`);
    }
    if (kind === 'plain' && this.pinnedPast(record.seq)) {
      return fail(`hashed without the audit key, whose file says it signs every entry from entry ${this.key!.keyedFrom}: the chain was re-hashed from here`);
    }
    if (kind === 'keyed') this.keyedFrom ??= record.seq;
    const differs = this.checkpoints.find((cp) => cp.seq === record.seq && cp.hash !== record.hash);
    if (differs) return fail(`the checkpoint in ${differs.source} holds another hash for this entry: the chain was rewritten up to here`);
    this.prev = record.hash;
    this.expectSeq = record.seq + 1;
    return true;
  }

  state(): ChainState {
    const headSeq = (this.expectSeq ?? 1) - 1;
    let broken = this.broken;
    if (!broken) {
      // A checkpoint past the head: entries were removed from the end (or every entry).
      const lost = [...this.checkpoints].filter((cp) => cp.seq > headSeq).sort((a, b) => b.seq - a.seq)[0];
      if (lost) {
        broken = {
          seq: headSeq + 1,
          reason: `entries missing from the end: the chain ${headSeq === 0 ? 'is empty' : `ends at entry ${headSeq}`}, but the checkpoint in ${lost.source} names entry ${lost.seq} (truncated)`,
        };
      }
    }
    const seen = this.checkpoints.filter((cp) => cp.seq >= this.fromSeq && cp.seq <= headSeq).map((cp) => ({ seq: cp.seq, source: cp.source }));
    return {
      ok: !broken,
      checked: this.checked,
      from_seq: this.fromSeq,
      head_seq: headSeq,
      ...(broken ? { first_broken: broken } : {}),
      head: this.prev,
      ...(this.keyedFrom !== undefined ? { keyed_from: this.keyedFrom } : {}),
      ...(seen.length ? { checkpoints: seen } : {}),
    };
  }
}

/**
 * The first of these entries whose content does not match its hash (or, past the first keyed
 * entry, that is hashed without the key), as a broken state's reason.
 */
export function firstChangedEntry(records: readonly AuditRecord[], key?: AuditKey, keyedFrom?: number): ChainState['first_broken'] {
  for (const r of records) {
    const kind = entryKind(r, key);
    if (!kind) return { seq: r.seq, reason: CHANGED };
    if (kind === 'plain' && keyedFrom !== undefined && r.seq > keyedFrom) return { seq: r.seq, reason: 'hashed without the audit key, after keyed entries: the entry was re-hashed' };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Redaction. Every argument is bounded before any pattern runs on it (MAX_STRING per string,
// MAX_TEXT per record, shared fairly); the patterns (linear, each) are core/secrets.ts's.
// ---------------------------------------------------------------------------------------------

/** Characters of one string kept whole; past it the string is kept up to here, with its length and SHA-256. */
export const MAX_STRING = 64 * 1024;
/** Items of one array (entries of one object) kept; past it, the rest is counted and hashed. */
export const MAX_ITEMS = 1000;
/**
 * Values one record keeps in all (strings, numbers, null, booleans, arrays, objects); past it, the
 * rest of each container is counted and hashed. MAX_ITEMS bounds one container only: a million
 * empty objects, 1,000 arrays of 1,000, were kept whole, 3 MB an entry (attack 18aa A1).
 */
export const MAX_VALUES = 10_000;
/**
 * Characters of text one record keeps in all, shared fairly: every string keeps up to the same
 * share (the largest one that fits), so a short string is kept whole however long the others are.
 */
export const MAX_TEXT = 256 * 1024;
/**
 * Characters every string keeps even when the record holds so many strings that their share is
 * smaller: a string cut is never stated by its digest alone (an auditor could only check a guess).
 */
export const MIN_HEAD = 64;
const MAX_KEY = 256;
const MAX_DEPTH = 16;
/** What stands for a value not kept: its size and SHA-256 (over its JSON for a value that is not text). */
function digestNote(what: string, text: string | undefined): string {
  return `[${what}${text === undefined ? '' : `, sha256 ${sha256Hex(text)}`}]`;
}

/** digestNote for what a walk leaves out of the record: the walk remembers the first (Walk.leftOut). */
function leftOutNote(walk: Walk, what: string, text: string | undefined): string {
  walk.leftOut ??= what;
  return digestNote(what, text);
}

function jsonOf(value: unknown): string | undefined {
  try {
    return JSON.stringify(value) ?? 'null';
  } catch {
    return undefined; // nested past what JSON.stringify can walk
  }
}

/**
 * The share of MAX_TEXT each string keeps: the largest q with the sum of min(length, q) within
 * the budget (so the strings shorter than q are kept whole), never under MIN_HEAD.
 */
export function fairShare(lengths: ArrayLike<number>, budget = MAX_TEXT): number {
  const sorted = Float64Array.from(lengths).sort();
  let left = budget;
  for (let i = 0; i < sorted.length; i++) {
    const rest = sorted.length - i;
    if (sorted[i]! * rest > left) return Math.max(MIN_HEAD, Math.floor(left / rest));
    left -= sorted[i]!;
  }
  return MAX_STRING;
}

/**
 * How a walk treats what it bounds: `measure` only counts the strings' lengths (the first pass,
 * which sets the share); the second keeps `share` characters of each, redacted.
 */
interface Walk {
  measure: number[] | undefined;
  share: number;
  /**
   * The measuring walk stops once its strings pass this many characters, or it has met this many
   * values of any kind, or nesting deeper than MAX_DEPTH (set `over`): what it saw decides only that
   * the rest goes to a thread.
   */
  stopAt?: { text: number; values: number };
  text?: number;
  over?: boolean;
  /** Values met so far: strings, numbers, null, booleans, arrays and objects alike (the redacting walk keeps MAX_VALUES). */
  values: number;
  /** The call's tool runs code its arguments give: its CODE_FIELDS are read as code (RunsCode). */
  code?: RunsCode;
  /** The first thing the record leaves out (a string's tail, items past MAX_ITEMS, values past MAX_VALUES, a value nested too deep). */
  leftOut?: string;
  /** A string read as code or as a program was cut. */
  codeCut?: boolean;
}

/** A string's kept head (its first `share` characters at most), and the note saying what was left out. */
function headOf(text: string, walk: Walk): { head: string; note: string } {
  const keep = Math.min(text.length, MAX_STRING, walk.share);
  if (keep === text.length) return { head: text, note: '' };
  return { head: text.slice(0, keep), note: leftOutNote(walk, `cut: ${text.length} characters in all`, text) };
}

/**
 * Argument names whose text a debugger runs as code (gdb's `command` and `commands`, an expression,
 * a breakpoint's condition, hit condition or log message), for the toolsets that run code
 * (Walk.code): kept as sent, so the audit shows what ran. Five rounds of attacks (18ad-18ai) found
 * each reading of code for secrets in it (patterns, then gdb's syntax read apart, then quoted
 * literals) hiding code that ran: only the debugger itself can tell a secret in code from code
 * (gdb's per-command quoting, C comments in `compile code`, pydevd's `@LINE@` and a lone CR
 * ending a comment). Anywhere else (env values, mocks' command lines, argv) passwords are hidden.
 */
const CODE_FIELDS = new Set(['command', 'commands', 'expression', 'condition', 'hitCondition', 'logMessage', 'code']);
/** gdb's own command fields: only there is a plain `shell`/`!` line a command line (a Python log message `!mysql -p{code}` is code; attack 18ak). */
const GDB_COMMAND_FIELDS = new Set(['command', 'commands']);
/**
 * Whether a call's tool runs code its arguments give: `gdb` (gdb's commands, where a plain shell line
 * is a command line), `true` (the python and debugger toolsets: code kept as sent), or not.
 */
export type RunsCode = boolean | 'gdb';
/**
 * What the record of a call that runs must keep whole (refuseIfCut): `all` of it, for a call that
 * runs code or a program (a debugger's, or any tool that is not read-only: a mocks command line
 * past 64 KiB ran its tail unseen); `programs`, a program path, for any other.
 */
export type KeepWhole = 'all' | 'programs';
/**
 * Argument names whose value is a program that runs (gdb's and the debugger's `program`, Python's
 * `entry` and `pythonPath`), or the directory a program runs in, which decides what `./run` runs
 * (`cwd`): kept as sent, as code is, in every toolset. `token=x/../evil` was stored as
 * `token=[REDACTED]`, hiding what ran (attack 18aj q1-1); a `cwd` named like a token hid which
 * `./run` ran (18ao c2-1).
 */
const PROGRAM_FIELDS = new Set(['program', 'entry', 'pythonPath', 'cwd']);

/** `NAME=value` whose NAME decides what code runs (decidesCode). */
function loadsCodeAssignment(text: string): boolean {
  const name = /^([A-Za-z_][A-Za-z0-9_]{0,63})=/.exec(text);
  return name !== null && decidesCode(name[1]!);
}

function redactString(text: string, walk: Walk, code = false, command = false, gdbShell = false, env = false): string {
  // `LD_PRELOAD=/lib/x.so` as an item of an environment list: its value decides what code runs (decidesCode), kept as sent;
  // `GIT_SSH_COMMAND=...` or `MAVEN_OPTS=...` is read as a command line (its leading assignment read in turn: programWords).
  if (!code && !command && loadsCodeAssignment(text)) {
    if (READ_AS_COMMAND.test(text.slice(0, text.indexOf('=')))) command = true;
    else env = code = true;
  }
  if (walk.measure) {
    const kept = Math.min(text.length, MAX_STRING);
    walk.measure.push(kept);
    if (walk.stopAt) {
      walk.text = (walk.text ?? 0) + kept;
      walk.over ||= walk.text > walk.stopAt.text;
    }
    return '';
  }
  const { head, note } = headOf(text, walk);
  if (code && note) walk.codeCut = true;
  // Code a debugger runs is kept as sent: only the debugger can tell a secret in it from code. But a
  // gdb line that is plainly a shell command (`shell ...`, `!...`: gdb will not alias those names, and
  // the gdb toolset refuses one once a session may have redefined them) is a command line, its
  // passwords hidden; any other spelling of one is code, kept (the price).
  if (!code) return `${redactText(head, command)}${note}`;
  if (env) return `${hideUrlPasswords(head)}${note}`;
  const shell = gdbShell ? GDB_SHELL_LINE.exec(head) : null;
  return `${shell ? shell[0] + redactText(head.slice(shell[0].length), true) : head}${note}`;
}

/**
 * An array of strings read as one command line (argv): a secret that only its neighbours reveal
 * (`["--password", "hunter2"]`, `["mysql", "-phunter2"]`, `["curl", "-u", "admin:pw"]`,
 * `["sshpass", "-p", "pw"]`) is found in the words joined by blanks, with core/secrets.ts's own
 * rules. A secret found there that a word alone does not show is hidden from where it starts to the
 * end of its word: a word of argv is one value, blanks and all. Only a word the joined text finds a
 * secret in is read again alone.
 */
export function redactWords(words: readonly string[]): string[] {
  // One word alone: a program, shown (attack 18aj q1-1), unless it is an option or a whole command line in one string.
  if (words.length < 2) return words.map((w) => (w.startsWith('-') || /\s/.test(w) ? redactText(w, false, true) : w));
  const starts: number[] = [];
  let text = '';
  for (const w of words) {
    starts.push(text.length);
    text += `${w} `;
  }
  // What runs, read as for a command line (secrets.ts commandRuns): the program, past wrappers (`env PATH=. TOK`,
  // `timeout 5 TOK`), an interpreter's script file or code, a shell's -c script (attack 18ao e2-2: only word 0 was).
  const runs = commandRuns(words, { assignments: false });
  // The first word of code (an interpreter's or a shell's), or a script that reads its arguments: the words after it are
  // its arguments, which it may run. Only where commandRuns finds code: `-e` or `-c` before a program's own option is a
  // value (`psql -c "select 1" --password X`, `docker run -e A=1`: attack 18ap g2-4 stored the password in clear).
  // A list that starts with an option names no program (its caller gave none): any shell's or interpreter's code option counts.
  const unknown = words[0]!.startsWith('-');
  // A word that reads the command line's later words is a script's only in code, or where the program may be a script
  // that runs it (none named, or a script file): a MySQL user named `argv` kept the password after it (attack 18ap h2-4).
  const readsArgs = unknown || SCRIPT_FILE.test(words[0]!);
  const found = words.findIndex(
    (w, k) =>
      runs.code.has(k) ||
      runs.scripts.has(k) ||
      shellScriptAt(words, k) ||
      (READS_ARGUMENTS.test(w) && (readsArgs || runs.code.has(k) || runs.scripts.has(k))) ||
      (unknown && (codeOption(w) === 'attached' || (k > 0 && codeOption(words[k - 1]!) === 'next'))),
  );
  // A script that only runs its arguments (`exec "$@"`): they are a command of their own, options and all (attack x2-4).
  const script = found >= 0 && FORWARDS_ARGUMENTS.test(words[found]!) ? -1 : found;
  const shown = (k: number) => (k === 0 && !words[0]!.startsWith('-')) || runs.programs.has(k) || runs.code.has(k);
  const hits = new Map<number, Array<[number, number]>>();
  let i = 0;
  for (const [s, found, , word] of findSecrets(text, { keepCalls: true, argv: true })) {
    let e = found;
    while (i + 1 < words.length && starts[i + 1]! <= s) i++;
    const at = s - starts[i]!;
    if (at >= words[i]!.length) continue; // the blank between two words
    if (shown(i) || runs.scripts.has(i)) continue; // what runs is shown (attacks 18aj q1-1, 18ao e2-2); a script is read below
    // No shell reads argv, so a password there is hidden whatever it holds; but an inline script and
    // the words it reads are code, and shell in them is shown (findSecrets' rule for command lines).
    // A value read to the next blank (secrets.ts wordValueAt) is cut where shell begins, as a command line's value is read.
    if (script >= 0 && i >= script) {
      const active = text.slice(s, e).search(SHELL_ACTIVE);
      if (active === 0 || (active > 0 && word !== true)) continue;
      if (active > 0) e = s + active;
    }
    // Appended, not copied: a word of 21,845 hits (`'-p` repeated) took 45 s copying its list at each one (attack 18aa A3).
    const list = hits.get(i) ?? [];
    if (list.length === 0) hits.set(i, list);
    list.push([at, Math.min(e - starts[i]!, words[i]!.length)]);
  }
  // Words that are secrets by their place in the command (`aws configure set aws_secret_access_key X`, htpasswd -b's last word):
  // hidden whole, unless a script's arguments (attack 18aa A4).
  const placed = argvSecretWords(words);
  return words.map((w, k) => {
    if (shown(k)) return w;
    // A shell's -c script is a command line: its programs shown, its passwords hidden.
    if (runs.scripts.has(k)) return redactText(w, true);
    if (placed.has(k) && !(script >= 0 && script < k)) return hiddenInRun(w, [[0, w.length]], 'word').length > 0 ? REDACTED : w;
    const found = hits.get(k);
    if (!found) return redactText(w, false, true);
    const alone = findSecrets(w, { keepCalls: true, running: true });
    const known = new Set(alone.map(([s]) => s));
    // A secret the joined words show and this word alone does not: a whole word after an option
    // that is a word of its own (`--password`, `-p`, `Bearer`), or the value of a program's attached
    // option (`-pPW` after `mysql`), to where the secret ends. A word that only ends with an option
    // (`eval "$0" #--password`, an interpreter's comment) makes nothing of the next (attack 18v R7).
    // After an inline script (`-c`, `-e`, `--eval`), later words are the script's arguments, not
    // options with values: `-c 'eval "$1"' --password 'touch x'` runs the last word (attack 18w T2).
    const fresh = found.filter(([s]) => !known.has(s) && (s > 0 || (OPTION_WORD.test(words[k - 1] ?? '') && !(script >= 0 && script < k - 1))));
    // A secret that ends at a blank inside the word runs to the word's end: a word of argv is one value (`pass:my pass phrase`).
    // No shell reads argv: a password attached to its option or name is hidden to the next blank, whatever it holds
    // (`-uadmin:Hun$ter2` kept `$ter2`: attack 18ap h2-4), except in a script's arguments, where shell may run.
    const blanks = script >= 0 && script < k ? undefined : blankEnds(w);
    // Only a span a shell character stopped (`$`, a quote, a backslash, a bracket...): one that ends at `@` or `&` ends there.
    const toBlank = (e: number) => (blanks && e < w.length && /[$'"\\`(){}<>;|!*?[\]]/.test(w[e]!) ? blanks[e]! : e);
    // A word that is a name's or an option's assignment (`PGPASSWORD=correct horse`, `--password=a b`) is one value
    // after its `=`: its program gets all of it (attack e3-8: `["env", "PGPASSWORD=correct horse battery", ...]` kept two thirds).
    const assigned = blanks === undefined ? -1 : (ASSIGNED_WORD.exec(w)?.[0].length ?? -1);
    const spans = [
      ...alone.map(([s, e]) => [s, s === assigned ? w.length : toBlank(e)] as const),
      ...fresh.map(([s, e]) => [s, s === 0 || (/[ \t]/.test(w[e] ?? '') && !(script >= 0 && script < k)) ? w.length : toBlank(e)] as const),
    ].sort((a, b) => a[0] - b[0]);
    // Where a span ends up, what it hides is read again as a path would be, to the word's end when it runs on (hiddenInRun).
    return hideSpans(w, hiddenInRun(w, spans, 'word'), () => REDACTED).text;
  });
}

/**
 * A word of code that reads the command line's later words (`ARGV`, `sys.argv`, `process.argv`,
 * `$1`, `"$@"`, `$argv`): a script, whatever option (or none) brought it, so the words after it are
 * its arguments, kept. `awk 'BEGIN{system(ARGV[2])}' --password 'touch x'` ran the hidden word, as
 * `bash -xvuec 'eval "$1"'` did (attacks 18z Z2, 18y W3).
 */
const READS_ARGUMENTS = /\bARGV\b|\bargv\b|\$\{?[1-9@*]|\$argv\b/;
/** A program that is a script file by its name: it may run its arguments. */
const SCRIPT_FILE = /\.(?:py|sh|bash|zsh|js|mjs|cjs|ts|pl|rb|php|lua|r|tcl|awk)$/i;

/** A word that assigns a name or an option (`NAME=`, `--name=`, `-name=`): its value is the rest of the word. */
const ASSIGNED_WORD = /^(?:[A-Za-z_][A-Za-z0-9_]{0,127}|--?[A-Za-z0-9][A-Za-z0-9_.-]{0,63})=/;

/** For each offset of `word` (and its end), the first blank at or after it, or the word's end: one pass, however many spans ask. */
function blankEnds(word: string): Int32Array {
  const ends = new Int32Array(word.length + 1);
  ends[word.length] = word.length;
  for (let i = word.length - 1; i >= 0; i--) ends[i] = word[i] === ' ' || word[i] === '\t' ? i : ends[i + 1]!;
  return ends;
}

/** A word that is an option of its own, or an authorization scheme, whose value the next word may be. */
const OPTION_WORD = /^(?:-{1,2}[A-Za-z][A-Za-z0-9_-]{0,63}|Bearer|Basic|Token)$/i;

/**
 * Names of arguments that hold a command line as a list of words (argv), read joined: `args` (gdb's
 * open, python_start_session, debugger_launch), and the usual spellings of a command as a list.
 * Any other list of strings is read item by item: gdb's `commands` are separate command lines,
 * and read as one they hid code that ran (`["echo mysql", "print -pretty -- (is_admin = 1337)"]`
 * was kept as `print -p[REDACTED]`, attack 18ac e1-3); `env` entries are each NAME=value.
 */
const ARGV_NAMES = new Set(['args', 'argv', 'arguments', 'command', 'cmd', 'entrypoint']);

/** How a list is read: as one command line (`argv`, after `program` when the call names it apart), or item by item; `inList`: it is an item of a list. */
interface ListReading {
  argv: boolean;
  program?: string;
  inList?: boolean;
  /** Its strings are code a debugger runs (CODE_FIELDS of a toolset that runs code), or a program that runs: kept as sent. */
  code?: boolean;
  /** Its strings are gdb commands: a plain `shell`/`!` line among them is a command line (GDB_SHELL_LINE). */
  gdbShell?: boolean;
  /** A command line (a `command`, `cmd` or `entrypoint` string): the programs it runs are shown. */
  command?: boolean;
  /** With `code`: the value of a variable that decides what runs (decidesCode), kept but for its URLs' passwords. */
  env?: boolean;
  /** A list of `NAME=value` environment entries (ENV_LISTS), or (`entry`) one of them. */
  envList?: boolean;
  envEntry?: boolean;
  /** With an environment (a list or an object): the variables the call's command line or argv names (commandVariables), whose values are code. */
  mentioned?: ReadonlySet<string>;
}

/** Names of arguments that hold environment entries as a list of `NAME=value` strings (the mocks tools', python_start_session's). */
const ENV_LISTS = new Set(['env', 'environment', 'environ']);

/**
 * An environment entry whose name says its value is a secret (`PGPASSWORD=correct horse battery staple`), its whole value
 * hidden: no shell splits an entry, the variable holds all of it (read as text, only `correct` was hidden: attack t2-3).
 * Undefined for any other entry (a variable that decides what code runs is kept, as everywhere: decidesCode).
 */
function hiddenEnvEntry(text: string, mentioned?: ReadonlySet<string>): string | typeof CODE_ENTRY | undefined {
  // Any name a program can be given (npm's `npm_config_//host/:_authToken`, a name of 130 characters: attack v2-5).
  const name = /^([^=]{1,1024})=./s.exec(text)?.[1];
  // A name that says its value is a command, in any case (`db_password_cmd`: attack i3-3), is read as one.
  if (name === undefined || !SECRET_WORD.test(name) || decidesCode(name) || NAMES_A_COMMAND.test(name)) return undefined;
  // A variable the call's command names is code (`{"command": "bash -c '$TOKEN'", "env": ["TOKEN=touch m"]}`: attack e3-5).
  return ranByCommand(name, text.slice(name.length + 1), mentioned) ? CODE_ENTRY : `${name}=${REDACTED}`;
}

/** hiddenEnvEntry's word for an entry that is code: kept as sent. */
const CODE_ENTRY = '\u0000code';

/** Whether the call's command runs variable `name`'s `value` (commandVariables, valueIsCode). */
function ranByCommand(name: string, value: unknown, mentioned: ReadonlySet<string> | undefined): boolean {
  return mentioned !== undefined && valueIsCode(mentioned, name, typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));
}

/** What of a call's command line is read for the variables it names: its head (a value past it is kept as its digest anyway). */
const MENTIONS_READ = 64 * 1024;

/**
 * The variables a call's command line or argv (ARGV_NAMES, beside its environment) names anywhere
 * but where it assigns them (mentionedVariables): their values in the call's environment are code.
 */
function commandVariables(object: Record<string, unknown>): Set<string> {
  const names = new Set<string>();
  for (const k of ARGV_NAMES) {
    const v = object[k];
    const text = typeof v === 'string' ? v : Array.isArray(v) && v.every((w) => typeof w === 'string') ? (v as string[]).join(' ') : undefined;
    if (text === undefined) continue;
    for (const n of mentionedVariables(text.slice(0, MENTIONS_READ), typeof v === 'string' && k !== 'args' && k !== 'argv' ? 'shell' : 'argv')) names.add(n);
  }
  return names;
}

function redactArray(value: unknown[], depth: number, walk: Walk, reading: ListReading): unknown[] {
  // Items past MAX_ITEMS are kept as their digest, written and hashed whole: not small (attack 18ab C1).
  if (walk.stopAt && value.length > MAX_ITEMS) walk.over = true;
  const items = value.slice(0, MAX_ITEMS);
  let out: unknown[];
  const program = reading.argv ? reading.program : undefined;
  const lead = program === undefined ? [] : [program];
  const strings = items.every((v) => typeof v === 'string');
  if (!walk.measure && !reading.argv && reading.inList === true && strings && secretPairList(items as string[])) {
    // A name/value pair as a list, an item of a list of pairs (`Object.entries`, a Headers init, Python's `dict.items()`):
    // `[["DB_PASSWORD", "x"]]` hides "x" (attack 18ac e1-5). Only there: a list of two strings under a name is no pair, and
    // gdb's `commands: ["pwd", "print is_admin=4242"]` read as one hid the command that ran (attack 18ad g1-7).
    walk.values += 2;
    out = [redactString(items[0] as string, walk), REDACTED];
  } else if (!walk.measure && reading.argv && items.length + lead.length >= 2 && strings && walk.values + items.length <= MAX_VALUES) {
    walk.values += items.length;
    const parts = (items as string[]).map((v) => headOf(v, walk));
    // Read after the program's name when the call gives it apart (`{program: "mysql", args: ["-pX"]}`), as a command line would show it.
    out = redactWords([...lead, ...parts.map((p) => p.head)])
      .slice(lead.length)
      .map((w, k) => `${w}${parts[k]!.note}`);
  } else {
    out = [];
    for (let i = 0; i < items.length; i++) {
      if (walk.over) return out;
      if (!walk.measure && walk.values >= MAX_VALUES) {
        out.push(pastValues(walk, value.length - i, jsonOf(value.slice(i))));
        return out;
      }
      // An item that is itself a list is read as its parent is: argv inside argv, pairs inside a list of pairs.
      out.push(
        redactValue(items[i], depth + 1, walk, {
          argv: reading.argv && Array.isArray(items[i]),
          inList: true,
          ...(reading.envList ? { envEntry: true, ...(reading.mentioned ? { mentioned: reading.mentioned } : {}) } : {}),
          ...(reading.code ? { code: true } : {}),
          ...(reading.gdbShell ? { gdbShell: true } : {}),
        }),
      );
    }
  }
  if (value.length > MAX_ITEMS) out.push(walk.measure ? '' : leftOutNote(walk, `cut: ${value.length} items in all`, jsonOf(value)));
  return out;
}

/** What stands for the items (entries) of a container left out once the record holds MAX_VALUES values. */
function pastValues(walk: Walk, left: number, json: string | undefined): string {
  return leftOutNote(walk, `cut: the record keeps ${MAX_VALUES} values; ${left} more here`, json);
}

/** Fields of a name/value pair object (`{"name": "DB_PASSWORD", "value": ...}`, Kubernetes' and ECS's env entries) that name it, and that hold its value. */
const PAIR_NAMES = ['name', 'key', 'Name', 'Key'];
const PAIR_VALUES = new Set(['value', 'Value', 'values', 'Values', 'val', 'Val', 'data', 'Data']);

/** Whether a list of strings is a name/value pair whose name (a word: `DB_PASSWORD`, `X-Api-Key`, not `PGPASSWORD=x`) looks secret, its value not empty. */
function secretPairList(items: readonly string[]): boolean {
  return items.length === 2 && /^[A-Za-z0-9_.-]{1,256}$/.test(items[0]!) && SECRET_NAME.test(items[0]!) && items[1] !== '';
}

/** Whether a name/value pair names a command or options (READ_AS_COMMAND). */
function commandNamed(value: Record<string, unknown>): boolean {
  return PAIR_NAMES.some((f) => typeof value[f] === 'string' && READ_AS_COMMAND.test(value[f] as string));
}

/** Whether an object is a name/value pair whose name is a variable that decides what code runs (decidesCode). */
function namesCodeLoader(value: Record<string, unknown>): boolean {
  return PAIR_NAMES.some((f) => typeof value[f] === 'string' && decidesCode(value[f] as string));
}

/** Whether an object is a name/value pair whose name looks secret: its value field is then a secret. */
function secretPair(value: Record<string, unknown>): boolean {
  return PAIR_NAMES.some((f) => typeof value[f] === 'string' && (value[f] as string).length <= MAX_KEY && SECRET_NAME.test(value[f] as string));
}

/** How the list under name `k` of `object` is read (ARGV_NAMES: as argv, after the program `object` names beside it). */
function listReading(k: string, object: Record<string, unknown>, walk: Walk): ListReading {
  // A program, a variable that decides what code runs (`{"LD_PRELOAD": ...}`, `{"name": "PYTHONPATH", "value": ...}`): kept as sent.
  if (PROGRAM_FIELDS.has(k)) return { argv: false, code: true };
  // A command or options (`GIT_SSH_COMMAND`, `MAVEN_OPTS`) is read as a command line: its programs shown, its passwords hidden (18ap h2-3).
  if (decidesCode(k) && READ_AS_COMMAND.test(k)) return { argv: false, command: true };
  if (PAIR_VALUES.has(k) && namesCodeLoader(object) && commandNamed(object)) return { argv: false, command: true };
  if (decidesCode(k) || (PAIR_VALUES.has(k) && namesCodeLoader(object))) return { argv: false, code: true, env: true };
  if (walk.code && CODE_FIELDS.has(k)) return { argv: false, code: true, ...(walk.code === 'gdb' && GDB_COMMAND_FIELDS.has(k) ? { gdbShell: true } : {}) };
  if (ENV_LISTS.has(k) && Array.isArray(object[k])) return { argv: false, envList: true, ...(walk.measure ? {} : { mentioned: commandVariables(object) }) };
  if (ENV_LISTS.has(k) && object[k] !== null && typeof object[k] === 'object' && !walk.measure) return { argv: false, mentioned: commandVariables(object) };
  if (!ARGV_NAMES.has(k)) return { argv: false };
  // A command line given as one string (not a list of words): read as text, its programs shown.
  if (typeof object[k] === 'string' && k !== 'args' && k !== 'argv') return { argv: false, command: true };
  const program = k === 'args' ? programOf(object) : undefined;
  return program === undefined ? { argv: true } : { argv: true, program };
}

/** The program a call names beside its `args` (gdb's open, python_start_session's entry, debugger_launch), by its file name. */
function programOf(object: Record<string, unknown>): string | undefined {
  const program = object.program ?? object.entry;
  return typeof program === 'string' && program !== '' ? path.basename(program).slice(0, MAX_KEY) : undefined;
}

function redactValue(value: unknown, depth: number, walk: Walk, reading: ListReading = { argv: depth === 0 }): unknown {
  walk.values++;
  if (walk.stopAt && walk.values > walk.stopAt.values) walk.over = true;
  if (typeof value === 'string') {
    const hidden = reading.envEntry === true && !walk.measure ? hiddenEnvEntry(value, reading.mentioned) : undefined;
    if (hidden === CODE_ENTRY) return redactString(value, walk, true);
    if (hidden !== undefined) return hidden;
    return redactString(value, walk, reading.code === true, reading.command === true, reading.gdbShell === true, reading.env === true);
  }
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) {
    // What lies this deep is not measured: the record goes to the thread, where it is written and hashed (attack 18aa A5).
    if (walk.stopAt) walk.over = true;
    return walk.measure ? '' : leftOutNote(walk, 'nested too deep', jsonOf(value));
  }
  if (Array.isArray(value)) return redactArray(value, depth, walk, reading);
  const out: Record<string, unknown> = Object.create(null);
  const object = value as Record<string, unknown>;
  const pair = secretPair(object);
  // A variable that decides what code runs is read as such, whatever its name (`{"CARGO_..._CREDENTIAL_PROVIDER": PROG}`: attack y2-3).
  const hidden = (k: string) =>
    (k.length <= MAX_KEY && SECRET_NAME.test(k) && !decidesCode(k) && !NAMES_A_COMMAND.test(k) && !(pair && PAIR_NAMES.includes(k)) && !ranByCommand(k, object[k], reading.mentioned)) ||
    (pair && PAIR_VALUES.has(k));
  if (walk.measure) {
    // The names only, not every entry's pair: an object of 10,000 entries keeps MAX_ITEMS (and is not small: the rest is written and hashed).
    const names = Object.keys(object);
    if (walk.stopAt && names.length > MAX_ITEMS) walk.over = true;
    for (let i = 0; i < names.length && i < MAX_ITEMS && !walk.over; i++) {
      const k = names[i]!;
      if (k.length <= MAX_KEY) redactString(k, walk);
      else if (walk.stopAt) walk.over = true; // a long name is kept as its digest, hashed whole: not small
      if (!hidden(k)) redactValue(object[k], depth + 1, walk, listReading(k, object, walk));
    }
    return out;
  }
  const entries = Object.entries(object);
  const kept = entries.slice(0, MAX_ITEMS);
  const numbered = new Map<string, number>();
  for (let i = 0; i < kept.length; i++) {
    if (walk.values >= MAX_VALUES) {
      out['[cut]'] = pastValues(walk, entries.length - i, jsonOf(Object.fromEntries(entries.slice(i))));
      return out;
    }
    const [k, v] = kept[i]!;
    const shown = k.length > MAX_KEY ? leftOutNote(walk, `name of ${k.length} characters`, k) : redactString(k, walk);
    // Two names that read alike once redacted both stay (one value must never replace the other), numbered on from the
    // last number this name was given: trying 2, 3, ... for each of many `token=..` names was quadratic (attack 18ab C2).
    const name = unusedName(shown, out, numbered);
    out[name] = hidden(k) && v !== null && v !== undefined && v !== '' ? (walk.values++, REDACTED) : redactValue(v, depth + 1, walk, listReading(k, object, walk));
  }
  if (entries.length > MAX_ITEMS) out['[cut]'] = leftOutNote(walk, `${entries.length} entries in all`, jsonOf(value));
  return out;
}

/**
 * A copy of tool arguments safe to keep: values under secret-looking names become "[REDACTED]",
 * and in text only the secret itself does (the value of NAME=value, NAME = value, "NAME": value and
 * ["NAME"] = value for a secret-looking NAME, of --password VALUE, a MySQL client's -pVALUE,
 * sshpass -p, redis-cli -a, curl -u user:PASSWORD, docker/podman/... login -p, a URL's password,
 * signature and token query parameters, Bearer/Basic credentials, Digest's response=, debugkit
 * keys), in an array of strings also when the option and its value are separate items (argv).
 * Strings are kept whole up to MAX_STRING characters, arrays and objects up to MAX_ITEMS; the
 * record keeps MAX_TEXT characters of text, each string the same share at most (fairShare), never
 * under MIN_HEAD; what is left out is stated with its size and SHA-256. The record's JSON is at
 * most RECORD_GROWTH times the arguments' own (`inputLength`, their JSON's length, when the caller
 * has it) plus RECORD_SLACK, and `max` (MAX_RECORD) at most: past that, runs of the same note are
 * folded into one, and if that is not enough it keeps the head of its JSON.
 */
export function redact(value: unknown, bound: { inputLength?: number; max?: number; code?: RunsCode; whole?: KeepWhole } = {}): unknown {
  const inputLength = bound.inputLength ?? jsonOf(value)?.length;
  const bounds = recordLimit(inputLength, bound.max ?? MAX_RECORD);
  const code = bound.code ?? false;
  return wholeBounded(redactMeasured(value, measure(value)!, bounds.limit, code, bound.whole), bounds, inputLength, bound.whole === 'all');
}

/**
 * The record of a call that runs must show what it runs whole: the code of a debugger's call (gdb,
 * python, debugger: any of its arguments, since a value left out may be a breakpoint whose
 * condition runs) and a program path in any call. A 72,009-character `program` of `tools/../`
 * repeated ran `evil_prog` while the record kept its head and digest; a breakpoint list's 1,001st
 * condition ran `os.system` past the 1,000 items kept (attack 18ak s1-1, s1-2). Such a call is
 * refused (beginCall), not run with part of it unseen.
 */
function refuseIfCut(walk: Walk, whole: KeepWhole): void {
  const what = whole === 'all' ? walk.leftOut : walk.codeCut ? 'a program path was cut' : undefined;
  if (what === undefined) return;
  throw new AuditRedactionError(`the audit keeps what a call runs whole, and this record could not (${what})`);
}

/**
 * JSON characters one record's arguments come to at most, once redacted: MAX_TEXT bounds their
 * text, but not the notes that stand for what was cut (~95 characters each) nor the names and
 * labels, and a record of 729 KB was kept as 1.67 MB (attack 18ab C3).
 */
export const MAX_RECORD = 320 * 1024;
/**
 * The same for a call refused before it ran (for its scope, or by a limit): it did nothing, so the
 * head of its arguments is enough. A batch of 100 refused calls of 9 KB each added 27 MB to the
 * audit (attack e1-4). 24 KiB: room for the text the last redaction pass keeps (MAX_TEXT / 16,
 * 16 KiB, shared by its strings) with their notes and names, so most refused records keep every
 * value, each string its head with its length and SHA-256.
 */
export const MAX_REFUSED_RECORD = 24 * 1024;
/**
 * How much longer than the arguments' own JSON their record may be: four times, plus RECORD_SLACK
 * characters. Redaction labels make text at most about four times longer (`-pX` becomes
 * `-p[REDACTED]`, `token=0` `token=[REDACTED] (2)`); a value nested too deep is a note of ~93
 * characters, so 3,000 empty arrays 16 deep (9 KB of arguments) were kept as 279 KB (attack e1-4).
 */
export const RECORD_GROWTH = 4;
export const RECORD_SLACK = 4 * 1024;

/**
 * The most JSON characters the redacted record of arguments whose own JSON is `inputLength`
 * characters keeps, `max` at most, and why that many.
 */
function recordLimit(inputLength: number | undefined, max: number): { limit: number; why: string } {
  const grown = inputLength === undefined ? Number.POSITIVE_INFINITY : RECORD_GROWTH * inputLength + RECORD_SLACK;
  if (grown >= max) return { limit: max, why: max === MAX_REFUSED_RECORD ? 'the most the record of a refused call keeps' : 'the most a record keeps' };
  return { limit: grown, why: `${RECORD_GROWTH} times the ${inputLength} characters of the arguments' own JSON, plus ${RECORD_SLACK}` };
}

/** A note standing for a value not kept (digestNote: nested too deep, or cut), which a run of the same may fold into one. */
const FOLDABLE_NOTE = /^\[((?:nested too deep|cut: [^[\]]*)(?:, sha256 [0-9a-f]{64})?)\]$/;

/**
 * `redacted` with each run of the same note in an array folded into one, counted:
 * `[1000 × nested too deep, sha256 ...]` for 1,000 equal values nested too deep.
 */
function foldNotes(redacted: unknown): unknown {
  if (redacted === null || typeof redacted !== 'object') return redacted;
  if (!Array.isArray(redacted)) {
    const out: Record<string, unknown> = Object.create(null);
    for (const [k, v] of Object.entries(redacted)) out[k] = foldNotes(v);
    return out;
  }
  const out: unknown[] = [];
  for (let i = 0; i < redacted.length;) {
    const item: unknown = redacted[i];
    let run = 1;
    const note = typeof item === 'string' ? FOLDABLE_NOTE.exec(item) : null;
    if (note) while (redacted[i + run] === item) run++;
    out.push(note && run > 1 ? `[${run} × ${note[1]}]` : foldNotes(item));
    i += run;
  }
  return out;
}

/**
 * Redacted arguments within their limit (recordLimit): past it, runs of the same note folded
 * (foldNotes), and if that is still too long, the head of their JSON (redacted already), saying
 * how long it was, and how long the arguments' own JSON was. No digest of the arguments: a SHA-256
 * of text not redacted would let whoever reads the audit check a guessed secret.
 */
function wholeBounded(redacted: unknown, { limit, why }: { limit: number; why: string }, inputLength: number | undefined, runs = false): unknown {
  const whole = JSON.stringify(redacted) ?? 'null';
  if (whole.length <= limit) return redacted;
  if (runs) throw new AuditRedactionError(`the audit keeps what a call runs whole, and this record could not (${whole.length} characters of JSON, over ${limit}: ${why})`);
  const folded = foldNotes(redacted);
  const json = JSON.stringify(folded) ?? 'null';
  if (json.length <= limit) return folded;
  // The head is kept as a string: cut until its JSON (quotes and backslashes escaped) fits too.
  let keep = limit;
  while (keep > 0 && (JSON.stringify(json.slice(0, keep)) ?? '').length > limit) keep = Math.floor(keep * 0.75);
  return {
    '[cut]': `the redacted arguments are ${whole.length} characters of JSON, over the ${limit} this record keeps (${why}): their head follows`,
    ...(inputLength !== undefined ? { arguments_json_chars: inputLength } : {}),
    head: json.slice(0, keep),
  };
}

/** The lengths of `value`'s strings as redact bounds them (its first walk); undefined once they pass `stopAt`. */
function measure(value: unknown, stopAt?: Walk['stopAt']): number[] | undefined {
  const walk: Walk = { measure: [], share: 0, values: 0, ...(stopAt ? { stopAt } : {}) };
  redactValue(value, 0, walk);
  return walk.over ? undefined : walk.measure;
}

/** redact's second walk, given what its first measured. */
function redactMeasured(value: unknown, lengths: number[], limit: number, code: RunsCode, whole: KeepWhole | undefined): unknown {
  // Redaction labels and the notes of what was cut add to the text kept (a `-p` hit every 3 characters becomes a 10-character
  // label): past the record's limit, the strings are redacted again with half the budget, so every value stays, each shorter.
  for (let budget = MAX_TEXT; ; budget /= 2) {
    const walk: Walk = { measure: undefined, share: fairShare(lengths, budget), values: 0, code };
    const redacted = redactValue(value, 0, walk);
    if (whole) refuseIfCut(walk, whole);
    if (budget <= MAX_TEXT / 16 || (JSON.stringify(redacted) ?? '').length <= limit) return redacted;
  }
}

/**
 * Text a record may hold and still be redacted on the event loop (a few milliseconds at most: the
 * argv rules read the words joined, then each word a secret was found in alone again, about 1 µs
 * a character). A record with more, or with more values than INLINE_VALUES, is redacted on a
 * worker thread: four argv words of 65,000 characters took ~200-300 ms of the loop each, refused
 * calls too, and a batch of 15 such calls held every client ~3 s (attack 18x V2).
 */
const INLINE_TEXT = 8 * 1024;
const INLINE_VALUES = 4096;
/** Audits of one key's refused calls waiting for the redaction thread, past which its next refused call keeps only its size (W6). */
const REFUSED_WAITING = 2;
let pool: WorkerPool | undefined;

/**
 * `redact` for an audit record, never holding the event loop: small arguments at once (the walk
 * that measures them stops as soon as they are not small), the rest written to JSON in slices of
 * the loop's time and redacted on the redaction thread (jobs of the key with the fewest running
 * first). Arguments it cannot redact in time (30 s) are not kept: the record says so, and how much
 * text they held.
 *
 * A refused call (`refused`) did not run, so its record keeps MAX_REFUSED_RECORD characters of
 * JSON at most (not MAX_RECORD), and it may wait: such records hold at most one of
 * the two threads, and a key that already has REFUSED_WAITING of them waiting keeps only the size
 * of the next one's arguments (no digest: a SHA-256 of arguments not redacted would let whoever
 * reads the audit check a guessed secret). Two keys flooding big refused calls held back the
 * records, and so the answers, of other keys' big calls for ~800 ms each (attack 18y W6).
 */
export async function redactForAudit(value: unknown, owner?: string, refused = false, code: RunsCode = false, runs = code !== false): Promise<unknown> {
  const max = refused ? MAX_REFUSED_RECORD : MAX_RECORD;
  // A refused call ran nothing: its record may be cut.
  const whole: KeepWhole | undefined = refused ? undefined : runs ? 'all' : 'programs';
  const lengths = measure(value, { text: INLINE_TEXT, values: INLINE_VALUES });
  if (lengths) {
    // A turn of the loop first: the calls of one JSON-RPC batch are audited one after another, and 100 of a few KiB each,
    // redacted back to back, held every client 160-200 ms (attack 18y W1).
    await new Promise((resolve) => setImmediate(resolve));
    const inputLength = jsonOf(value)?.length;
    const bounds = recordLimit(inputLength, max);
    return wholeBounded(redactMeasured(value, lengths, bounds.limit, code, whole), bounds, inputLength, whole === 'all');
  }
  pool ??= new WorkerPool({ name: 'audit redaction', entry: workerEntry(import.meta.url, 'redact-worker'), resourceLimits: { maxOldGenerationSizeMb: 512 } });
  let json: string;
  try {
    json = await jsonSliced(value, new TimeSlice(JSON_SLICE_MS));
  } catch (err) {
    return notKept(refused, `the arguments could not be written as JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (refused && pool.waiting(owner ?? '') >= REFUSED_WAITING) {
    return {
      '[not kept]': `the arguments of this refused call (${json.length} characters of JSON) were not redacted: the key already had ${REFUSED_WAITING} refused calls' arguments waiting for redaction`,
    };
  }
  let answer: { record: unknown } | { notWhole: string };
  try {
    answer = await pool.run<typeof answer>({ json, max, code, ...(whole ? { whole } : {}) }, { timeoutMs: 30_000, mayWait: refused, ...(owner !== undefined ? { owner } : {}) });
  } catch (err) {
    return notKept(refused, `the arguments (${json.length} characters of JSON) could not be redacted: ${err instanceof Error ? err.message : String(err)}`);
  }
  // The thread's refuseIfCut, said as it said it.
  if ('notWhole' in answer) throw new AuditRedactionError(answer.notWhole);
  return answer.record;
}

/**
 * Arguments the audit could not redact: a refused call's record says so; a call that would run
 * must not (AuditRedactionError: beginCall records the refusal and the call is not run). A call
 * that ran was audited as `[not kept]` after its redaction ran out of time (attack 18aa A3).
 */
function notKept(refused: boolean, why: string): unknown {
  if (!refused) throw new AuditRedactionError(why);
  return { '[not kept]': why };
}

/** A call's arguments could not be redacted for its audit record: the call is refused, not run unaudited. */
export class AuditRedactionError extends Error {
  override name = 'AuditRedactionError';
}

/** Main-thread time the JSON of one record's arguments is written in, per slice. */
const JSON_SLICE_MS = 4;

/** A short field (tool name, client name, session id) bounded, its length and SHA-256 stated when cut. */
export function boundField(text: string, max = 512): string {
  // A client's name, a tool's, a session id: any text a client chose, its secrets hidden as in an argument (attack y2-4:
  // `clientInfo.name` holding `Bearer dk_...` was stored in clear on every entry).
  const bounded = text.length <= max ? text : text.slice(0, max);
  return `${redactText(bounded)}${text.length <= max ? '' : digestNote(`cut: ${text.length} characters in all`, text)}`;
}

/** The debug session an argument list names (gdb `id`, python `session_id`, ...), if any. */
export function debugSessionOf(args: unknown): string | null {
  if (!args || typeof args !== 'object') return null;
  const a = args as Record<string, unknown>;
  for (const name of ['session_id', 'sessionId', 'id']) {
    if (typeof a[name] === 'string' || typeof a[name] === 'number') return String(a[name]);
  }
  return null;
}

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** A W3C traceparent worth recording, or null (malformed values are not kept). */
export function cleanTraceparent(value: unknown): string | null {
  return typeof value === 'string' && TRACEPARENT.test(value.trim().toLowerCase()) ? value.trim().toLowerCase() : null;
}
