import { createHash } from 'node:crypto';
import type { DebugProtocol } from '@vscode/debugprotocol';

/** One value as the contract shows it. */
export interface ValueView {
  type: string;
  repr: string;
  isTruncated: boolean;
}

export interface Limits {
  /** Longest repr kept; longer ones end in "..." with isTruncated. */
  maxReprLength: number;
  /** Most locals in one answer. */
  maxLocals: number;
}

export const DEFAULT_LIMITS: Limits = { maxReprLength: 200, maxLocals: 50 };

/** debugpy groups these under pseudo-variables; an agent wants the program's own names. */
const GROUPS = new Set(['special variables', 'function variables', 'class variables', 'protected variables']);

/**
 * debugpy cuts reprs itself (pydevd's SafeRepr), in every one of these forms an agent must know of:
 * a container past its item count ends its items with "..." (`[0, 1, ...]`); a container nested two
 * deep is only its brackets (`[(1, (...))]`, `{'a': {...}}`); a string inside a container past 30
 * characters, and any other value's repr there, keep their two ends around "..." (`'aaaa...zz'`,
 * `<Foo object a...0d0>`); a string at the top past 64 KiB likewise. So "..." anywhere in a
 * container's or an object's repr is taken as a cut: one the program itself printed (a string
 * holding "...") is reported as one too, never the other way round. A top-level string holds
 * "..." as its own text unless it is longer than SafeRepr's bound.
 */
const TOP_STRING_BOUND = 2 ** 16;

export function engineCut(type: string | undefined, repr: string): boolean {
  if (!repr.includes('...')) return false;
  if (type === 'str' || type === 'bytes' || type === 'string') return repr.length > TOP_STRING_BOUND;
  return true;
}

export function view(type: string | undefined, repr: string, maxReprLength: number): ValueView {
  const cutHere = repr.length > maxReprLength;
  const isTruncated = cutHere || engineCut(type, repr);
  return { type: type ?? '', repr: cutHere ? `${repr.slice(0, maxReprLength)}...` : repr, isTruncated };
}

/** Longest name shown whole; a program can make any string a name (`globals()["x" * 3_000_000] = 1`). */
export const MAX_NAME_LENGTH = 256;

/**
 * A name as an answer shows it: past MAX_NAME_LENGTH, its start and a note of its length and digest,
 * so a megabyte name neither fills the answer nor reaches redaction whole (attack 18z Z4, Z5), and
 * two long names with the same start stay apart. A name already taken (a digest's start shared)
 * is numbered, so no value replaces another.
 */
export function shownName(name: string, taken: Record<string, unknown>): string {
  let shown = name;
  if (name.length > MAX_NAME_LENGTH) {
    const digest = createHash('sha256').update(name).digest('hex').slice(0, 12);
    shown = `${name.slice(0, MAX_NAME_LENGTH - 64)}...(name cut: ${name.length} characters, sha256 ${digest})`;
  }
  if (!Object.prototype.hasOwnProperty.call(taken, shown)) return shown;
  let n = 2;
  while (Object.prototype.hasOwnProperty.call(taken, `${shown} (${n})`)) n++;
  return `${shown} (${n})`;
}

/** Turns DAP variables into `{name: {type, repr, isTruncated}}`, bounded in count and length. */
export function localsView(variables: DebugProtocol.Variable[], limits: Limits): { locals: Record<string, ValueView>; omitted: number } {
  const own = variables.filter((v) => !GROUPS.has(v.name) && v.presentationHint?.kind !== 'virtual');
  const locals: Record<string, ValueView> = {};
  // However large maxReprLength and maxLocals are, one stop stays within the tree budget.
  let left = TREE_BUDGET_CHARS;
  let shown = 0;
  for (const v of own.slice(0, limits.maxLocals)) {
    if (left <= 0) break;
    const value = view(v.type, v.value, Math.min(limits.maxReprLength, Math.max(left, 40)));
    const name = shownName(v.name, locals);
    left -= value.repr.length + name.length + 50;
    locals[name] = value;
    shown++;
  }
  return { locals, omitted: own.length - shown };
}

/** A value with its members, as deep as asked for. */
export interface TreeView extends ValueView {
  members?: Record<string, TreeView>;
  /** Members left out beyond the per-level limit. */
  membersOmitted?: number;
}

export const MAX_MEMBERS_PER_LEVEL = 25;
/** Characters of reprs one expansion may return in all: about 3k tokens. */
export const TREE_BUDGET_CHARS = 12_000;

/** How much of the budget is left, shared by every level of one expansion. */
export interface Budget {
  left: number;
  /** Set once something was left out because the budget ran out. */
  exhausted: boolean;
}

export function newBudget(chars = TREE_BUDGET_CHARS): Budget {
  return { left: chars, exhausted: false };
}

/**
 * Expands a DAP variables reference `depth` levels deep, each level bounded in count, each repr
 * in length, and all of it in total (`budget`): enough to see the shape of a nested structure
 * without an unbounded answer. When the budget runs out, members stop being added.
 */
export async function expandMembers(
  fetch: (ref: number) => Promise<DebugProtocol.Variable[]>,
  ref: number,
  depth: number,
  maxReprLength: number,
  budget: Budget = newBudget(),
): Promise<Pick<TreeView, 'members' | 'membersOmitted'>> {
  if (depth <= 0 || ref <= 0 || budget.left <= 0) {
    if (depth > 0 && ref > 0) budget.exhausted = true;
    return {};
  }
  const own = (await fetch(ref)).filter((v) => !GROUPS.has(v.name));
  const members: Record<string, TreeView> = {};
  let shown = 0;
  for (const v of own.slice(0, MAX_MEMBERS_PER_LEVEL)) {
    if (budget.left <= 0) {
      budget.exhausted = true;
      break;
    }
    const value = view(v.type, v.value, Math.min(maxReprLength, Math.max(budget.left, 40)));
    const name = shownName(v.name, members);
    budget.left -= value.repr.length + name.length + 50;
    members[name] = { ...value, ...(await expandMembers(fetch, v.variablesReference, depth - 1, maxReprLength, budget)) };
    shown++;
  }
  const omitted = own.length - shown;
  return omitted > 0 ? { members, membersOmitted: omitted } : { members };
}
