import { realpathSync } from 'node:fs';
import path from 'node:path';
import { containment } from '../paths.js';
import { isTuple, type MiTuple, type MiValue } from './parser.js';

/** The frame of the program's own code a stop came from, below frames of other code (libc's strlen). */
export interface UserFrameChoice {
  /** Its level in the stack (0 is the innermost frame). */
  level: number;
  frame: MiTuple;
  /** The code it stopped in: `strlen in libc.so.6`. */
  crashedIn: string;
}

/**
 * Where a stop happened in the program's own code: the first frame of `stack` (a
 * `-stack-list-frames` answer, innermost first) whose source is inside `root`, when frames of
 * other code lie above it. Undefined when the top frame is the program's own, or none is. The one
 * choice for the gdb and debugger toolsets.
 */
export function firstUserFrame(stack: MiValue[], root: string): UserFrameChoice | undefined {
  let realRoot: string;
  try {
    realRoot = realpathSync.native(root);
  } catch {
    return undefined;
  }
  const tuples = stack.filter(isTuple);
  const level = tuples.findIndex((f) => typeof f.fullname === 'string' && containment(realRoot, path.resolve(f.fullname)).kind === 'inside');
  if (level <= 0) return undefined;
  const top = tuples[0]!;
  const where = typeof top.func === 'string' ? top.func : typeof top.addr === 'string' ? top.addr : '??';
  return { level, frame: tuples[level]!, crashedIn: `${where}${typeof top.from === 'string' ? ` in ${path.basename(top.from)}` : ''}` };
}
