/**
 * The collection style (`[a, b]` flow or block) each parsed array or object had in its file, so
 * serializing what was parsed writes the same style. Objects built in code are not in here; the
 * serializer then uses Keploy's defaults (the `flow` YAML tags of its Go structs).
 */
const styles = new WeakMap<object, 'flow' | 'block'>();

export function markStyle<T extends object>(value: T, flow: boolean | undefined): T {
  styles.set(value, flow ? 'flow' : 'block');
  return value;
}

export function collectionStyle(value: object): 'flow' | 'block' | undefined {
  return styles.get(value);
}

/**
 * The marks of every array and object under `root` (0 none, 1 flow, 2 block), in the order
 * `restyle` walks them: a structured clone (postMessage to a worker thread) keeps the values but
 * not this WeakMap, and a set written there must keep the styles the recorders marked.
 */
export function stylesOf(root: unknown): Uint8Array {
  const marks: number[] = [];
  walkCollections(root, (o) => void marks.push(STYLE_CODES.indexOf(styles.get(o))));
  return Uint8Array.from(marks);
}

/** Marks `root`'s collections as `stylesOf` found them on the value it was cloned from. */
export function restyle(root: unknown, marks: Uint8Array): void {
  let i = 0;
  walkCollections(root, (o) => {
    const style = STYLE_CODES[marks[i++] ?? 0];
    if (style !== undefined) styles.set(o, style);
  });
}

const STYLE_CODES = [undefined, 'flow', 'block'] as const;

/** Every array and object under `root` once (byte arrays are values), depth first: the same order on a value and its structured clone. */
function walkCollections(root: unknown, visit: (o: object) => void): void {
  const seen = new Set<object>();
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null || ArrayBuffer.isView(v) || seen.has(v)) continue;
    seen.add(v);
    visit(v);
    const children = Array.isArray(v) ? v : Object.values(v);
    for (let k = children.length - 1; k >= 0; k--) stack.push(children[k]);
  }
}
