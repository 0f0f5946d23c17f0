import type { CallToolResult } from '@modelcontextprotocol/server';
import { CONSTANT, SECRET_WORD, replaceSecrets, unusedName } from '../core/secrets.js';

/**
 * Secrets in answers (issue 21): what looks like a credential in a tool's answer (a variable's
 * value, an evaluation, the program's output, a kubectl or file answer) is hidden before the model
 * sees it, by name (`password = ...`, `"token": ...`, a local named `api_key`) or by shape (private
 * keys, JWTs, cloud and forge keys), and the answer says what was hidden. Off with --no-redact (a
 * user's own machine). Linear in the answer's size, which the result cap bounds.
 */

/**
 * Whether a value under a secret name is one (a word: quoted or not, or a char pointer's string
 * `0x4006f4 "hunter2"`), not a structure or a constant: a lexer's `token` holding
 * `{kind = IDENT, text = ...}` stays visible.
 */
function looksSecret(value: string): boolean {
  const word = value.replace(/^0x[0-9a-f]{1,16} (?=")/, '').replace(/^[bBrRuU]?(['"])([^]*)\1$/, '$2');
  return word !== '' && word.length <= 4096 && !/\s/.test(word) && !CONSTANT.has(word);
}

/** What stands for a secret hidden: its kind, never any of it. */
const mark = (kind: string | undefined) => `[redacted ${kind ?? 'secret'}]`;

/** Fields of an object whose string is the value of the name beside it (`{name: "password", value: ...}`; Python's `repr`). */
const VALUE_FIELDS = new Set(['value', 'repr', 'result']);
/** Fields under a secret name that describe the value without holding it. */
const DESCRIPTIVE = new Set(['type', 'isTruncated', 'kind', 'name']);
/** Levels of structure walked. No tool's answer nests this deep; a value past it is hidden whole, as NESTED. */
const MAX_DEPTH = 32;
const NESTED = `value nested past ${MAX_DEPTH} levels`;

/** The answer with its secrets hidden, and a line saying what was; the same answer when none is found. */
export function redactAnswer(result: CallToolResult): CallToolResult {
  const inStructured: string[] = [];
  const structured = result.structuredContent === undefined ? undefined : (hide(result.structuredContent, false, 0, inStructured) as Record<string, unknown>);
  // A text that is the structured content as JSON (most tools') is that JSON again, hidden the same way.
  const asJson = result.structuredContent === undefined ? undefined : JSON.stringify(result.structuredContent);
  const inText: string[] = [];
  const content = result.content.map((c) => {
    if (c.type !== 'text') return c;
    if (c.text === asJson) return inStructured.length > 0 ? { ...c, text: JSON.stringify(structured) } : c;
    const r = replaceSecrets(c.text, mark);
    pushAll(inText, r.kinds);
    return r.kinds.length > 0 ? { ...c, text: r.text } : c;
  });
  // The same secret is usually in both: the count is the larger of the two.
  const kinds = inText.length >= inStructured.length ? inText : inStructured;
  if (kinds.length === 0) return result;
  const distinct = [...new Set([...inText, ...inStructured])];
  const note = `[debugkit: hid ${kinds.length} value${kinds.length === 1 ? '' : 's'} that look${kinds.length === 1 ? 's' : ''} like a credential (${distinct.slice(0, 6).join(', ')}${distinct.length > 6 ? ', ...' : ''}); the server's --no-redact shows them]`;
  const first = content.findIndex((c) => c.type === 'text');
  // Appended to a text of its own, unless that text is JSON a client may parse: then as one more item.
  if (first >= 0 && (result.content[first] as { text: string }).text !== asJson) {
    const c = content[first] as { type: 'text'; text: string };
    content[first] = { ...c, text: `${c.text}\n${note}` };
  } else content.push({ type: 'text', text: note });
  return { ...result, content, ...(structured === undefined ? {} : { structuredContent: structured }) };
}

/**
 * A JSON answer that is not a tool's (the python toolset's REST routes) with its secrets hidden as
 * a tool's structured content is: same shape and types, only strings change, and no note (the
 * contract fixes the shape).
 */
export function redactValue(value: unknown): unknown {
  return hide(value, false, 0, []);
}

/**
 * A structured value with its secrets hidden: strings by their text, every string under a secret
 * name (but the fields that describe it: `type`), and the value beside a secret `name`. Types stay
 * as they were, so the answer still fits its output schema.
 */
function hide(value: unknown, secret: boolean, depth: number, kinds: string[]): unknown {
  if (typeof value === 'string') {
    if (secret && looksSecret(value)) {
      kinds.push('secret-named value');
      return mark('secret-named value');
    }
    const r = replaceSecrets(value, mark);
    pushAll(kinds, r.kinds);
    return r.text;
  }
  if (value === null || typeof value !== 'object') return value;
  // Deeper than any tool's own shape: not walked (the stack is bounded), so not shown either.
  if (depth >= MAX_DEPTH) {
    kinds.push(NESTED);
    return mark(NESTED);
  }
  if (Array.isArray(value)) return value.map((v) => hide(v, secret, depth + 1, kinds));
  const obj = value as Record<string, unknown>;
  const named = typeof obj.name === 'string' && SECRET_WORD.test(obj.name);
  const out: Record<string, unknown> = {};
  const numbered = new Map<string, number>();
  for (const [k, v] of Object.entries(obj)) {
    const underSecret = (secret || SECRET_WORD.test(k) || (named && VALUE_FIELDS.has(k))) && !DESCRIPTIVE.has(k);
    // Defined, not assigned: a local named `__proto__` is an entry like any other, not the object's prototype.
    Object.defineProperty(out, hiddenKey(k, out, numbered, kinds), { value: hide(v, underSecret, depth + 1, kinds), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * A key with its secrets hidden as a string's are: a name is the program's text too (a local set
 * through `globals()["ghp_..."]`, a dict loaded from a config), and the rendered text shows keys
 * beside their values. Two keys that read alike once hidden both stay, the later one numbered
 * (` (2)`), so no value replaces another and the count of entries holds; `numbered` keeps the
 * next number per hidden text.
 */
function hiddenKey(key: string, out: Record<string, unknown>, numbered: Map<string, number>, kinds: string[]): string {
  const r = replaceSecrets(key, mark);
  if (r.kinds.length === 0 && !Object.prototype.hasOwnProperty.call(out, key)) return key;
  pushAll(kinds, r.kinds);
  return unusedName(r.text, out, numbered);
}

/**
 * Appends one by one: a string may hold any number of secrets (a name of 200,000 `token=a `), and
 * `push(...found)` passes each as an argument, past V8's stack at ~120,000 (attack 18z Z3).
 */
function pushAll(kinds: string[], found: readonly string[]): void {
  for (const k of found) kinds.push(k);
}
