import { randomUUID } from 'node:crypto';
import type { CrashSignature } from '../control.js';

/**
 * Frames that say where a failure was noticed, not where it was caused: allocator, abort and
 * assertion machinery, libc string wrappers, sanitizer runtimes, the C start-up (as Socorro's
 * skip lists and ABRT's duphash do).
 */
const SKIP = [
  /^(__GI_)?(raise|abort|__assert_fail|__assert_fail_base|__libc_message|__fortify_fail|__stack_chk_fail)$/,
  /^(__pthread_kill_implementation|__pthread_kill_internal|pthread_kill|__pthread_kill)$/,
  /^(malloc|free|calloc|realloc|_int_malloc|_int_free|malloc_printerr|__libc_malloc|__libc_free|cfree|operator new.*|operator delete.*)$/,
  /^_*(mem(cpy|move|set|cmp|chr)|str(len|cpy|ncpy|cat|ncat|cmp|ncmp|chr|dup)|stp(n)?cpy)(_[a-z0-9_]+)?$/,
  /^(__asan|__ubsan|__sanitizer|__interceptor|__lsan|___interceptor)/,
  /^(_start|__libc_start_main|__libc_start_call_main|_dl_start|__libc_start_main_impl)$/,
  /^\?\?$/,
];

export function normalizeFrame(name: string): string {
  return name
    .replace(/\(.*\)$/, '')
    .replace(/^(__GI_|__libc_)/, '')
    .trim();
}

/** The top `max` meaningful frames, innermost first. */
export function normalizeFrames(frames: string[], max = 5): string[] {
  const out: string[] = [];
  for (const raw of frames) {
    const name = raw.replace(/\(.*\)$/, '').trim();
    if (!name || SKIP.some((re) => re.test(name))) continue;
    out.push(normalizeFrame(name));
    if (out.length >= max) break;
  }
  return out;
}

export function patternOf(failure: string): CrashSignature['pattern'] {
  if (/overflow|use-after|double-free|free|leak|heap|stack-buffer|Invalid (read|write)|uninitiali[sz]ed|memory|alloc/i.test(failure)) return 'memory';
  if (/^SIG(SEGV|BUS|FPE|ILL|TRAP|SYS)$/.test(failure)) return 'crash';
  return 'logic';
}

export function makeSignature(failure: string, rawFrames: string[], source: string, program?: string, pattern?: CrashSignature['pattern']): CrashSignature {
  const frames = normalizeFrames(rawFrames);
  const sig: CrashSignature = {
    id: randomUUID(),
    time: new Date().toISOString(),
    failure,
    pattern: pattern ?? patternOf(failure),
    frames,
    signature: [failure, ...frames].join(' | '),
    source,
  };
  if (program) sig.program = program;
  return sig;
}

/**
 * Distance between two signatures in [0, 1]: a weighted edit distance over the frame sequences
 * (top frames weigh more), plus a penalty when the failure classes differ.
 */
export function distance(a: CrashSignature, b: CrashSignature): number {
  const x = a.frames,
    y = b.frames;
  const weight = (i: number) => 1 / (1 + i * 0.5);
  const rows = x.length + 1,
    cols = y.length + 1;
  let prev = new Array<number>(cols);
  prev[0] = 0;
  for (let j = 1; j < cols; j++) prev[j] = prev[j - 1]! + weight(j - 1);
  for (let i = 1; i < rows; i++) {
    const cur = new Array<number>(cols);
    cur[0] = prev[0]! + weight(i - 1);
    for (let j = 1; j < cols; j++) {
      const w = weight(Math.min(i, j) - 1);
      cur[j] = Math.min(prev[j]! + weight(i - 1), cur[j - 1]! + weight(j - 1), prev[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : w));
    }
    prev = cur;
  }
  let total = 0;
  for (let i = 0; i < Math.max(x.length, y.length); i++) total += weight(i);
  const frameDistance = total === 0 ? 0 : Math.min(1, prev[cols - 1]! / total);
  return 0.8 * frameDistance + (a.failure === b.failure ? 0 : 0.2);
}

/** Why `b` matched `a`, in words. */
export function explain(a: CrashSignature, b: CrashSignature): string {
  const shared = a.frames.filter((f) => b.frames.includes(f));
  const parts = [a.failure === b.failure ? `same failure ${a.failure}` : `failure ${b.failure} (not ${a.failure})`];
  if (a.frames[0] && a.frames[0] === b.frames[0]) parts.push(`same top frame ${a.frames[0]}`);
  parts.push(shared.length ? `${shared.length}/${Math.max(a.frames.length, b.frames.length)} frames shared (${shared.slice(0, 3).join(', ')})` : 'no frames shared');
  return parts.join('; ');
}
