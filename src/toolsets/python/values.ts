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

export function view(type: string | undefined, repr: string, maxReprLength: number): ValueView {
  const isTruncated = repr.length > maxReprLength;
  return { type: type ?? '', repr: isTruncated ? `${repr.slice(0, maxReprLength)}...` : repr, isTruncated };
}

/** Turns DAP variables into `{name: {type, repr, isTruncated}}`, bounded in count and length. */
export function localsView(variables: DebugProtocol.Variable[], limits: Limits): { locals: Record<string, ValueView>; omitted: number } {
  const own = variables.filter((v) => !GROUPS.has(v.name) && v.presentationHint?.kind !== 'virtual');
  const locals: Record<string, ValueView> = {};
  for (const v of own.slice(0, limits.maxLocals)) locals[v.name] = view(v.type, v.value, limits.maxReprLength);
  return { locals, omitted: Math.max(0, own.length - limits.maxLocals) };
}

/** A value with its members, as deep as asked for. */
export interface TreeView extends ValueView {
  members?: Record<string, TreeView>;
  /** Members left out beyond the per-level limit. */
  membersOmitted?: number;
}

export const MAX_MEMBERS_PER_LEVEL = 25;

/**
 * Expands a DAP variables reference `depth` levels deep, each level bounded in count, each repr
 * in length: enough to see the shape of a nested structure without an unbounded answer.
 */
export async function expandMembers(
  fetch: (ref: number) => Promise<DebugProtocol.Variable[]>,
  ref: number,
  depth: number,
  maxReprLength: number,
): Promise<Pick<TreeView, 'members' | 'membersOmitted'>> {
  if (depth <= 0 || ref <= 0) return {};
  const own = (await fetch(ref)).filter((v) => !GROUPS.has(v.name));
  const members: Record<string, TreeView> = {};
  for (const v of own.slice(0, MAX_MEMBERS_PER_LEVEL)) {
    members[v.name] = { ...view(v.type, v.value, maxReprLength), ...(await expandMembers(fetch, v.variablesReference, depth - 1, maxReprLength)) };
  }
  const omitted = own.length - MAX_MEMBERS_PER_LEVEL;
  return omitted > 0 ? { members, membersOmitted: omitted } : { members };
}
