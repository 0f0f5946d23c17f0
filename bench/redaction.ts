// What hiding secrets costs (issue 21's answers, issue 18's audit): each answer passes through
// mcp/redact-answers.ts before the model reads it, and each call's arguments through the audit's
// redactor before they are stored. Both run on the event loop, so their time is every client's
// wait. Measured in this process on answers of the shapes the tools give, side by side with the
// serialization every answer already costs (JSON.stringify of the same result).
import { performance } from 'node:perf_hooks';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { redact } from '../src/control/audit.js';
import { redactAnswer } from '../src/mcp/redact-answers.js';
import { machineBasics, ms, summarize, type BenchModule, type BenchResult, type Table } from './util.js';

const RUNS = 400;
const WARMUP = 40;
/** The goals: a stop's answer (a few hundred characters) costs under 0.2 ms at p50; the largest answer a tool gives (the 100,000-character result cap) under 30 ms at p99. */
const STOP_GOAL_MS = 0.2;
const CAP_GOAL_MS = 30;

const JWT = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';

function text(t: string, structuredContent?: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: t }], ...(structuredContent ? { structuredContent } : {}) };
}

/** The answers measured, as tools give them: a stop, locals with a secret, program output, a log file at the cap, kubectl JSON at the cap. */
function answers(): Array<[string, CallToolResult]> {
  const stop = text("[stopped: breakpoint 1 in parse_line at parser.c:42, thread 1]\n  40\t  char *p = line;\n  41\t  while (*p == ' ') p++;\n> 42\t  return strtol(p, NULL, 10);\n  43\t}\n", {
    state: 'stopped',
    stopped: { reason: 'breakpoint-hit', frame: { func: 'parse_line', file: 'parser.c', line: '42' } },
  });
  const locals = text(Array.from({ length: 40 }, (_, i) => (i === 7 ? 'password = 0x5555555592a0 "hunter2"' : `count_${i} = ${i * 17}`)).join('\n'), {
    variables: Array.from({ length: 40 }, (_, i) => ({ name: i === 7 ? 'password' : `count_${i}`, value: String(i), type: 'int' })),
  });
  const output = text(Array.from({ length: 200 }, (_, i) => (i === 100 ? `auth ok ${JWT}` : `[worker ${i % 8}] processed batch ${i} in ${i % 13} ms`)).join('\n'));
  const logLines: string[] = [];
  for (let i = 0; logLines.join('\n').length < 99_000; i++)
    logLines.push(`2026-11-27T06:${String(i % 60).padStart(2, '0')}:00Z level=info msg="GET /api/v1/items/${i}" status=200 took=${i % 97}ms user=u${i % 31}`);
  const log = text(logLines.join('\n'));
  const items = Array.from({ length: 440 }, (_, i) => ({
    metadata: { name: `pod-${i}`, namespace: 'default', labels: { app: 'web', tier: `t${i % 3}` } },
    spec: { containers: [{ name: 'web', image: 'nginx:1.25', env: [{ name: 'DB_PASSWORD', value: `s3cr3t-${i}` }] }] },
    status: { phase: 'Running' },
  }));
  const kubectl = text(JSON.stringify({ kind: 'List', items }).slice(0, 99_000));
  return [
    ['a stop (gdb)', stop],
    ['locals, 40, one a secret', locals],
    ['program output, 200 lines, one JWT', output],
    ['a log file at the result cap', log],
    ['kubectl JSON at the result cap, a secret env per pod', kubectl],
  ];
}

function time(fn: () => unknown): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

/** Both ways interleaved run by run, so a slow moment of the machine falls on both. */
function measure(a: () => unknown, b: () => unknown): [number[], number[]] {
  for (let i = 0; i < WARMUP; i++) {
    a();
    b();
  }
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    ta.push(time(a));
    tb.push(time(b));
  }
  return [ta, tb];
}

export const redactionBench: BenchModule = {
  name: 'redaction',
  async run(): Promise<BenchResult> {
    const rows: string[][] = [];
    let stopP50 = Number.NaN;
    let capP99 = 0;
    for (const [name, answer] of answers()) {
      const [hidden, serialized] = measure(
        () => redactAnswer(answer),
        () => JSON.stringify(answer),
      );
      const h = summarize(hidden);
      const s = summarize(serialized);
      if (name.startsWith('a stop')) stopP50 = h.p50;
      if (name.includes('result cap')) capP99 = Math.max(capP99, h.p99);
      const chars = answer.content.reduce((n, c) => n + (c.type === 'text' ? c.text.length : 0), 0);
      rows.push([name, chars.toLocaleString('en-US'), ms(s.p50), ms(s.p99), ms(h.p50), ms(h.p99), `${(h.p50 / Math.max(s.p50, 0.001)).toFixed(1)}x`]);
    }
    // The audit: one call's arguments, as they are stored.
    const args: Array<[string, unknown]> = [
      ['gdb call, one command', { id: 'gdb-1', command: 'call $password=system("touch /tmp/x")' }],
      ['keploy_mock_record, a command with a password', { command: 'PGPASSWORD=hunter2 psql -h db -c "select 1" && curl -u me:pw https://x/y', name: 'set-1' }],
      ['an argument of 64 KiB', { expression: `x = "${'a'.repeat(65_000)}"` }],
    ];
    const auditRows: string[][] = [];
    for (const [name, value] of args) {
      const [stored, serialized] = measure(
        () => redact(value),
        () => JSON.stringify(value),
      );
      const h = summarize(stored);
      const s = summarize(serialized);
      auditRows.push([name, JSON.stringify(value).length.toLocaleString('en-US'), ms(s.p50), ms(h.p50), ms(h.p99)]);
    }
    const answerTable: Table = {
      title: 'Hiding secrets in one answer (mcp/redact-answers.ts), ms',
      columns: ['answer', 'characters', 'JSON.stringify p50', 'JSON.stringify p99', 'redactAnswer p50', 'redactAnswer p99', 'p50 vs stringify'],
      rows,
      note: 'The baseline is the serialization every answer costs anyway. Answers are cut at 100,000 characters before they are redacted, so the cap rows bound any answer.',
    };
    const auditTable: Table = {
      title: "The audit's redaction of one call's arguments (control/audit.ts redact), ms",
      columns: ['arguments', 'characters', 'JSON.stringify p50', 'redact p50', 'redact p99'],
      rows: auditRows,
    };
    return {
      name: 'redaction',
      date: new Date(),
      machine: machineBasics(),
      summary:
        "What hiding credentials costs on the event loop: every tool's answer is scanned before the model reads it, and every call's arguments before the audit stores them. " +
        'Side by side with JSON.stringify of the same value, which every answer already costs.',
      verdicts: [
        { goal: `a stop's answer hidden in under ${STOP_GOAL_MS} ms at p50`, met: stopP50 < STOP_GOAL_MS, detail: `${ms(stopP50)} ms` },
        { goal: `an answer at the 100,000-character cap hidden in under ${CAP_GOAL_MS} ms at p99`, met: capP99 < CAP_GOAL_MS, detail: `${ms(capP99)} ms` },
      ],
      tables: [answerTable, auditTable],
      method: [
        `${RUNS} runs of each after ${WARMUP} warm-up runs, the two ways interleaved run by run, in this process (no server: the redactors are pure functions on the loop).`,
        'Adversarial inputs (long runs of `token=`, unclosed quotes, many calls) are held linear by the tests (`src/control/attack18.test.ts`), not timed here.',
      ],
    };
  },
};
