import { at, stringMap } from './json.js';

/** A selector the client sent that cannot be parsed; answered with a 400 Status. */
export class SelectorError extends Error {}

type LabelOp = 'eq' | 'neq' | 'in' | 'notin' | 'exists' | '!exists' | 'gt' | 'lt';

export interface LabelRequirement {
  key: string;
  op: LabelOp;
  values: string[];
  /** An `in`/`notin` set's values, looked up once per object whatever their number. */
  set?: ReadonlySet<string>;
}

// Label keys may carry a DNS prefix ("app.kubernetes.io/name"); values are the usual label charset.
const KEY = String.raw`[A-Za-z0-9](?:[-A-Za-z0-9_./]*[A-Za-z0-9])?`;
const VALUE = String.raw`(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?`;
const SET_RE = new RegExp(`^(${KEY})\\s+(in|notin)\\s*\\(([^()]*)\\)$`);
const EQ_RE = new RegExp(`^(${KEY})\\s*(==|=|!=)\\s*(${VALUE})$`);
const CMP_RE = new RegExp(`^(${KEY})\\s*([<>])\\s*(-?\\d+)$`);
const EXISTS_RE = new RegExp(`^(!?)\\s*(${KEY})$`);
const VALUE_RE = new RegExp(`^${VALUE}$`);

/**
 * Requirements a label or field selector may have. Every one is checked on every listed object:
 * 1,300 of them over 1M events kept a CPU busy 2 minutes (attack 18r L3); kubectl users write a few.
 */
export const MAX_REQUIREMENTS = 100;
/** Values of all `in (...)`/`notin (...)` sets of one selector: a set is looked up in one step, but it is held per request. */
export const MAX_SET_VALUES = 10_000;

/** The parts of a selector, refused past MAX_REQUIREMENTS before any is parsed. */
function bounded(parts: string[], which: 'label' | 'field'): string[] {
  if (parts.length > MAX_REQUIREMENTS) throw new SelectorError(`${which} selector has ${parts.length} requirements: at most ${MAX_REQUIREMENTS} are served`);
  return parts;
}

/** Splits on commas that are not inside the parentheses of an `in (...)` set. */
function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '(') depth++;
    else if (s[i] === ')') depth--;
    else if (s[i] === ',' && depth === 0) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(s.slice(start));
  return parts.map((p) => p.trim());
}

function parseRequirement(text: string): LabelRequirement {
  let m = SET_RE.exec(text);
  if (m) {
    const values = m[3]!.split(',').map((v) => v.trim());
    if (values.some((v) => !VALUE_RE.test(v))) throw new SelectorError(`invalid label selector value in "${text}"`);
    return { key: m[1]!, op: m[2] as 'in' | 'notin', values, set: new Set(values) };
  }
  if ((m = EQ_RE.exec(text))) return { key: m[1]!, op: m[2] === '!=' ? 'neq' : 'eq', values: [m[3]!] };
  if ((m = CMP_RE.exec(text))) return { key: m[1]!, op: m[2] === '>' ? 'gt' : 'lt', values: [m[3]!] };
  if ((m = EXISTS_RE.exec(text))) return { key: m[2]!, op: m[1] ? '!exists' : 'exists', values: [] };
  throw new SelectorError(`unable to parse requirement: "${text}"`);
}

/** Parses a `labelSelector` query value (=, ==, !=, in, notin, exists, !key, gt, lt). */
export function parseLabelSelector(selector: string): LabelRequirement[] {
  if (selector.trim() === '') return [];
  const requirements = bounded(splitTopLevel(selector), 'label').map((part) => {
    if (part === '') throw new SelectorError(`empty requirement in label selector "${selector}"`);
    return parseRequirement(part);
  });
  const values = requirements.reduce((n, r) => n + (r.set ? r.values.length : 0), 0);
  if (values > MAX_SET_VALUES) throw new SelectorError(`label selector has ${values} values in its in/notin sets: at most ${MAX_SET_VALUES} are served`);
  return requirements;
}

function matchesRequirement(labels: Record<string, string>, r: LabelRequirement): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  switch (r.op) {
    case 'eq':
      return has && value === r.values[0];
    case 'neq':
      // Upstream semantics: a missing label satisfies "!=".
      return !has || value !== r.values[0];
    case 'in':
      return has && (r.set ?? new Set(r.values)).has(value!);
    case 'notin':
      return !has || !(r.set ?? new Set(r.values)).has(value!);
    case 'exists':
      return has;
    case '!exists':
      return !has;
    case 'gt':
    case 'lt': {
      const n = Number(value);
      if (!has || !/^-?\d+$/.test(value!)) return false;
      return r.op === 'gt' ? n > Number(r.values[0]) : n < Number(r.values[0]);
    }
  }
}

export function matchesLabels(labels: Record<string, string>, requirements: LabelRequirement[]): boolean {
  return requirements.every((r) => matchesRequirement(labels, r));
}

export interface FieldRequirement {
  path: string;
  /** `path` split at its dots, once per request rather than once per object. */
  parts?: readonly string[];
  negate: boolean;
  value: string;
}

/** Splits on unescaped `sep`; field selector values escape `\,` `\=` `\\`. */
function splitEscaped(s: string, sep: string): string[] {
  const parts: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\' && i + 1 < s.length) {
      cur += c + s[i + 1];
      i++;
    } else if (c === sep) {
      parts.push(cur);
      cur = '';
    } else cur += c;
  }
  parts.push(cur);
  return parts;
}

function unescape(s: string): string {
  return s.replace(/\\(.)/g, '$1');
}

/** Parses a `fieldSelector` (`a.b=v`, `a.b==v`, `a.b!=v`, comma-joined). */
export function parseFieldSelector(selector: string): FieldRequirement[] {
  if (selector.trim() === '') return [];
  return bounded(splitEscaped(selector, ','), 'field').map((part) => {
    const m = /^\s*([A-Za-z0-9_.]+)\s*(!=|==|=)(.*)$/.exec(part);
    if (!m) throw new SelectorError(`invalid selector: '${part}'; can't understand '${part}'`);
    return { path: m[1]!, parts: m[1]!.split('.'), negate: m[2] === '!=', value: unescape(m[3]!.trim()) };
  });
}

/**
 * Any dotted path is accepted (metadata.name, status.phase, spec.nodeName, involvedObject.uid,
 * type...): a real server limits each resource to a few fields, but being lenient costs nothing
 * on a read-only snapshot and lets `kubectl describe` and `--field-selector` just work.
 */
export function matchesFields(obj: unknown, requirements: FieldRequirement[]): boolean {
  return requirements.every((r) => {
    const raw = at(obj, ...(r.parts ?? r.path.split('.')));
    const actual = typeof raw === 'string' || typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : '';
    return (actual === r.value) !== r.negate;
  });
}

export function labelsOf(obj: unknown): Record<string, string> {
  return stringMap(at(obj, 'metadata', 'labels'));
}

/**
 * A metav1.LabelSelector written as kubectl's SELECTOR column shows it
 * (`app=x,tier in (a,b)`), requirements sorted by key as upstream does.
 */
export function formatLabelSelector(selector: unknown): string {
  const parts: { key: string; text: string }[] = [];
  for (const [k, v] of Object.entries(stringMap(at(selector, 'matchLabels')))) parts.push({ key: k, text: `${k}=${v}` });
  const exprs = at(selector, 'matchExpressions');
  for (const e of Array.isArray(exprs) ? exprs : []) {
    const key = String(at(e, 'key') ?? '');
    const values = (Array.isArray(at(e, 'values')) ? (at(e, 'values') as unknown[]) : []).map(String).sort();
    const op = String(at(e, 'operator') ?? '');
    const text = op === 'In' ? `${key} in (${values.join(',')})` : op === 'NotIn' ? `${key} notin (${values.join(',')})` : op === 'DoesNotExist' ? `!${key}` : key;
    parts.push({ key, text });
  }
  parts.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return parts.map((p) => p.text).join(',');
}

/** `k=v,k2=v2` sorted by key, or `<none>`: labels.FormatLabels for a plain string map. */
export function formatLabelMap(map: Record<string, string>): string {
  const keys = Object.keys(map).sort();
  return keys.length === 0 ? '<none>' : keys.map((k) => `${k}=${map[k]}`).join(',');
}
