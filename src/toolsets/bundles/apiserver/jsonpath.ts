import { isRecord } from './json.js';

/**
 * The small JSONPath subset that CRD `additionalPrinterColumns` use:
 * `.a.b`, `['a.b']`, `[0]`, `[-1]`, `[*]`, `.*` and `[?(@.x.y=="v")]` / `!=` filters,
 * optionally wrapped in `{...}`. Anything else is rejected so a column shows `<none>`
 * instead of a wrong value.
 */
type Step = { kind: 'field'; name: string } | { kind: 'index'; index: number } | { kind: 'wildcard' } | { kind: 'filter'; path: string[]; negate: boolean; value: string | number | boolean };

export class JsonPathError extends Error {}

function parseLiteral(text: string): string | number | boolean {
  const t = text.trim();
  if (/^(["']).*\1$/.test(t)) return t.slice(1, -1);
  if (t === 'true' || t === 'false') return t === 'true';
  if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  throw new JsonPathError(`unsupported filter literal ${t}`);
}

function parseFilter(body: string): Step {
  const m = /^\?\(\s*@((?:\.[A-Za-z0-9_-]+)+)\s*(==|!=)\s*(.+?)\s*\)$/.exec(body);
  if (!m) throw new JsonPathError(`unsupported filter [${body}]`);
  return { kind: 'filter', path: m[1]!.slice(1).split('.'), negate: m[2] === '!=', value: parseLiteral(m[3]!) };
}

function parseBracket(body: string): Step {
  if (body === '*') return { kind: 'wildcard' };
  if (/^-?\d+$/.test(body)) return { kind: 'index', index: Number(body) };
  if (/^(["']).*\1$/.test(body)) return { kind: 'field', name: body.slice(1, -1) };
  if (body.startsWith('?')) return parseFilter(body);
  throw new JsonPathError(`unsupported subscript [${body}]`);
}

export function parseJsonPath(expr: string): Step[] {
  let s = expr.trim();
  if (s.startsWith('{') && s.endsWith('}')) s = s.slice(1, -1).trim();
  if (s.startsWith('$')) s = s.slice(1);
  const steps: Step[] = [];
  let i = 0;
  while (i < s.length) {
    if (s[i] === '.') {
      const m = /^\.([A-Za-z0-9_-]+|\*)/.exec(s.slice(i));
      if (!m) throw new JsonPathError(`unexpected "${s.slice(i)}"`);
      steps.push(m[1] === '*' ? { kind: 'wildcard' } : { kind: 'field', name: m[1]! });
      i += m[0].length;
    } else if (s[i] === '[') {
      const end = findClosingBracket(s, i);
      steps.push(parseBracket(s.slice(i + 1, end).trim()));
      i = end + 1;
    } else throw new JsonPathError(`unexpected "${s.slice(i)}"`);
  }
  return steps;
}

/** The `]` that closes the `[` at `open`, skipping brackets and quotes inside filters. */
function findClosingBracket(s: string, open: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '[') depth++;
    else if (c === ']' && --depth === 0) return i;
  }
  throw new JsonPathError('unterminated [');
}

function lookup(v: unknown, path: string[]): unknown {
  let cur = v;
  for (const p of path) cur = isRecord(cur) ? cur[p] : undefined;
  return cur;
}

function applyStep(values: unknown[], step: Step): unknown[] {
  const out: unknown[] = [];
  for (const v of values) {
    if (step.kind === 'field') {
      if (isRecord(v) && v[step.name] !== undefined) out.push(v[step.name]);
    } else if (step.kind === 'index') {
      if (Array.isArray(v)) {
        const item = v[step.index < 0 ? v.length + step.index : step.index];
        if (item !== undefined) out.push(item);
      }
    } else if (step.kind === 'wildcard') {
      if (Array.isArray(v)) out.push(...v);
      else if (isRecord(v)) out.push(...Object.values(v));
    } else if (Array.isArray(v)) {
      for (const item of v) if ((lookup(item, step.path) === step.value) !== step.negate) out.push(item);
    }
  }
  return out;
}

/** Every value the expression selects from `root`, in document order. */
export function evaluateJsonPath(root: unknown, expr: string): unknown[] {
  return parseJsonPath(expr).reduce<unknown[]>((values, step) => applyStep(values, step), [root]);
}
