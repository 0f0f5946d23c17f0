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
 */

/** Bounds a scan stops at (each optional: no bound). */
export interface JsonShapeBounds {
  /** The most arrays and objects open at once. */
  depth?: number;
  /** The most members (values of an array, keys of an object) one array or object may have. */
  members?: number;
  /** The most values in all, object keys counted among them. */
  values?: number;
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
      expect = AFTER;
      // On to the closing quote: one not escaped by an odd run of backslashes before it.
      let q = text.indexOf('"', i + 1);
      for (;;) {
        if (q === -1) return { ok: true, depth, values, keys, widest }; // unterminated: JSON.parse says so
        let b = q - 1;
        while (b > i && text.charCodeAt(b) === 0x5c) b--;
        if ((q - 1 - b) % 2 === 0) break;
        q = text.indexOf('"', q + 1);
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
      top++;
      if (members.length > depth) {
        depth = members.length;
        if (depth > maxDepth) return { ok: false, bound: 'depth', problem: `JSON nested deeper than ${maxDepth} levels` };
      }
      expect = c === 0x7b ? KEY : VALUE;
    } else if (c === 0x5d || c === 0x7d) {
      members.pop();
      isObject.pop();
      top = members.length - 1;
      expect = AFTER;
    } else if (c === 0x2c) {
      expect = top >= 0 && isObject[top] ? KEY : VALUE;
    } else if (c === 0x3a) {
      expect = VALUE;
    } else {
      // A number or a literal starts (its other characters come while a comma or close is expected).
      if (expect === VALUE) {
        const problem = startValue();
        if (problem) return problem;
      }
      expect = AFTER;
    }
  }
  return { ok: true, depth, values, keys, widest };
}
