import type { z } from 'zod';

type Issue = z.core.$ZodIssue;

/**
 * Turns zod's issues into one line an agent can act on: each field by name, what it got wrong
 * and what is valid, e.g. `"count": expected an integer, got 1.5; "mode": must be one of "a", "b"`.
 */
export function formatZodIssues(issues: readonly Issue[], schema?: z.ZodObject): string {
  const parts = issues.slice(0, 8).map((issue) => describe(issue, schema));
  if (issues.length > 8) parts.push(`and ${issues.length - 8} more`);
  return parts.join('; ');
}

/**
 * zod's own wording, field by field (`entry: Invalid input: expected string, received undefined`),
 * `whole` naming an issue of the value itself: REST bodies are answered with it (the Python
 * OpenAPI routes' 400s, which their end-to-end test reads).
 */
export function formatZodIssuesPlain(issues: readonly Issue[], whole: string): string {
  return issues.map((i) => `${i.path.join('.') || whole}: ${i.message}`).join('; ');
}

function field(path: readonly PropertyKey[]): string {
  if (path.length === 0) return 'arguments';
  return `"${path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i > 0 ? '.' : ''}${String(p)}`)).join('')}"`;
}

function describe(issue: Issue, schema?: z.ZodObject): string {
  const name = field(issue.path);
  switch (issue.code) {
    case 'invalid_type': {
      const expected = issue.expected === 'int' ? 'an integer' : article(String(issue.expected));
      if (/received undefined/.test(issue.message)) return `${name} is required (${expected})`;
      const got = /received (\w+)/.exec(issue.message)?.[1];
      return `${name}: expected ${expected}${got ? `, got ${got === 'number' && issue.expected === 'int' ? 'a fraction' : got}` : ''}`;
    }
    case 'invalid_value':
      return `${name}: must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'unrecognized_keys': {
      const known = issue.path.length === 0 && schema ? Object.keys(schema.shape) : undefined;
      const valid = known === undefined ? '' : known.length > 0 ? `; valid fields: ${known.join(', ')}` : '; this tool takes no arguments';
      return `unknown ${issue.keys.length > 1 ? 'fields' : 'field'} ${issue.keys.map((k) => `"${k}"`).join(', ')}${valid}`;
    }
    case 'too_small':
      return `${name}: ${bound('at least', issue.minimum, issue.origin, issue.inclusive)}`;
    case 'too_big':
      return `${name}: ${bound('at most', issue.maximum, issue.origin, issue.inclusive)}`;
    case 'invalid_union':
      return `${name}: does not match any accepted form`;
    default:
      return `${name}: ${issue.message}`;
  }
}

function bound(word: string, limit: unknown, origin: string, inclusive?: boolean): string {
  const n = String(limit);
  switch (origin) {
    case 'string':
      return `must be ${word} ${n} characters long`;
    case 'array':
    case 'set':
      return `must have ${word} ${n} items`;
    default:
      return `must be ${inclusive === false ? (word === 'at least' ? 'greater than' : 'less than') : word} ${n}`;
  }
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
