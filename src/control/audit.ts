import { createHash, createHmac, randomBytes } from 'node:crypto';

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
 * cannot hold it) become U+FFFD.
 */
export function storableText(text: string): string {
  const t = text as string & { isWellFormed(): boolean; toWellFormed(): string };
  const well = t.isWellFormed() ? text : t.toWellFormed();
  return well.includes('\u0000') ? well.replaceAll('\u0000', '\uFFFD') : well;
}

/** A copy of `value` whose every string, object keys included, is storable text. */
export function storableValue(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(storableValue);
  const out: Record<string, unknown> = Object.create(null);
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[storableText(k)] = storableValue(v);
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
  private constructor(private readonly secret: Buffer) {}

  /** The key as kept in its file: 64 hexadecimal characters. */
  static fromText(text: string, source: string): AuditKey {
    const hex = text.length <= 4096 ? text.trim() : '';
    if (!/^(?:[0-9a-fA-F]{2}){32,64}$/.test(hex)) {
      throw new Error(`${source} is not an audit key: it must hold 64 hexadecimal characters (32 random bytes; debugkit writes one on first use)`);
    }
    return new AuditKey(Buffer.from(hex, 'hex'));
  }

  static generate(): { key: AuditKey; text: string } {
    const secret = randomBytes(32);
    return { key: new AuditKey(secret), text: `${secret.toString('hex')}\n` };
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
    if (kind === 'plain' && this.keyedFrom !== undefined && record.seq > this.keyedFrom) return undefined;
    return kind;
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
// MAX_TEXT per record), and every pattern is linear: each either starts only at a literal (`://`,
// `dk_`, `Bearer`, `Digest`, `--`, a program's name) or a hand-written scan, no quantifier is both
// unbounded and followed by one that can match the same characters, and a scan that finds nothing
// goes on from where it stopped, not from where it started. Only the secret itself is replaced,
// never the text around it.
// ---------------------------------------------------------------------------------------------

/** Characters of one string kept whole; past it the string is kept up to here, with its length and SHA-256. */
export const MAX_STRING = 64 * 1024;
/** Items of one array (entries of one object) kept; past it, the rest is counted and hashed. */
export const MAX_ITEMS = 1000;
/** Characters of text one record keeps in all; strings past it are kept as their length and SHA-256 only. */
export const MAX_TEXT = 256 * 1024;
const MAX_KEY = 256;
const MAX_DEPTH = 16;
export const REDACTED = '[REDACTED]';

/**
 * Argument names whose whole value is a secret. "pass" counts as a word of the name (DB_PASS,
 * pass), not inside another (GIT_ASKPASS names a program, BYPASS_CHECKS a switch: both are kept).
 */
const SECRET_NAME =
  /password|passwd|passphrase|(?:^|[_-])pass(?:$|[_-])|secret|token|api[_-]?key|authori[sz]ation|credential|private[_-]?key|cookie|session[_-]?key|signature|[_-]pwd$|^auth$|^key$|^sig$/i;
/** Names (in text: NAME=value, "NAME": value, --NAME value) whose value is a secret. */
const SECRET_WORD = /password|passwd|passphrase|(?:^|[_-])pass(?:$|[_-])|secret|token|api[_-]?key|credential|private[_-]?key|signature|authori[sz]ation|cookie|[_-]pwd$/i;
/** Names that are a secret only as a URL query parameter (?sig=, &key=). */
const QUERY_SECRET = /^(?:sig|key|auth|apikey|code)$/i;
/** A flag that names where a secret is, not the secret (--password-file FILE). */
const NOT_A_VALUE = /(?:file|path|env|stdin|prompt|dir)$/i;
const NAME_CHAR = /[A-Za-z0-9_.-]/;
/** Characters that end an unquoted value: blanks, quotes, and shell or code punctuation. */
const VALUE_END = new Set([...' \t\r\n\f\v"\'`$;&|<>(){}[],\\']);
/** Characters that end an unquoted value in a shell word or a config line: brackets and commas are part of it there. */
const SHELL_VALUE_END = new Set([...' \t\r\n\f\v"\'`$;&|<>\\']);
const AUTH_SCHEME = /^(?:Bearer|Basic|Digest|Token|Negotiate)$/i;
/**
 * A name in code (`os.system`, `getattr`, `self.key`): an identifier or a dotted path of them,
 * each part bounded. Sticky, run at the start of an unquoted value.
 */
const CODE_NAME = /[A-Za-z_$][\w$]{0,63}(?:\.[A-Za-z_$][\w$]{0,63}){0,15}/y;
/** What follows a name in code and never a secret literal in a shell word, an URL or a config line: a call, an index, the end of an argument. */
const AFTER_CODE_NAME = new Set([...'()[]{},']);
/** Whole values that are a constant of code or config, not a secret (`password = None`). */
const CONSTANT = new Set(['None', 'True', 'False', 'null', 'nil', 'undefined', 'true', 'false']);

type Span = [start: number, end: number];

/** The number of blanks (spaces, tabs; at most 8) at `at`. */
function blanksAt(text: string, at: number): number {
  let i = at;
  while (i < text.length && i - at < 8 && (text[i] === ' ' || text[i] === '\t')) i++;
  return i - at;
}

/**
 * The span of the secret value starting at `at`, if there is one: the content of single quotes
 * (nothing in them is expanded), the literal part of double quotes (`$(...)`, `${...}` and
 * backquotes are code, kept), or an unquoted word (up to a blank, a quote or shell or code
 * punctuation). Each scan stops at the first character that ends it, and callers go on after the
 * span they keep, so no character is scanned twice.
 */
function valueAt(text: string, at: number, fString = false, shellWord = false): Span | undefined {
  const q = text[at];
  let i = at + (q === "'" || q === '"' ? 1 : 0);
  // In an f-string, `{...}` is code that runs: the secret is the literal part before it.
  if (q === "'") {
    while (i < text.length && text[i] !== "'" && text[i] !== '\n' && !(fString && text[i] === '{')) i++;
    return (text[i] === "'" || (fString && text[i] === '{')) && i > at + 1 ? [at + 1, i] : undefined;
  }
  if (q === '"') {
    while (i < text.length && !'"$`\\\n'.includes(text[i]!) && !(fString && text[i] === '{')) i++;
    return i > at + 1 ? [at + 1, i] : undefined;
  }
  const ends = shellWord ? SHELL_VALUE_END : VALUE_END;
  while (i < text.length && !ends.has(text[i]!)) i++;
  return i > at ? [at, i] : undefined;
}

/**
 * Whether the unquoted value at `at` is code rather than a secret literal: a name (an identifier
 * or a dotted path) followed at once by a call, an index, a closing bracket, a comma or a colon, as
 * a keyword argument, a lambda default or a dict value is (`dict(token=os.system)`,
 * `lambda token=eval: ...`, `token=getattr(os, "system")`); a whole value that is a constant
 * (`None`, `true`, ...); and, after `=` with blanks on both sides (an assignment in code, never in
 * the shell), a whole value that is a dotted path (`token = os.system`). A secret written in code is
 * a quoted literal (redacted); one in a shell word, a URL or a config line ends at a blank, `&`, `;`
 * or the end of the line (redacted), and so does a bare name after `NAME = ` (`PASSWORD = hunter2`).
 * Bounded: the name is at most 16 parts of 64 characters, and it is checked before the value is
 * scanned, so a value that is code costs no scan.
 */
function isCodeAt(text: string, at: number, spaced: boolean, lambdaDefault = false): boolean {
  if (text[at] === '"' || text[at] === "'") return false;
  CODE_NAME.lastIndex = at;
  const m = CODE_NAME.exec(text);
  if (m === null) return false;
  const after = text[at + m[0].length];
  // A colon ends a value in code only as a lambda's body begins (`lambda token=eval: ...`): a
  // keyword argument or an item never has one after it, a shell word may (`(PGPASSWORD=a:b psql)`).
  if (after === ':') return lambdaDefault;
  if (after !== undefined && AFTER_CODE_NAME.has(after)) return true;
  // A call with blanks before its parenthesis (`getattr (os, "system")`).
  if (after === ' ' || after === '\t') {
    const k = at + m[0].length + blanksAt(text, at + m[0].length);
    if (text[k] === '(') return true;
  }
  if (after !== undefined && !VALUE_END.has(after)) return false; // the value goes on: not a name
  return CONSTANT.has(m[0]) || (spaced && m[0].includes('.'));
}

/**
 * The unquoted value at `at` is a dotted path in code and nothing more (`os.system`), ending its
 * statement (at `;`, a line's end or the text's end). A shell word followed by a command
 * (`NAME=value cmd`) or a word without a dot is never taken for one.
 */
function isDottedStatement(text: string, at: number): boolean {
  CODE_NAME.lastIndex = at;
  const m = CODE_NAME.exec(text);
  if (m === null || !m[0].includes('.')) return false;
  const after = text[at + m[0].length];
  return after === undefined || after === ';' || after === '\n' || after === '\r';
}

/**
 * Whether a name is called (`name(`, the parenthesis right after it, not inside a longer name or
 * word: `x-name(`, `my_name(` and `name (` in prose are not calls) after a place in the text:
 * where each name is last called is found once (one scan of the text per distinct name, for at most MAX_CALLED names; past that,
 * names are taken as not called and their values stay hidden), so a text of many assignments
 * costs no more than a few scans.
 */
class CalledNames {
  private static readonly MAX_CALLED = 16;
  private readonly lastCall = new Map<string, number>();
  constructor(private readonly text: string) {}

  later(name: string, after: number): boolean {
    let last = this.lastCall.get(name);
    if (last === undefined) {
      if (this.lastCall.size >= CalledNames.MAX_CALLED) return false;
      last = -1;
      // The last `name(` (or `name (`) not inside a longer name.
      const call = new RegExp(`(?<![\\w.$-])${name.replace(/[.$-]/g, (ch) => `\\${ch}`)}\\(`, 'g');
      for (let m = call.exec(this.text); m; m = call.exec(this.text)) last = m.index;
      this.lastCall.set(name, last);
    }
    return last > after;
  }
}

/**
 * NAME=value, NAME = value, NAME := value, NAME="value", "NAME": value, NAME: value, and a quoted or
 * bracketed name before `=` or `:` (`os.environ["PGPASSWORD"] = ...`, `{'token' : ...}`), with a
 * secret-looking NAME: the value. Blanks after `=` count only when there are blanks before it too:
 * in the shell `NAME= cmd` runs cmd with NAME empty, and cmd is code.
 */
function nameValueSpans(text: string, spans: Span[]): void {
  const called = new CalledNames(text);
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c !== '=' && c !== ':') continue;
    // Comparisons (==, !=, <=, >=) and URLs (://) are not assignments; in := the = is.
    if (c === '=' && (text[i + 1] === '=' || '=!<>'.includes(text[i - 1] ?? ''))) continue;
    if (c === ':' && (text[i + 1] === '/' || text[i + 1] === '=')) continue;
    let end = i;
    if (c === '=' && text[end - 1] === ':') end--;
    const beforeBlanks = end;
    while (end > 0 && beforeBlanks - end < 8 && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--;
    const spaced = end < beforeBlanks;
    const bracketed = text[end - 1] === ']';
    if (bracketed) end--;
    const quoted = text[end - 1] === '"' || text[end - 1] === "'";
    if (quoted) end--;
    // A bracket holds a quoted name (["PGPASSWORD"]); a blank before a colon follows only a quoted one.
    if ((bracketed && !quoted) || (spaced && c === ':' && !quoted)) continue;
    let start = end;
    while (start > 0 && end - start < 128 && NAME_CHAR.test(text[start - 1]!)) start--;
    if (start === end) continue;
    const name = text.slice(start, end);
    const inQuery = !quoted && !spaced && (text[start - 1] === '?' || text[start - 1] === '&');
    if (!SECRET_WORD.test(name) && !(inQuery && QUERY_SECRET.test(name))) continue;
    let at = i + 1;
    const blanks = blanksAt(text, at);
    if (c === ':') {
      // "name": value (JSON, YAML, headers): a quoted name, or a blank after the colon.
      if (!quoted && blanks === 0) continue;
      at += blanks;
    } else if (spaced) at += blanks;
    // A string literal's prefix in code (f"...", b'...', r"..."): the secret is inside the quotes.
    const prefix = /^[rRbBuUfF]{1,2}(?=["'])/.exec(text.slice(at, at + 3));
    if (prefix) at += prefix[0].length;
    const assigned = c === '=' && spaced && blanks > 0;
    // A name is code only where code is written: an argument or a dict entry (after `(`, `,` or
    // `{`), a lambda's default, an item assigned (`x["k"] = ...`), or an assignment with blanks. A
    // shell word (`PGPASSWORD=abc:def psql`, `export TOKEN=a,b`) is never code, whatever follows.
    // A `(` begins arguments after a callee (`f(`, `g()(`, `print (`); elsewhere it is a subshell
    // or a group (`(PGPASSWORD=x psql)`), where the value is a shell word.
    const before = text.slice(Math.max(0, start - (quoted ? 1 : 0) - 16), start - (quoted ? 1 : 0));
    const lambdaDefault = /\blambda[ \t]+(?:[\w, \t=]*,[ \t]*)?$/.test(before);
    const inCode = assigned || bracketed || /[,{][ \t]*$/.test(before) || /[\w)\]][ \t]{0,8}\([ \t]*$/.test(before) || lambdaDefault;
    if (!inQuery && inCode && isCodeAt(text, at, assigned, lambdaDefault)) continue;
    // A name called further on (`token=os.system;token("id")`) holds code, not a secret: its value is kept.
    if (!inQuery && !quoted && c === '=' && isDottedStatement(text, at) && called.later(name, i)) continue;
    let value = valueAt(text, at, prefix !== null && /f/i.test(prefix[0]), !inCode && !inQuery && c === '=');
    // Authorization: Bearer xyz: the secret is the word after the scheme. Digest's parameters
    // (username=, realm=, ...) are not secret; its response= is (digestSpans).
    if (value && /authori[sz]ation/i.test(name) && AUTH_SCHEME.test(text.slice(value[0], value[1]))) {
      const digest = /^digest$/i.test(text.slice(value[0], value[1]));
      const next = value[1] + blanksAt(text, value[1]);
      value = !digest && next > value[1] && !isCodeAt(text, next, false) ? valueAt(text, next) : undefined;
    }
    if (value) {
      spans.push(value);
      i = value[1] - 1; // on after the value: it is not scanned again
    }
  }
}

/** --password VALUE, --api-token VALUE (a flag naming a secret, then its value as the next word). */
function flagValueSpans(text: string, spans: Span[]): void {
  const flag = /(?<![A-Za-z0-9_-])--([A-Za-z0-9][A-Za-z0-9_-]{0,63})[ \t]{1,8}/g;
  for (let m = flag.exec(text); m; m = flag.exec(text)) {
    const name = m[1]!;
    const at = m.index + m[0].length;
    if (!SECRET_WORD.test(name) || NOT_A_VALUE.test(name) || text[at] === '-') continue;
    const value = valueAt(text, at);
    if (value) spans.push(value);
  }
}

/**
 * Programs that take a password in an option of their own, in any case and with or without `.exe`
 * (MySQL.exe): the MySQL clients (mysql, mysqldump, mariadb, ...), sshpass, the Redis clients,
 * curl, and the programs with a `login` command that takes `-p` (docker, podman, helm, oc, az, ...).
 */
const PASSWORD_PROGRAM =
  /(?<![A-Za-z0-9_.-])(mysql[a-z_]{0,16}|mariadb[a-z_-]{0,16}|sshpass|redis-cli|valkey-cli|keydb-cli|curl|docker|podman|nerdctl|buildah|skopeo|helm|oras|oc|az|cf)(?:\.exe)?(?![A-Za-z0-9_.-])/gi;
/** The programs' names (or login) as plain text, checked first: far cheaper than the pattern's lookbehind at every position. */
const PASSWORD_PROGRAM_HINT = /mysql|mariadb|sshpass|-cli|curl|login/i;
/** A MySQL client's -pPASSWORD (attached: a lone -p asks for it, and the next word is the database). */
const MYSQL_P = /(?<![^\s"'])-p(?=[^\s])/g;
/** sshpass -p PASSWORD, docker login -p PASSWORD (attached or the next word). */
const SPACED_P = /(?<![^\s"'])-p[ \t]{0,8}(?=[^\s-])/g;
/** redis-cli -a PASSWORD. */
const REDIS_A = /(?<![^\s"'])-a[ \t]{0,8}(?=[^\s-])/g;
/** curl -u user:PASSWORD, --user user:PASSWORD, and the proxy's -U, --proxy-user. */
const CURL_USER = /(?<![^\s"'])(?:-[uU][ \t]{0,8}|--(?:proxy-)?user(?:[ \t]{1,8}|=))(?=[^\s-])/g;
const LOGIN = /(?<![^\s"'])login(?![^\s"'])/;

/**
 * Where the command that a program's name at `from` starts ends: a line's end, `;`, `|` or `&&`
 * (a single `&` may be part of a URL's query, so it does not end one).
 */
function commandEnd(text: string, from: number): number {
  let i = from;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '\n' || ch === '\r' || ch === ';' || ch === '|' || (ch === '&' && text[i + 1] === '&')) break;
    i++;
  }
  return i;
}

/**
 * A password given to a program as an option of its own (PASSWORD_PROGRAM): only in that program's
 * own arguments, from its name to the next such program's name or the end of the command
 * (`redis-cli -a PW ping; ls -a /tmp` keeps `/tmp`; `docker exec db mysql -pPW` hides PW). Each
 * character is in one program's arguments at most, so the scan is linear.
 */
function programPasswordSpans(text: string, spans: Span[]): void {
  if (!PASSWORD_PROGRAM_HINT.test(text)) return;
  const found: Array<[start: number, end: number, program: string]> = [];
  PASSWORD_PROGRAM.lastIndex = 0;
  for (let m = PASSWORD_PROGRAM.exec(text); m; m = PASSWORD_PROGRAM.exec(text)) found.push([m.index, m.index + m[0].length, m[1]!.toLowerCase()]);
  let cmdEnd = -1;
  for (let k = 0; k < found.length; k++) {
    const [, from, program] = found[k]!;
    // The end of the command is the same for every program name before it: scanned once.
    if (from > cmdEnd) cmdEnd = commandEnd(text, from);
    const to = Math.min(cmdEnd, found[k + 1]?.[0] ?? text.length);
    if (to <= from) continue;
    const args = text.slice(from, to);
    let option: RegExp;
    let start = 0;
    if (program.startsWith('mysql') || program.startsWith('mariadb')) option = MYSQL_P;
    else if (program === 'sshpass') option = SPACED_P;
    else if (program.endsWith('-cli')) option = REDIS_A;
    else if (program === 'curl') option = CURL_USER;
    else {
      const login = LOGIN.exec(args);
      if (!login) continue;
      option = SPACED_P;
      start = login.index + login[0].length;
    }
    option.lastIndex = start;
    for (let m = option.exec(args); m; m = option.exec(args)) {
      const value = valueAt(text, from + m.index + m[0].length);
      if (!value) continue;
      if (option === CURL_USER) {
        // user:PASSWORD: the password is after the first colon (a lone user makes curl ask).
        const colon = text.slice(value[0], value[1]).indexOf(':');
        if (colon >= 0 && value[0] + colon + 1 < value[1]) spans.push([value[0] + colon + 1, value[1]]);
      } else spans.push(value);
    }
  }
}

/** What ends the scan of a URL's userinfo: blanks, quotes, angle brackets. */
const URL_END = new Set([...' \t\r\n\f\v"\'`<>']);

/**
 * A URL's password: scheme://user:PASSWORD@host. The password runs to the last `@` before the host
 * (a password may hold `/` or `@`: postgres://u:pa/ss@h), the host ending at the first `/`, `?` or
 * `#` after an `@`, a blank, a quote or the end. `host:port/...` (a port of digits, then `/`, `?` or
 * `#`) has no userinfo. A scan that finds no `@` goes on from where it stopped, one that does from
 * that `@`: no character is scanned twice.
 */
function urlPasswordSpans(text: string, spans: Span[]): void {
  const url = /:\/\/[^/\s:@[\]]*:/g;
  for (let m = url.exec(text); m; m = url.exec(text)) {
    const start = m.index + m[0].length;
    let at = -1;
    let i = start;
    for (; i < text.length && !URL_END.has(text[i]!); i++) {
      const ch = text[i]!;
      if (ch === '@') at = i;
      else if (ch === '/' || ch === '?' || ch === '#') {
        if (at >= 0) break;
        if (i > start && i - start <= 5 && /^\d+$/.test(text.slice(start, i))) break; // host:port/
      }
    }
    if (at > start) {
      spans.push([start, at]);
      url.lastIndex = at + 1;
    } else url.lastIndex = Math.max(url.lastIndex, i);
  }
}

/**
 * HTTP Digest's response=VALUE (the credential of a Digest Authorization header; its username=,
 * realm=, nonce=, uri= are kept), on the line of a `Digest name=` scheme. One scan per line.
 */
function digestSpans(text: string, spans: Span[]): void {
  if (!/digest/i.test(text)) return;
  const digest = /(?<![A-Za-z0-9_-])Digest[ \t]{1,8}(?=[A-Za-z][A-Za-z0-9_-]{0,31}[ \t]{0,8}=)/gi;
  for (let m = digest.exec(text); m; m = digest.exec(text)) {
    const newline = text.indexOf('\n', m.index);
    const end = newline < 0 ? text.length : newline;
    const params = text.slice(m.index, end);
    const response = /(?<![A-Za-z0-9_-])response[ \t]{0,8}=[ \t]{0,8}/gi;
    for (let r = response.exec(params); r; r = response.exec(params)) {
      const value = valueAt(text, m.index + r.index + r[0].length);
      if (value) spans.push(value);
    }
    digest.lastIndex = end;
  }
}

/** Bearer TOKEN, Basic BASE64: the credential after the scheme. */
function authSchemeSpans(text: string, spans: Span[]): void {
  const scheme = /\b(Bearer|Basic)[ \t]{1,8}([A-Za-z0-9._~+/-]{8,}={0,2})(?![A-Za-z0-9._~+/=-])/gi;
  for (let m = scheme.exec(text); m; m = scheme.exec(text)) {
    const token = m[2]!;
    // Basic carries base64 of "user:pass": a word in prose after "basic" is not that.
    if (m[1]!.toLowerCase() === 'basic' && (token.length % 4 !== 0 || /[._~-]/.test(token) || !Buffer.from(token, 'base64').includes(0x3a))) continue;
    const start = m.index + m[0].length - token.length;
    spans.push([start, start + token.length]);
  }
}

/** debugkit's own API keys, anywhere. */
function apiKeySpans(text: string, spans: Span[]): void {
  const key = /(?<![A-Za-z0-9_-])dk_[A-Za-z0-9_-]{16,}/g;
  for (let m = key.exec(text); m; m = key.exec(text)) spans.push([m.index, m.index + m[0].length]);
}

/** Text with every secret value found replaced by [REDACTED]; everything around it kept. */
export function redactText(text: string): string {
  const spans: Span[] = [];
  nameValueSpans(text, spans);
  flagValueSpans(text, spans);
  programPasswordSpans(text, spans);
  urlPasswordSpans(text, spans);
  digestSpans(text, spans);
  authSchemeSpans(text, spans);
  apiKeySpans(text, spans);
  if (spans.length === 0) return text;
  spans.sort((a, b) => a[0] - b[0]);
  let out = '';
  let at = 0;
  for (const [start, end] of spans) {
    if (end <= at) continue;
    out += text.slice(at, Math.max(at, start)) + (start >= at ? REDACTED : '');
    at = end;
  }
  return out + text.slice(at);
}

/** What stands for a value not kept: its size and SHA-256 (over its JSON for a value that is not text). */
function digestNote(what: string, text: string | undefined): string {
  return `[${what}${text === undefined ? '' : `, sha256 ${sha256Hex(text)}`}]`;
}

function jsonOf(value: unknown): string | undefined {
  try {
    return JSON.stringify(value) ?? 'null';
  } catch {
    return undefined; // nested past what JSON.stringify can walk
  }
}

interface Budget {
  left: number;
}

function redactString(text: string, budget: Budget): string {
  const keep = Math.min(text.length, MAX_STRING, Math.max(0, budget.left));
  budget.left -= keep;
  if (keep === text.length) return redactText(text);
  const head = keep > 0 ? redactText(text.slice(0, keep)) : '';
  return `${head}${digestNote(`${keep > 0 ? 'cut: ' : ''}${text.length} characters in all`, text)}`;
}

function redactValue(value: unknown, depth: number, budget: Budget): unknown {
  if (typeof value === 'string') return redactString(value, budget);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return digestNote('nested too deep', jsonOf(value));
  if (Array.isArray(value)) {
    const out = value.slice(0, MAX_ITEMS).map((v) => redactValue(v, depth + 1, budget));
    if (value.length > MAX_ITEMS) out.push(digestNote(`cut: ${value.length} items in all`, jsonOf(value)));
    return out;
  }
  const out: Record<string, unknown> = Object.create(null);
  const entries = Object.entries(value as Record<string, unknown>);
  for (const [k, v] of entries.slice(0, MAX_ITEMS)) {
    let name = k.length > MAX_KEY ? digestNote(`name of ${k.length} characters`, k) : redactString(k, budget);
    // Two names that read alike once redacted both stay (one value must never replace the other).
    for (let n = 2; Object.prototype.hasOwnProperty.call(out, name); n++) name = `${name.replace(/ \(\d+\)$/, '')} (${n})`;
    out[name] = k.length <= MAX_KEY && SECRET_NAME.test(k) && v !== null && v !== undefined && v !== '' ? REDACTED : redactValue(v, depth + 1, budget);
  }
  if (entries.length > MAX_ITEMS) out['[cut]'] = digestNote(`${entries.length} entries in all`, jsonOf(value));
  return out;
}

/**
 * A copy of tool arguments safe to keep: values under secret-looking names become "[REDACTED]",
 * and in text only the secret itself does (the value of NAME=value, NAME = value, "NAME": value and
 * ["NAME"] = value for a secret-looking NAME, of --password VALUE, a MySQL client's -pVALUE,
 * sshpass -p, redis-cli -a, curl -u user:PASSWORD, docker/podman/... login -p, a URL's password,
 * signature and token query parameters, Bearer/Basic credentials, Digest's response=, debugkit
 * keys). Strings are kept whole up
 * to MAX_STRING characters, arrays and objects up to MAX_ITEMS; past that, and past MAX_TEXT
 * characters for the whole record, what is left out is stated with its size and SHA-256.
 */
export function redact(value: unknown): unknown {
  return redactValue(value, 0, { left: MAX_TEXT });
}

/** A short field (tool name, client name, session id) bounded, its length and SHA-256 stated when cut. */
export function boundField(text: string, max = 512): string {
  return text.length <= max ? text : `${text.slice(0, max)}${digestNote(`cut: ${text.length} characters in all`, text)}`;
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
