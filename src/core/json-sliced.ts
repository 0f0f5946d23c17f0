import type { TimeSlice } from './wait.js';

/** Values written between two looks at the clock. */
const CHECK_EVERY = 512;

type Open = { items: unknown[]; next: number } | { object: Record<string, unknown>; names: string[]; next: number; wrote: boolean };

/**
 * JSON.stringify(value) for a value as JSON.parse makes them (and anything JSON.stringify takes:
 * a value with toJSON, a Date, is written by it, whole), in slices of the main thread's time:
 * handing a client's 4 MiB of arguments to a worker thread by structured clone, or by one
 * JSON.stringify, held the loop 250-400 ms (attack 18y W2). Nesting of any depth is walked without
 * recursion. Throws as JSON.stringify does: on a cycle or a BigInt.
 */
export async function jsonSliced(value: unknown, slice: Pick<TimeSlice, 'over' | 'pause'>): Promise<string> {
  // Text of this slice, joined into `done` at each pause: one string of 400,000 pieces concatenated
  // in place held the loop ~40 ms when flattened.
  let out = '';
  const done: string[] = [];
  const open: Open[] = [];
  const inside = new Set<object>();
  let steps = 0;
  /** Writes a value: a leaf at once, a container opened (its items written as the loop comes to them). */
  const write = (v: unknown): void => {
    if (v === null || typeof v !== 'object' || typeof (v as { toJSON?: unknown }).toJSON === 'function') {
      out += JSON.stringify(v) ?? 'null';
      return;
    }
    if (inside.has(v)) throw new TypeError('Converting circular structure to JSON');
    const proto = Object.getPrototypeOf(v) as unknown;
    if (Array.isArray(v)) {
      inside.add(v);
      out += '[';
      open.push({ items: v, next: 0 });
    } else if (proto === Object.prototype || proto === null) {
      inside.add(v);
      out += '{';
      open.push({ object: v as Record<string, unknown>, names: Object.keys(v), next: 0, wrote: false });
    } else out += JSON.stringify(v) ?? 'null';
  };
  write(value);
  while (open.length > 0) {
    if (++steps % CHECK_EVERY === 0 && slice.over()) {
      done.push(out);
      out = '';
      await slice.pause();
    }
    const top = open[open.length - 1]!;
    if ('items' in top) {
      if (top.next >= top.items.length) {
        out += ']';
        inside.delete(top.items);
        open.pop();
        continue;
      }
      if (top.next > 0) out += ',';
      const item = top.items[top.next++];
      // As JSON.stringify: what JSON has no word for is null in an array.
      write(item === undefined || typeof item === 'function' || typeof item === 'symbol' ? null : item);
      continue;
    }
    if (top.next >= top.names.length) {
      out += '}';
      inside.delete(top.object);
      open.pop();
      continue;
    }
    const name = top.names[top.next++]!;
    const item = top.object[name];
    // ...and left out of an object.
    if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
    out += `${top.wrote ? ',' : ''}${JSON.stringify(name)}:`;
    top.wrote = true;
    write(item);
  }
  done.push(out);
  return done.join('');
}
