// The time debugkit adds to one GDB command over driving `gdb --interpreter=mi3` directly, for the
// same commands in the same kind of run: stdio and HTTP, p50 and p99 per call.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttpTransport } from '@modelcontextprotocol/client';
import {
  drain,
  envInt,
  fullEnv,
  isAlive,
  killPid,
  ms,
  releaseTempDir,
  sleep,
  summarize,
  track,
  trackTempDir,
  untrack,
  waitExit,
  withTimeout,
  type BenchModule,
  type BenchResult,
  type Summary,
  type Table,
} from './util.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli.js');
const EXEC_WRAPPER = path.join(ROOT, 'dist/toolsets/gdb/exec-wrapper.sh');

const WARMUP = envInt('BENCH_WARMUP', 30);
const ITERATIONS = envInt('BENCH_ITERATIONS', 300);
/** Iterations one way runs before the next way takes over; rounds rotate the order. */
const ROUND = envInt('BENCH_ROUND', 10);
const LOOP_COUNT = 100_000;
/** Bound on one command's round trip (a breakpoint hit takes milliseconds). */
const COMMAND_TIMEOUT_MS = 10_000;
const START_TIMEOUT_MS = 20_000;
const GOAL_MS = 1;

/** Sent once per way, untimed. */
const SETUP = ['-break-insert add', '-exec-run'];
/** One iteration: what an agent sends at each stop. Each command is timed on its own. */
const COMMANDS = ['-exec-continue', '-stack-list-frames', '-stack-list-variables --simple-values', '-data-evaluate-expression sum'];
const resumes = (command: string) => command.startsWith('-exec-');

/** debugkit's own gdb settings (src/toolsets/gdb/session.ts), so both sides drive the same gdb. */
const GDB_SETTINGS = ['-gdb-set mi-async on', '-gdb-set pagination off', '-gdb-set confirm off', '-gdb-set width 0', '-gdb-set height 0', '-enable-pretty-printing'];

const PROGRAM = 'bench_loop';
const SOURCE = `#include <stdio.h>

long sum = 0;

static long add(long a, long b) {
  long r = a + b;
  return r;
}

int main(void) {
  for (long i = 0; i < ${LOOP_COUNT}; i++) sum = add(sum, i);
  printf("sum=%ld\\n", sum);
  return 0;
}
`;

/** What a command returned, kept apart from the timing so checks cost the measured path nothing. */
interface Reply {
  ok: boolean;
  /** For -exec-*: did the target stop at the breakpoint. */
  atBreakpoint?: boolean;
  /** For -data-evaluate-expression. */
  value?: string;
  text: string;
}

interface Way {
  key: 'direct' | 'stdio' | 'http' | 'http26' | 'plain';
  label: string;
  send(command: string): Promise<unknown>;
  check(command: string, raw: unknown): Reply;
  close(): Promise<void>;
}

// ---------------------------------------------------------------- 1. gdb driven directly

interface Waiter {
  prefix: string;
  needStop: boolean;
  result?: string;
  stopped?: string;
  resolve(v: { result: string; stopped?: string }): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/** gdb in MI mode with a minimal line reader: `<token>^...` answers, `*stopped` ends a resume. */
class DirectGdb implements Way {
  readonly key = 'direct';
  readonly label = 'gdb direct';
  private buffer = '';
  private token = 0;
  private waiter: Waiter | undefined;
  private inferiorPid: number | undefined;
  private readonly log = { text: '' };

  private constructor(private readonly child: ChildProcess) {
    const out = child.stdout!;
    out.setEncoding('utf8');
    out.on('data', (chunk: string) => this.onData(chunk));
    drain(child.stderr, this.log);
    // debugkit hands gdb two more pipes for the debuggee's stdout and stderr (see exec-wrapper.sh).
    drain(child.stdio[3] as Readable, { text: '' });
    drain(child.stdio[4] as Readable, { text: '' });
    child.once('exit', (code, signal) => this.fail(new Error(`gdb exited (${signal ?? code}): ${this.log.text}`)));
  }

  static async start(cwd: string, program: string): Promise<DirectGdb> {
    const child = spawn('gdb', ['--interpreter=mi3', '-q', '-nx'], {
      cwd,
      env: { ...process.env, LC_ALL: 'C.UTF-8' },
      stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    track(child.pid, 'gdb (direct)', true);
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      }),
      START_TIMEOUT_MS,
      'starting gdb',
    );
    const gdb = new DirectGdb(child);
    const restoreLocale = process.env.LC_ALL === undefined ? 'unset environment LC_ALL' : `set environment LC_ALL=${process.env.LC_ALL}`;
    const setup = [...GDB_SETTINGS, `-gdb-set exec-wrapper '${EXEC_WRAPPER}'`, `-interpreter-exec console "${restoreLocale}"`, `-file-exec-and-symbols "${program}"`];
    for (const command of setup) {
      const reply = gdb.check(command, await gdb.send(command));
      if (!reply.ok) throw new Error(`gdb refused "${command}": ${reply.text}`);
    }
    return gdb;
  }

  send(command: string): Promise<{ result: string; stopped?: string }> {
    if (this.waiter) return Promise.reject(new Error('gdb direct: a command is already waiting'));
    const token = ++this.token;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        reject(new Error(`gdb direct: no answer to "${command}" within ${COMMAND_TIMEOUT_MS} ms`));
      }, COMMAND_TIMEOUT_MS);
      this.waiter = { prefix: `${token}^`, needStop: resumes(command), resolve, reject, timer };
      this.child.stdin!.write(`${token}${command}\n`);
    });
  }

  check(command: string, raw: unknown): Reply {
    const { result, stopped } = raw as { result: string; stopped?: string };
    const ok = !/^\d+\^error/.test(result);
    const reply: Reply = { ok, text: stopped ? `${result}\n${stopped}` : result };
    if (resumes(command)) reply.atBreakpoint = /reason="breakpoint-hit"/.test(stopped ?? '');
    const value = /\^done,value="([^"]*)"/.exec(result);
    if (value) reply.value = value[1];
    return reply;
  }

  async close(): Promise<void> {
    const { child } = this;
    if (child.exitCode === null && child.signalCode === null) {
      child.stdin!.write('-gdb-exit\n');
      child.stdin!.end();
      if (!(await waitExit(child, 3000))) {
        killPid(child.pid!, true);
        await waitExit(child, 3000);
      }
    }
    // gdb kills its debuggee when it exits; make sure of it.
    if (this.inferiorPid !== undefined && isAlive(this.inferiorPid)) killPid(this.inferiorPid, false);
    untrack(child.pid);
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    let newline = this.buffer.indexOf('\n');
    while (newline !== -1) {
      this.onLine(this.buffer.slice(0, newline));
      this.buffer = this.buffer.slice(newline + 1);
      newline = this.buffer.indexOf('\n');
    }
  }

  private onLine(line: string): void {
    if (line.startsWith('=thread-group-started')) {
      const pid = /pid="(\d+)"/.exec(line);
      if (pid) this.inferiorPid = Number(pid[1]);
    }
    const w = this.waiter;
    if (!w) return;
    if (w.result === undefined && line.startsWith(w.prefix)) w.result = line;
    else if (w.needStop && line.startsWith('*stopped')) w.stopped = line;
    else return;
    const errored = w.result !== undefined && /^\d+\^error/.test(w.result);
    if (w.result !== undefined && (!w.needStop || w.stopped !== undefined || errored)) {
      clearTimeout(w.timer);
      this.waiter = undefined;
      w.resolve({ result: w.result, stopped: w.stopped });
    }
  }

  private fail(err: Error): void {
    const w = this.waiter;
    if (!w) return;
    clearTimeout(w.timer);
    this.waiter = undefined;
    w.reject(err);
  }
}

// ---------------------------------------------------------------- 2 and 3. debugkit over MCP

interface ToolReply {
  isError?: boolean;
  structuredContent?: { type?: string; content?: any };
  content?: Array<{ text?: string }>;
}

/** Calls one tool with a timeout: the v1 and v2 SDK clients differ only in the argument order. */
type CallTool = (params: { name: string; arguments: Record<string, unknown> }, timeout: number) => Promise<unknown>;

/** debugkit's `call` tool through an MCP client: stdio, Streamable HTTP (2025 session), or HTTP 2026-07-28. */
class DebugkitWay implements Way {
  private id = '';

  constructor(
    readonly key: 'stdio' | 'http' | 'http26' | 'plain',
    readonly label: string,
    private readonly call: CallTool,
    private readonly shutdown: () => Promise<void>,
  ) {}

  async open(program: string): Promise<void> {
    const r = (await this.call({ name: 'open', arguments: { program } }, START_TIMEOUT_MS)) as ToolReply;
    const id = r.structuredContent?.content?.id;
    if (r.structuredContent?.type !== 'ok' || typeof id !== 'string') throw new Error(`${this.label}: open failed: ${text(r)}`);
    this.id = id;
  }

  send(command: string): Promise<unknown> {
    return this.call({ name: 'call', arguments: { id: this.id, command } }, COMMAND_TIMEOUT_MS);
  }

  check(command: string, raw: unknown): Reply {
    const r = raw as ToolReply;
    const body = r.structuredContent;
    const reply: Reply = { ok: body?.type === 'ok' && r.isError !== true, text: text(r) };
    if (!reply.ok) return reply;
    if (resumes(command)) reply.atBreakpoint = body?.content?.state === 'stopped' && body.content.stopped?.reason === 'breakpoint-hit';
    const value = body?.content?.result?.value;
    if (typeof value === 'string') reply.value = value;
    return reply;
  }

  close(): Promise<void> {
    return this.shutdown();
  }
}

function text(r: ToolReply): string {
  return (r.content ?? [])
    .map((c) => c.text ?? '')
    .join('')
    .slice(0, 2000);
}

/** Extra node flags for the debugkit servers: BENCH_CPU_PROF=<dir> writes a CPU profile of each. */
function nodeFlags(): string[] {
  const dir = process.env.BENCH_CPU_PROF;
  return dir ? ['--cpu-prof', '--cpu-prof-dir', path.resolve(dir)] : [];
}

async function startStdio(root: string): Promise<DebugkitWay> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...nodeFlags(), CLI, '--root', root],
    cwd: root,
    env: fullEnv(),
    stderr: 'pipe',
  });
  const log = { text: '' };
  drain(transport.stderr as Readable | null, log);
  const client = new Client({ name: 'debugkit-bench-stdio', version: '1.0.0' });
  let pid: number | undefined;
  const shutdown = async () => {
    await withTimeout(client.close(), 8000, 'closing the stdio client').catch(() => undefined);
    if (pid !== undefined && isAlive(pid)) killPid(pid, false);
    untrack(pid);
  };
  try {
    await withTimeout(client.connect(transport), START_TIMEOUT_MS, 'connecting to debugkit over stdio');
    pid = transport.pid ?? undefined;
    track(pid, 'debugkit (stdio)', false);
  } catch (err) {
    pid = transport.pid ?? undefined;
    await shutdown();
    throw new Error(`${String(err)}\n${log.text}`, { cause: err });
  }
  return new DebugkitWay('stdio', 'debugkit stdio', (p, timeout) => client.callTool(p, undefined, { timeout }), shutdown);
}

/**
 * `modern`: the v2 SDK client pinned to 2026-07-28 (stateless, a plain JSON answer per call);
 * `plain`: no MCP client at all, the seed's curl form (one JSON-RPC POST per call, no session and
 * no envelope) over one keep-alive connection: what the HTTP transport itself adds.
 */
async function startHttp(root: string, mode: 'session' | 'modern' | 'plain' = 'session'): Promise<DebugkitWay> {
  const modern = mode === 'modern';
  const key = `bench_${randomBytes(18).toString('base64url')}`;
  const proc = spawn(process.execPath, [...nodeFlags(), CLI, 'serve', '--port', '0', '--api-key', key, '--root', root], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: process.env,
  });
  track(proc.pid, 'debugkit (HTTP)', false);
  const out = { text: '' };
  drain(proc.stdout, out);
  drain(proc.stderr, out);
  let client: Client | ModernClient | undefined;
  let transport: StreamableHTTPClientTransport | undefined;
  const shutdown = async () => {
    if (transport?.sessionId) await withTimeout(transport.terminateSession(), 5000, 'ending the HTTP session').catch(() => undefined);
    if (client) await withTimeout(client.close(), 5000, 'closing the HTTP client').catch(() => undefined);
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      // debugkit gives its own shutdown 5 s before it exits anyway.
      if (!(await waitExit(proc, 8000))) {
        killPid(proc.pid!, false);
        await waitExit(proc, 2000);
      }
    }
    untrack(proc.pid);
  };
  try {
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!/API key: \S+/.test(out.text)) {
      if (proc.exitCode !== null) throw new Error(`debugkit serve exited (${proc.exitCode})`);
      if (Date.now() > deadline) throw new Error('debugkit serve printed no URL in time');
      await sleep(20);
    }
    const url = /at (http:\/\/\S+)/.exec(out.text)?.[1];
    if (!url) throw new Error('debugkit serve printed no URL');
    const requestInit = { headers: { Authorization: `Bearer ${key}` } };
    if (mode === 'plain') {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const target = new URL(url);
      let id = 0;
      const post = (p: { name: string; arguments: Record<string, unknown> }, timeout: number) =>
        new Promise<unknown>((resolve, reject) => {
          const body = JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: p });
          const req = http.request(
            {
              host: target.hostname,
              port: target.port,
              path: target.pathname,
              method: 'POST',
              agent,
              timeout,
              headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
            },
            (res) => {
              const chunks: Buffer[] = [];
              res.on('data', (c: Buffer) => chunks.push(c));
              res.on('end', () => {
                try {
                  const reply = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { result?: unknown; error?: { message: string } };
                  if (reply.error) reject(new Error(reply.error.message));
                  else resolve(reply.result);
                } catch (err) {
                  reject(err);
                }
              });
            },
          );
          req.on('timeout', () => req.destroy(new Error(`no answer within ${timeout} ms`)));
          req.on('error', reject);
          req.end(body);
        });
      const closeAgent = async () => {
        agent.destroy();
        await shutdown();
      };
      return new DebugkitWay('plain', 'debugkit HTTP plain JSON-RPC', post as CallTool, closeAgent);
    }
    if (modern) {
      const c = new ModernClient({ name: 'debugkit-bench-http26', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      client = c;
      await withTimeout(c.connect(new ModernHttpTransport(new URL(url), { requestInit })), START_TIMEOUT_MS, 'connecting to debugkit over HTTP (2026-07-28)');
      await c.listTools();
      return new DebugkitWay('http26', 'debugkit HTTP 2026-07-28', (p, timeout) => c.callTool(p, { timeout }), shutdown);
    }
    transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
    const c = new Client({ name: 'debugkit-bench-http', version: '1.0.0' });
    client = c;
    await withTimeout(c.connect(transport), START_TIMEOUT_MS, 'connecting to debugkit over HTTP');
    await c.listTools();
    return new DebugkitWay('http', 'debugkit HTTP', (p, timeout) => c.callTool(p, undefined, { timeout }), shutdown);
  } catch (err) {
    await shutdown();
    throw new Error(`${String(err)}\n${out.text}`, { cause: err });
  }
}

// ---------------------------------------------------------------- the run

type Samples = Map<string, number[]>;

async function timed(way: Way, command: string, samples: Samples | undefined): Promise<Reply> {
  const started = performance.now();
  const raw = await way.send(command);
  const elapsed = performance.now() - started;
  const reply = way.check(command, raw);
  if (!reply.ok) throw new Error(`${way.label}: "${command}" failed: ${reply.text}`);
  if (resumes(command) && !reply.atBreakpoint) throw new Error(`${way.label}: "${command}" did not stop at the breakpoint: ${reply.text}`);
  samples?.get(command)!.push(elapsed);
  return reply;
}

/** Runs `count` iterations on one way; returns the last value of `sum`. */
async function iterate(way: Way, count: number, samples: Samples | undefined): Promise<string | undefined> {
  let last: string | undefined;
  for (let i = 0; i < count; i++) {
    for (const command of COMMANDS) {
      const reply = await timed(way, command, samples);
      if (reply.value !== undefined) last = reply.value;
    }
  }
  return last;
}

function gdbVersion(): string {
  try {
    return execFileSync('gdb', ['--version'], { encoding: 'utf8', timeout: 10_000 }).split('\n')[0]!.trim();
  } catch (err) {
    throw new Error(`gdb is needed for this benchmark: ${(err as Error).message}`, { cause: err });
  }
}

async function run(): Promise<BenchResult> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
  const gdb = gdbVersion();
  const gcc = execFileSync('gcc', ['--version'], { encoding: 'utf8', timeout: 10_000 }).split('\n')[0]!.trim();
  const loadBefore = os.loadavg()[0]!;
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'debugkit-bench-')));
  trackTempDir(root);
  const ways: Way[] = [];
  try {
    writeFileSync(path.join(root, `${PROGRAM}.c`), SOURCE);
    execFileSync('gcc', ['-g', '-O0', '-o', path.join(root, PROGRAM), path.join(root, `${PROGRAM}.c`)], { stdio: 'pipe', timeout: 60_000 });

    // Start every way before measuring any, so all four run side by side for the whole run.
    ways.push(await DirectGdb.start(root, path.join(root, PROGRAM)));
    const stdio = await startStdio(root);
    ways.push(stdio);
    await stdio.open(PROGRAM);
    const http = await startHttp(root);
    ways.push(http);
    await http.open(PROGRAM);
    const http26 = await startHttp(root, 'modern');
    ways.push(http26);
    await http26.open(PROGRAM);
    const plain = await startHttp(root, 'plain');
    ways.push(plain);
    await plain.open(PROGRAM);

    const samples = new Map<string, Samples>(ways.map((w) => [w.key, new Map(COMMANDS.map((c) => [c, [] as number[]]))]));
    const lastSum = new Map<string, string | undefined>();
    for (const way of ways) {
      for (const command of SETUP) {
        const reply = way.check(command, await withTimeout(Promise.resolve(way.send(command)), COMMAND_TIMEOUT_MS, `${way.label} ${command}`));
        if (!reply.ok) throw new Error(`${way.label}: "${command}" failed: ${reply.text}`);
        if (resumes(command) && !reply.atBreakpoint) throw new Error(`${way.label}: "${command}" did not stop at the breakpoint: ${reply.text}`);
      }
      await iterate(way, WARMUP, undefined);
    }
    // Rounds of ROUND iterations per way; the order rotates each round so drift (CPU frequency,
    // caches, other load) hits every way alike.
    const started = performance.now();
    for (let done = 0, round = 0; done < ITERATIONS; round++) {
      const count = Math.min(ROUND, ITERATIONS - done);
      for (let k = 0; k < ways.length; k++) {
        const way = ways[(round + k) % ways.length]!;
        lastSum.set(way.key, await iterate(way, count, samples.get(way.key)));
      }
      done += count;
    }
    const seconds = (performance.now() - started) / 1000;

    // Same commands, same run: every way must have reached the same point of the program.
    const sums = new Set(lastSum.values());
    if (sums.size !== 1) throw new Error(`the ways disagree on sum after the run: ${JSON.stringify(Object.fromEntries(lastSum))}`);

    return report({ gdb, gcc, samples, seconds, sum: [...sums][0], load: [loadBefore, os.loadavg()[0]!] });
  } finally {
    for (const way of ways.reverse()) await withTimeout(way.close(), 15_000, `closing ${way.label}`).catch(() => undefined);
    const leftovers = releaseTempDir(root);
    if (leftovers.length > 0) process.stderr.write(`bench: killed leftover processes: ${leftovers.join(', ')}\n`);
  }
}

interface RunData {
  gdb: string;
  gcc: string;
  samples: Map<string, Samples>;
  seconds: number;
  sum: string | undefined;
  /** 1-minute load average before and after the run. */
  load: [number, number];
}

function report({ gdb, gcc, samples, seconds, sum, load }: RunData): BenchResult {
  const kinds = [...COMMANDS.map((c) => ({ label: `\`${c}\``, commands: [c] })), { label: '**all commands**', commands: COMMANDS }];
  const stat = (way: string, commands: string[]): Summary => summarize(commands.flatMap((c) => samples.get(way)!.get(c)!));

  const latency: Table = {
    title: 'Round trip per call, ms',
    columns: [
      'command',
      'n',
      'direct p50',
      'direct p99',
      'direct mean',
      'stdio p50',
      'stdio p99',
      'stdio mean',
      'HTTP p50',
      'HTTP p99',
      'HTTP mean',
      'HTTP 2026 p50',
      'HTTP 2026 p99',
      'HTTP 2026 mean',
      'plain p50',
      'plain p99',
      'plain mean',
    ],
    rows: kinds.map(({ label, commands }) => {
      const all = (['direct', 'stdio', 'http', 'http26', 'plain'] as const).map((w) => stat(w, commands));
      return [label, String(all[0]!.n), ...all.flatMap((x) => [ms(x.p50), ms(x.p99), ms(x.mean)])];
    }),
  };
  const added: Table = {
    title: 'Added by debugkit (debugkit minus direct), ms',
    columns: [
      'command',
      'stdio +p50',
      'stdio +p99',
      'stdio +mean',
      'HTTP +p50',
      'HTTP +p99',
      'HTTP +mean',
      'HTTP 2026 +p50',
      'HTTP 2026 +p99',
      'HTTP 2026 +mean',
      'plain +p50',
      'plain +p99',
      'plain +mean',
    ],
    rows: kinds.map(({ label, commands }) => {
      const d = stat('direct', commands);
      const row = [label];
      for (const w of ['stdio', 'http', 'http26', 'plain']) {
        const x = stat(w, commands);
        row.push(ms(x.p50 - d.p50, true), ms(x.p99 - d.p99, true), ms(x.mean - d.mean, true));
      }
      return row;
    }),
    note: 'Each "+" figure is a difference of the two distributions\' percentiles (or means), not a percentile of per-call differences.',
  };

  const stdioAdded = stat('stdio', COMMANDS).p50 - stat('direct', COMMANDS).p50;
  const httpAdded = stat('plain', COMMANDS).p50 - stat('direct', COMMANDS).p50;
  const sdkAdded = Math.min(stat('http', COMMANDS).p50, stat('http26', COMMANDS).p50) - stat('direct', COMMANDS).p50;
  const worstKind = COMMANDS.map((c) => ({ c, v: stat('stdio', [c]).p50 - stat('direct', [c]).p50 })).sort((a, b) => b.v - a.v)[0]!;
  const cpu = os.cpus();
  return {
    name: 'gdb',
    date: new Date(),
    machine: [
      ['CPU', `${cpu[0]?.model.trim() ?? 'unknown'}, ${cpu.length} cores`],
      ['OS', `${os.type()} ${os.release()} ${os.arch()}`],
      ['Node', process.version],
      ['gdb', gdb],
      ['gcc', gcc],
      ['load average (1 min) before/after', `${load[0].toFixed(2)} / ${load[1].toFixed(2)}`],
    ],
    summary:
      'The time debugkit adds to one GDB command over driving `gdb --interpreter=mi3` directly: the same commands, ' +
      'against the same program, each timed from the request to its answer, for debugkit over stdio and over Streamable HTTP.',
    method: [
      `Program: a C loop (\`gcc -g -O0\`) calling \`add()\` ${LOOP_COUNT} times; a breakpoint on \`add\`; \`-exec-run\` once, untimed.`,
      `One iteration, each command timed on its own: ${COMMANDS.map((c) => `\`${c}\``).join(', ')}. ` +
        "`-exec-continue` runs to the next breakpoint hit and counts until the `*stopped` record (debugkit's `call` answers after the stop).",
      "**direct**: `gdb --interpreter=mi3 -q -nx` spawned by the bench with debugkit's settings (mi-async on, pagination off, confirm off, " +
        'width/height 0, pretty printing, its exec-wrapper and fd 3/4 pipes); writes `<token><command>\\n`, waits for the `<token>^` line ' +
        '(and `*stopped`), no other parsing.',
      '**stdio**: MCP SDK `Client` + `StdioClientTransport` running `node dist/cli.js --root <tmp>`; `open {program}` then `call {id, command}`.',
      '**HTTP**: `node dist/cli.js serve --port 0 --api-key <random>`, MCP SDK v1 `Client` + `StreamableHTTPClientTransport` with `Authorization: Bearer` ' +
        '(a 2025-11-25 session; answers without a progress token come back as plain JSON, not SSE).',
      '**HTTP 2026**: the same server, the MCP SDK v2 `Client` pinned to protocol 2026-07-28 (stateless: no session, `_meta` on every request, ' +
        'a server instance per request, plain JSON answers).',
      'The debugkit figures include the client side of MCP (the SDK client serializing the request and parsing the answer), since an agent pays it too.',
      `All four run at once, each with its own gdb and debuggee. ${WARMUP} warm-up iterations per way (not counted), then ${ITERATIONS} measured ` +
        `iterations per way in rounds of ${ROUND}; the order of the ways rotates each round so drift hits all alike. ` +
        `Measuring took ${seconds.toFixed(1)} s; every way ended with \`sum\` = ${sum ?? '?'}.`,
      'p50/p99: nearest rank over the pooled samples; "all commands" pools the four kinds.',
    ],
    tables: [latency, added],
    verdicts: [
      {
        goal: `under ${GOAL_MS} ms added at p50 on stdio (all commands)`,
        met: stdioAdded < GOAL_MS,
        detail: `${ms(stdioAdded, true)} ms; the most per kind: ${ms(worstKind.v, true)} ms on \`${worstKind.c}\``,
      },
      {
        goal: `under ${GOAL_MS} ms added at p50 by the HTTP transport (all commands, plain JSON-RPC POSTs on one keep-alive connection)`,
        met: httpAdded < GOAL_MS,
        detail: `${ms(httpAdded, true)} ms; through an MCP SDK client (the faster of the 2025 session and 2026-07-28) ${ms(sdkAdded, true)} ms, the rest being the client's own work (loopback TCP between two processes costs part of it too; see the load average)`,
      },
    ],
  };
}

export const gdbBench: BenchModule = { name: 'gdb', run };
