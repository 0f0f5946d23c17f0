/**
 * The shape of JSON text, judged before JSON.parse: how deep it nests, how many values it holds,
 * and how many members its widest array or object has. One linear pass over the characters,
 * strings skipped; it judges shape only (JSON.parse still judges the syntax). The one scan for
 * every place that parses text from outside: request bodies and stdio lines (server/rest.ts,
 * server/stdio.ts) and mock bodies compared as JSON (toolsets/mocks/http/json-diff.ts), each with
 * its own bounds.
 *
 * What is counted: every value (arrays, objects, strings, numbers, true/false/null), wherever it
 * stands: the root, an array's member, and an object's member after its `:` (`{"k":{}}` is two
 * values and one key); and every object key, counted as a value too, since JSON.parse pays for a
 * key about what it pays for a value (an object of 200,000 distinct keys with `{}` values took
 * 250-320 ms to parse, 200,000 `[]` in an array 25-60 ms). `values` below is that count, keys
 * included; `keys` says how many of them are keys.
 *
 * When asked, the same pass finds the first number JSON.parse cannot hold exactly (`inexact`) and
 * the first key given twice in one object (`duplicateKey`): text that JSON.parse turns into a value
 * some other text also turns into, so values compared after JSON.parse would call the two equal.
 */

/** Bounds a scan stops at (each optional: no bound). */
export interface JsonShapeBounds {
  /** The most arrays and objects open at once. */
  depth?: number;
  /** The most members (values of an array, keys of an object) one array or object may have. */
  members?: number;
  /** The most values in all, object keys counted among them. */
  values?: number;
  /** Also look for the first number JSON.parse cannot hold exactly (a Number and a String of each number with an exponent or of 16 characters or more). */
  inexactNumbers?: boolean;
  /** Also look for a key given twice in one object (a set of keys per open object). */
  duplicateKeys?: boolean;
}

/** What a scan found: the text's figures, or the first bound it went past. */
export type JsonShape =
  | {
      ok: true;
      /** The deepest nesting of arrays and objects (0 for a scalar). */
      depth: number;
      /** Values in all, object keys counted among them. */
      values: number;
      /** How many of `values` are object keys. */
      keys: number;
      /** Members of the widest array or object. */
      widest: number;
      /** The first number, as written, that JSON.parse cannot hold exactly (see `exactNumber`; looked for only with `inexactNumbers`). */
      inexact?: string;
      /** The first key given twice in one object (looked for only with `duplicateKeys`). */
      duplicateKey?: string;
    }
  | {
      ok: false;
      /** The bound gone past. */
      bound: 'depth' | 'members' | 'values';
      /** What is wrong, naming the bound: "JSON nested deeper than 64 levels". */
      problem: string;
    };

// What the scan expects next outside a string: a value, an object key, or neither (after a value
// or a key: a comma, a colon, a close, or the end).
const VALUE = 0;
const KEY = 1;
const AFTER = 2;

const NUMBER = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * A JSON number's decimal value as text, the same for every way of writing it ("-12e5" for -1.2e4
 * and -0.12e5: 0.DIGITS × 10^point), "0" for any zero. `text` is a JSON number that parses to a
 * finite double other than 0, so its exponent is within about ±(its digits + 330): exact as a double.
 */
function decimalValue(text: string): string {
  const m = NUMBER.exec(text)!;
  const all = m[1]! + (m[2] ?? '');
  let first = 0;
  while (first < all.length && all.charCodeAt(first) === 0x30) first++;
  if (first === all.length) return '0';
  let last = all.length;
  while (all.charCodeAt(last - 1) === 0x30) last--;
  const point = m[1]!.length - first + Number(m[3] ?? 0);
  return `${text.charCodeAt(0) === 0x2d ? '-' : ''}${all.slice(first, last)}e${point}`;
}

/**
 * Whether a JSON number (`text`, as written) is held exactly by the double JSON.parse makes of it:
 * its decimal value is that of the double's shortest form (String(number)), so no other number
 * held exactly parses to the same double. 9007199254740993 (2^53 + 1), 0.10000000000000001 (0.1),
 * 1e400 (Infinity) and 1e-400 (0) are not. Fifteen significant digits or fewer in the normal range
 * always are, so a number of at most 15 characters without an exponent is not parsed here.
 * Text that is not a JSON number counts as exact (JSON.parse refuses it).
 */
export function exactNumber(text: string): boolean {
  if (text.length <= 15 && !/[eE]/.test(text)) return true;
  const value = Number(text);
  const shortest = String(value);
  if (shortest === text) return true; // written as JavaScript writes it (the usual case)
  if (!NUMBER.test(text)) return true;
  if (!Number.isFinite(value)) return false;
  if (value === 0) return /^-?[0.]*(?:[eE]|$)/.test(text);
  return decimalValue(text) === decimalValue(shortest.replace('e+', 'e'));
}

/**
 * The shape of `text` within `bounds`. Text that is not valid JSON is scanned as far as it goes:
 * JSON.parse stops at its first error, and the scan never counts less than JSON.parse builds
 * before that point (an unterminated string ends the scan: JSON.parse refuses it).
 */
export function jsonShape(text: string, bounds: JsonShapeBounds = {}): JsonShape {
  const maxDepth = bounds.depth ?? Infinity;
  const maxMembers = bounds.members ?? Infinity;
  const maxValues = bounds.values ?? Infinity;
  // For each open container: its members so far, and whether it is an object.
  const members: number[] = [];
  const isObject: boolean[] = [];
  let top = -1; // members.length - 1
  let depth = 0;
  let values = 0;
  let keys = 0;
  let widest = 0;
  let expect = VALUE;
  let inexact: string | undefined;
  // For each open object, when duplicate keys are looked for: its keys so far.
  const keySets: (Set<string> | undefined)[] = [];
  let duplicateKey: string | undefined;
  const found = (): JsonShape => ({
    ok: true,
    depth,
    values,
    keys,
    widest,
    ...(inexact !== undefined && { inexact }),
    ...(duplicateKey !== undefined && { duplicateKey }),
  });

  const tooMany = (): JsonShape => ({
    ok: false,
    bound: 'values',
    problem: `JSON with more than ${maxValues.toLocaleString('en')} values (arrays, objects, strings, numbers and literals, object keys counted)`,
  });
  // A value starts here: counted, and counted as a member of the container it is in.
  const startValue = (): JsonShape | undefined => {
    if (++values > maxValues) return tooMany();
    if (top >= 0) {
      const n = ++members[top]!;
      if (n > widest) widest = n;
      if (n > maxMembers) return { ok: false, bound: 'members', problem: `a JSON array or object with more than ${maxMembers.toLocaleString('en')} members` };
    }
    return undefined;
  };

  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    if (c === 0x22) {
      if (expect === VALUE) {
        const problem = startValue();
        if (problem) return problem;
      } else if (expect === KEY) {
        keys++;
        if (++values > maxValues) return tooMany();
      }
      const isKey = expect === KEY;
      expect = AFTER;
      // On to the closing quote: one not escaped by an odd run of backslashes before it.
      let q = text.indexOf('"', i + 1);
      for (;;) {
        if (q === -1) return found(); // unterminated: JSON.parse says so
        let b = q - 1;
        while (b > i && text.charCodeAt(b) === 0x5c) b--;
        if ((q - 1 - b) % 2 === 0) break;
        q = text.indexOf('"', q + 1);
      }
      if (isKey && bounds.duplicateKeys && duplicateKey === undefined && top >= 0) {
        let key = text.slice(i + 1, q);
        if (key.includes('\\')) {
          try {
            key = JSON.parse(text.slice(i, q + 1)) as string;
          } catch {
            // Not a valid string: JSON.parse refuses the text.
          }
        }
        const seen = (keySets[top] ??= new Set());
        if (seen.has(key)) duplicateKey = key;
        else seen.add(key);
      }
      i = q;
    } else if (c === 0x5b || c === 0x7b) {
      // Counted when a value was expected; opened (and its depth judged) in any case.
      if (expect === VALUE) {
        const problem = startValue();
        if (problem) return problem;
      }
      members.push(0);
      isObject.push(c === 0x7b);
      keySets.push(undefined);
      top++;
      if (members.length > depth) {
        depth = members.length;
        if (depth > maxDepth) return { ok: false, bound: 'depth', problem: `JSON nested deeper than ${maxDepth} levels` };
      }
      expect = c === 0x7b ? KEY : VALUE;
    } else if (c === 0x5d || c === 0x7d) {
      members.pop();
      isObject.pop();
      keySets.pop();
      top = members.length - 1;
      expect = AFTER;
    } else if (c === 0x2c) {
      expect = top >= 0 && isObject[top] ? KEY : VALUE;
    } else if (c === 0x3a) {
      expect = VALUE;
    } else {
      // A number or a literal starts (a literal's other characters come while a comma or close is
      // expected). A number is read to its end and judged.
      if (expect === VALUE) {
        const problem = startValue();
        if (problem) return problem;
        if (bounds.inexactNumbers && (c === 0x2d || (c >= 0x30 && c <= 0x39))) {
          let end = i + 1;
          let exponent = false;
          for (; end < text.length; end++) {
            const d = text.charCodeAt(end);
            if (d === 0x65 || d === 0x45) exponent = true;
            else if (!((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x2b || d === 0x2d)) break;
          }
          // (At most 15 characters and no exponent: exact, as exactNumber says, without a slice.)
          if (inexact === undefined && (exponent || end - i > 15)) {
            const number = text.slice(i, end);
            if (!exactNumber(number)) inexact = number;
          }
          i = end - 1;
        }
      }
      expect = AFTER;
    }
  }
  return found();
}
