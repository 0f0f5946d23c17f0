import type { CallToolResult } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { capResult, TRUNCATED_META_KEY } from './result-ceiling.js';

const size = (r: CallToolResult) => r.content.reduce((n, c) => n + (c.type === 'text' ? c.text.length : 0), 0) + (r.structuredContent === undefined ? 0 : JSON.stringify(r.structuredContent).length);

describe('capResult', () => {
  it('leaves an answer within the ceiling as it is', () => {
    const result: CallToolResult = { structuredContent: { a: 1 }, content: [{ type: 'text', text: '{"a":1}' }] };
    expect(capResult(result, 1000)).toBe(result);
  });

  it('cuts a long text, flags the result and says how to get the rest', () => {
    const cut = capResult({ content: [{ type: 'text', text: 'x'.repeat(10_000) }] }, 2000);
    expect(cut._meta?.[TRUNCATED_META_KEY]).toEqual({ originalTokens: 2500, limitTokens: 500 });
    expect(cut.content).toHaveLength(2);
    expect(cut.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^x+\n\.\.\.\[cut\]$/) });
    expect(cut.content[1]).toEqual({
      type: 'text',
      text: '[truncated: this answer had about 2500 tokens and was cut to the 500-token ceiling; ask for less to see the rest (a range, a filter, a tail or a page cursor)]',
    });
    expect(size(cut)).toBeLessThanOrEqual(2000);
  });

  it('shrinks the largest parts of the structured content and renders the text again from what is left', () => {
    const value = { items: Array.from({ length: 200 }, (_, i) => ({ id: i, name: `item-${i}` })), note: 'kept' };
    const rerender = (v: Record<string, unknown>): CallToolResult['content'] => [{ type: 'text', text: `items: ${(v.items as unknown[]).length}` }];
    const cut = capResult({ structuredContent: value, content: rerender(value) }, 4000, rerender);
    const items = (cut.structuredContent as { items: unknown[] }).items;
    expect(items.length).toBeLessThan(200);
    expect((cut.structuredContent as { note: string }).note).toBe('kept');
    expect(cut.content[0]).toEqual({ type: 'text', text: `items: ${items.length}` });
    expect(size(cut)).toBeLessThanOrEqual(4000);
    expect(value.items).toHaveLength(200); // the original is not touched
  });

  it('cuts a long string in the structured content at its end', () => {
    const cut = capResult({ structuredContent: { log: 'l'.repeat(8000), ok: true }, content: [{ type: 'text', text: 'summary' }] }, 3000);
    const log = (cut.structuredContent as { log: string }).log;
    expect(log.endsWith('...[cut]')).toBe(true);
    expect(log.length).toBeLessThan(3000);
    expect(cut.content[0]).toEqual({ type: 'text', text: 'summary' });
    expect(size(cut)).toBeLessThanOrEqual(3000);
  });
});
