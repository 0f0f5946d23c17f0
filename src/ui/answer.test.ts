import { describe, expect, it } from 'vitest';
import { answerReaderSource, readAnswer, type AnswerView } from './answer.js';

/** readAnswer as the MCP Apps view gets it: the source text alone, with nothing of this module around it. */
const fromText = new Function(`${answerReaderSource()}\nreturn readAnswer;`)() as (result: unknown) => AnswerView;

const answers: Record<string, unknown> = {
  debugger: {
    content: [{ type: 'text', text: 'stopped at step (main.c:9)' }],
    structuredContent: {
      state: 'stopped',
      position: 'p4',
      reason: 'end-stepping-range',
      function: 'step',
      file: 'main.c',
      line: 9,
      source: [' 8   int y = x * 2;', '>9   total += y;', ' 10  return total;'],
      frames: [
        { function: 'step', file: 'main.c', line: 9 },
        { function: 'main', file: 'main.c', line: 20 },
      ],
      changed: { total: '42', y: '8' },
      mocks: { set: 'api', replayed: 3, missed: 1, misses: ['GET /users/7: closest mock-2 differs in path'] },
    },
  },
  python: {
    content: [{ type: 'text', text: 'paused (breakpoint) in handler at app.py:12' }],
    structuredContent: {
      hit: true,
      completed: false,
      status: 'paused',
      reason: 'breakpoint',
      function: 'handler',
      frameInfo: { file: '/srv/app.py', line: 12 },
      locals: { row: { repr: "(1, 'ada')", type: 'tuple' }, n: { repr: '3', type: 'int' } },
      source: '   11  row = cur.fetchone()\n-> 12  return row\n   13',
      stack: [{ index: 0, name: 'handler', file: '/srv/app.py', line: 12 }],
    },
  },
  gdb: {
    content: [{ type: 'text', text: 'Breakpoint 1, main () at basic.c:12' }],
    structuredContent: { type: 'ok', content: { stopped: { reason: 'breakpoint-hit', frame: { func: 'main', file: 'basic.c', fullname: '/r/basic.c', line: '12' } } } },
  },
  replay: {
    content: [{ type: 'text', text: 'replay failed' }],
    isError: false,
    structuredContent: { success: false, mocksReplayed: 5, mocksMissed: 2, misses: ['POST /pay: no mock', 'SELECT 1: closest mock-9'], mocksUnused: 1, unusedMocks: ['mock-4'], appExitCode: 1 },
  },
  bundle: {
    content: [{ type: 'text', text: 'unhealthy' }],
    structuredContent: {
      healthy: false,
      pods: { items: [{ pod: 'default/web-1', phase: 'Running', ready: false, restarts: 7, reasons: ['CrashLoopBackOff'] }], total: 1 },
      workloads: { items: [{ kind: 'Deployment', name: 'default/web', problem: '0 of 2 ready' }], total: 1 },
      nodes: { items: [], total: 0 },
      warning_events: { items: [{ reason: 'BackOff', count: 12, last: 'x', message: 'Back-off restarting failed container', objects: [] }], total: 1, ungrouped: 0 },
      log_errors: { items: [{ file: 'default/web-1/web.log', line: 'panic: nil map', matches: 3 }], total: 1 },
      next: ['kubectl describe pod web-1 -n default'],
    },
  },
  trace: {
    content: [{ type: 'text', text: '{"positions":[]}' }],
    structuredContent: {
      format: 'json',
      count: 2,
      positions: [
        { id: 'p1', time: 't', function: 'main', file: 'main.c', line: 5, changed: {}, insn: 10 },
        { id: 'p2', time: 't', function: 'step', file: 'main.c', line: 9, changed: { total: '42' }, insn: 57, bookmark: 'before' },
      ],
    },
  },
};

describe('readAnswer: what the views show of each tool answer', () => {
  it('reads the same from its source text as from the module (the MCP Apps view runs the text)', () => {
    for (const answer of Object.values(answers)) expect(fromText(answer)).toEqual(readAnswer(answer));
  });

  it('a debugger stop: where, why, position, source with the current line, changed variables, frames, replay since the last stop', () => {
    const v = readAnswer(answers.debugger);
    expect(v.stop).toEqual({ file: 'main.c', line: 9, function: 'step', reason: 'end-stepping-range', position: 'p4', state: 'stopped' });
    expect(v.source).toEqual({ lines: [' 8   int y = x * 2;', '>9   total += y;', ' 10  return total;'], current: 1 });
    expect(v.changed).toEqual([
      { name: 'total', value: '42' },
      { name: 'y', value: '8' },
    ]);
    expect(v.stack?.map((f) => `${f.function}:${f.line}`)).toEqual(['step:9', 'main:20']);
    expect(v.replay).toEqual({ set: 'api', replayed: 3, missed: 1, misses: ['GET /users/7: closest mock-2 differs in path'] });
  });

  it('a Python stop: its locals as variables, its text source, its stack', () => {
    const v = readAnswer(answers.python);
    expect(v.stop).toMatchObject({ file: '/srv/app.py', line: 12, function: 'handler', reason: 'breakpoint', state: 'paused' });
    expect(v.variables).toEqual([
      { name: 'row', value: "(1, 'ada')", type: 'tuple' },
      { name: 'n', value: '3', type: 'int' },
    ]);
    expect(v.source?.current).toBe(1);
    expect(v.stack).toEqual([{ function: 'handler', file: '/srv/app.py', line: 12 }]);
  });

  it("a gdb stop: the MI frame and the stop's reason", () => {
    expect(readAnswer(answers.gdb).stop).toEqual({ file: 'basic.c', line: 12, function: 'main', reason: 'breakpoint-hit' });
  });

  it('a replay run: counts, misses, unused mocks and the verdict', () => {
    expect(readAnswer(answers.replay).replay).toEqual({ replayed: 5, missed: 2, misses: ['POST /pay: no mock', 'SELECT 1: closest mock-9'], unused: 1, unusedNames: ['mock-4'], success: false });
  });

  it("a bundle's findings, worst first, and what to look at next", () => {
    expect(readAnswer(answers.bundle).bundle).toEqual({
      healthy: false,
      findings: [
        { kind: 'pod', text: 'default/web-1: Running, not ready, 7 restarts (CrashLoopBackOff)' },
        { kind: 'workload', text: 'Deployment default/web: 0 of 2 ready' },
        { kind: 'warning', text: 'BackOff x12: Back-off restarting failed container' },
        { kind: 'log', text: 'default/web-1/web.log: panic: nil map' },
      ],
      next: ['kubectl describe pod web-1 -n default'],
    });
  });

  it('a recorded timeline: each position with its instruction, bookmark and changed count; not read as a stack', () => {
    const v = readAnswer(answers.trace);
    expect(v.timeline).toEqual([
      { id: 'p1', where: 'main main.c:5', insn: 10, changed: 0 },
      { id: 'p2', where: 'step main.c:9', insn: 57, bookmark: 'before', changed: 1 },
    ]);
    expect(v.stack).toBeUndefined();
    expect(v.stop).toBeUndefined();
  });

  it('is bounded: hostile shapes give a small view, and text that closes the script cannot leave it', () => {
    const huge = {
      structuredContent: {
        changed: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`v${i}`, 'x'.repeat(10_000)])),
        frames: Array.from({ length: 5000 }, () => ({ function: 'f', line: 1 })),
      },
    };
    const v = readAnswer(huge);
    expect(v.changed).toHaveLength(50);
    expect(v.changed![0]!.value.length).toBeLessThanOrEqual(201);
    expect(v.stack).toHaveLength(30);
    expect(JSON.stringify(v).length).toBeLessThan(20_000);
    expect(answerReaderSource()).not.toMatch(/<\/script/i);
  });
});
