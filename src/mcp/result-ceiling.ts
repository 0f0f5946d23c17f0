import type { CallToolResult } from '@modelcontextprotocol/server';

/** The ceiling for one tool result, in tokens (about 4 characters each), unless configured. */
export const DEFAULT_RESULT_MAX_TOKENS = 25_000;
/** About 4 characters make a token. */
export const CHARS_PER_TOKEN = 4;
/** The `_meta` key that flags a result cut by the ceiling. */
export const TRUNCATED_META_KEY = 'debugkit/truncated';

/**
 * The one ceiling for every tool result: an answer whose text and structured content together are
 * larger than `maxChars` is cut (each part to its share of the ceiling), flagged in `_meta` under
 * `debugkit/truncated`, and followed by a text note saying how to get the rest. Both parts count:
 * a client may show the model either or both. Per-tool limits sit below it; this catches what they miss.
 */
export function capResult(result: CallToolResult, maxChars: number, rerender?: (value: Record<string, unknown>) => CallToolResult['content']): CallToolResult {
  const textLength = (result.content ?? []).reduce((n, c) => n + (c.type === 'text' ? c.text.length : 0), 0);
  const structuredLength = result.structuredContent === undefined ? 0 : JSON.stringify(result.structuredContent).length;
  const size = textLength + structuredLength;
  if (size <= maxChars) return result;
  const NOTE_ROOM = 400;
  const budget = Math.max(0, maxChars - NOTE_ROOM);
  // A short text (a summary line) is kept whole; a long one gets at most half, or all of it when
  // there is no structured content. The structured content gets the rest.
  const textBudget = structuredLength === 0 ? budget : Math.min(textLength, Math.floor(budget / 2));
  const structuredBudget = budget - textBudget;
  const out: CallToolResult = { ...result };
  if (result.structuredContent !== undefined && structuredLength > structuredBudget) {
    out.structuredContent = shrink(structuredClone(result.structuredContent), structuredBudget) as Record<string, unknown>;
  }
  if (rerender && out.structuredContent) out.content = rerender(out.structuredContent as Record<string, unknown>);
  const texts = (out.content ?? []).filter((c) => c.type === 'text');
  const renderedLength = texts.reduce((n, c) => n + (c.type === 'text' ? c.text.length : 0), 0);
  if (renderedLength > textBudget) {
    out.content = (out.content ?? []).map((c) => (c.type === 'text' ? { ...c, text: cutText(c.text, Math.floor((textBudget * c.text.length) / renderedLength)) } : c));
  }
  const originalTokens = Math.ceil(size / CHARS_PER_TOKEN);
  const limitTokens = Math.floor(maxChars / CHARS_PER_TOKEN);
  out._meta = { ...result._meta, [TRUNCATED_META_KEY]: { originalTokens, limitTokens } };
  out.content = [
    ...(out.content ?? []),
    {
      type: 'text',
      text: `[truncated: this answer had about ${originalTokens} tokens and was cut to the ${limitTokens}-token ceiling; ask for less to see the rest (a range, a filter, a tail or a page cursor)]`,
    },
  ];
  return out;
}

function cutText(text: string, maxChars: number): string {
  return `${text.slice(0, Math.max(0, maxChars - 20))}\n...[cut]`;
}

/** Cuts the largest strings and arrays of a JSON value until it serialises within `maxChars`. */
function shrink(value: unknown, maxChars: number): unknown {
  for (let round = 0; round < 64; round++) {
    const total = JSON.stringify(value).length;
    if (total <= maxChars) break;
    const largest = largestPart(value);
    if (!largest) break;
    const excess = total - maxChars;
    const { parent, key, part } = largest;
    if (typeof part === 'string') {
      const keep = Math.max(0, part.length - excess - 16);
      parent[key] = `${part.slice(0, keep)}...[cut]`;
    } else if (Array.isArray(part)) {
      const size = JSON.stringify(part).length;
      const keep = Math.max(0, Math.floor((part.length * Math.max(0, size - excess)) / size) - (part.length > 1 ? 1 : 0));
      if (keep >= part.length) part.length = Math.max(0, part.length - 1);
      else part.length = keep;
    }
  }
  return value;
}

/** An array or object holding a part, indexed by the part's key. */
type Container = Record<string | number, unknown>;

function largestPart(root: unknown): { parent: Container; key: string | number; part: unknown } | undefined {
  let best: { parent: Container; key: string | number; part: unknown; size: number } | undefined;
  const visit = (parent: Container, key: string | number, node: unknown) => {
    if (typeof node === 'string') {
      if (node.length > 64 && (!best || node.length > best.size)) best = { parent, key, part: node, size: node.length };
      return;
    }
    if (Array.isArray(node)) {
      const size = JSON.stringify(node).length;
      if (node.length > 0 && (!best || size > best.size)) best = { parent, key, part: node, size };
      node.forEach((child, i) => visit(node as unknown as Container, i, child));
      return;
    }
    if (node && typeof node === 'object') for (const [k, child] of Object.entries(node)) visit(node as Container, k, child);
  };
  if (root && typeof root === 'object') for (const [k, child] of Object.entries(root)) visit(root as Container, k, child);
  return best;
}
