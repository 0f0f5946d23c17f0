import { describe, expect, it } from 'vitest';
import { hitConditionMet } from './node-bridge.js';
import { inspectorFilter, mayBeInspectorLine } from './node.js';

describe("node's stderr: the inspector's own lines are left out, the program's go on at once", () => {
  it("keeps back only an unfinished line that can still become one of the inspector's (attack 18aq j2-5)", () => {
    expect(mayBeInspectorLine('Debugger listening on ws://127.0.0.1:4')).toBe(true);
    expect(mayBeInspectorLine('Wait')).toBe(true);
    expect(mayBeInspectorLine('Fo')).toBe(true);
    // Kept back and split again with each chunk, a 20 MB line starting with W held the loop 38 s.
    expect(mayBeInspectorLine(`W${'x'.repeat(300)}`)).toBe(false);
    expect(mayBeInspectorLine('Warning: something')).toBe(false);
    expect(mayBeInspectorLine('Debugger listening on ws://' + 'x'.repeat(300))).toBe(false);
  });
});

describe("node's stderr filter", () => {
  it("leaves out the inspector's lines, also where node writes one at the end of a line the program left open", () => {
    const filter = inspectorFilter();
    const chunks = ['Debugger attached.\nhello\nWa', 'rning: x\n', 'no newline yet ', 'Waiting for the debugger to disconnect...\n'];
    expect(chunks.map((c) => filter.push(c)).join('') + filter.end()).toBe('hello\nWarning: x\nno newline yet ');
    const glued = inspectorFilter();
    expect(glued.push('W word word Waiting for the debugger to disconnect...\n') + glued.end()).toBe('W word word ');
  });
});

describe('hit conditions, as VS Code reads them', () => {
  it('N and == N stop at the Nth hit; >=, >, <, <= and % N as written; anything else always', () => {
    expect([1, 2, 3, 4].map((n) => hitConditionMet('3', n))).toEqual([false, false, true, false]);
    expect([1, 2, 3, 4].map((n) => hitConditionMet('>= 3', n))).toEqual([false, false, true, true]);
    expect([1, 2, 3, 4].map((n) => hitConditionMet('> 3', n))).toEqual([false, false, false, true]);
    expect([1, 2, 3, 4].map((n) => hitConditionMet('< 3', n))).toEqual([true, true, false, false]);
    expect([1, 2, 3, 4].map((n) => hitConditionMet('%2', n))).toEqual([false, true, false, true]);
    expect(hitConditionMet('soon', 1)).toBe(true);
  });
});
