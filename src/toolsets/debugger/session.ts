import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DebugkitError } from '../../core/errors.js';
import { openContainedDirectory, privateTempDir, type CheckedProgram } from '../../core/paths.js';
import { isTuple, type MiTuple } from '../../core/mi/parser.js';
import { quoteMiString } from '../../core/mi/connection.js';
import { Engine } from './engine.js';
import { DebuggerRpcError } from './errors.js';
import { changedLocals, localsOf, sourceLines, toFrame, type CompactStop, type Frame } from './stop.js';
import { newerSourceNote } from '../../core/source-lines.js';
import type { DebugReplay } from '../mocks/under.js';
import { str } from '../../core/mi/parser.js';
import { pollUntil } from '../../core/wait.js';
import { procStat } from '../../core/process.js';

/**
 * glibc tunables that keep `record full` working on this CPU: GDB 13 cannot record AVX-512/EVEX
 * (0x62) or VEX (0xc5) instructions, so glibc must pick its SSE2 string functions, and it must not
 * register rseq (syscall 334, which record cannot replay). Measured on GDB 13 and this machine's
 * glibc; test/debugger.test.ts ("records until glibc's EVEX string code") holds it.
 */
export const RECORD_TUNABLES = 'glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX2,-EVEX,-AVX,-AVX_Fast_Unaligned_Load,-ERMS:glibc.pthread.rseq=0';

/** How the session goes back in time. */
export type HistoryMode = 'record' | 'checkpoint' | 'none';

export interface Position {
  id: string;
  time: string;
  pc?: string;
  function?: string;
  file?: string;
  line?: number;
  changed: Record<string, string>;
  /** `record full` instruction number (record mode). */
  insn?: number;
  /** GDB checkpoint number (checkpoint mode). */
  checkpoint?: number;
  bookmark?: string;
}

export interface SessionOptions {
  gdbPath: string;
  root: string;
  replyTimeoutMs: number;
  /** The API key the session belongs to (its crash signatures are that key's). */
  key: string;
}

const MAX_POSITIONS = 10_000;
const MAX_CHECKPOINTS = 64;
/**
 * How long ending a session waits for each of gdb's answers before it kills the program itself.
 * With a checkpoint fork alive and a second thread in the program, GDB 13's `kill` (and
 * `-exec-abort`) waits for the fork forever and never answers.
 */
const END_STEP_MS = 2000;

/** One debuggee (launched or attached) driven through one gdb, with its timeline of positions. */
export class DebugSession {
  mode: HistoryMode = 'none';
  modeNote = '';
  readonly positions: Position[] = [];
  lastCrash: { signal: string; frames: Frame[] } | undefined;
  /** The stored signature of lastCrash, so it does not match itself. */
  lastCrashSignatureId: string | undefined;
  private localsBy = new Map<string, Map<string, string>>();
  /** Breakpoint number -> the addresses of its locations (for stepping off one while replaying). */
  readonly breakpoints = new Map<number, bigint[]>();
  /** Every checkpoint this session made that may still exist (forks of the debuggee). */
  private checkpoints = new Set<number>();
  /** The pid of every fork a checkpoint made (gdb's "fork returned pid N"), killed by pid when a launched session ends. */
  private checkpointPids = new Set<number>();
  private seq = 0;
  private tempDir: string;
  /** The mock set the program's calls are answered from (launch's `mocks`), closed with the session. */
  private replay: DebugReplay | undefined;
  /** The program was interrupted because replay missed a call (stopOnMiss): its next stop is that miss, not a signal. */
  private pausedForMiss = false;

  /** When the program's file was last modified: a source modified after it may not be the code that runs. */
  private builtMs: number | undefined;

  private constructor(
    readonly id: string,
    readonly kind: 'launched' | 'attached',
    readonly pid: number,
    readonly program: string,
    readonly engine: Engine,
    readonly options: SessionOptions,
    tempDir: string,
  ) {
    this.tempDir = tempDir;
  }

  /**
   * Starts `program` under gdb, runs it to main and starts recording there. gdb loads and runs the
   * checked file (its private copy, CheckedProgram) and starts in the checked directory holding it,
   * never a workspace path a writer could swap for a link meanwhile; the copy is removed when gdb
   * has exited.
   */
  static async launch(id: string, checked: CheckedProgram, args: string[], options: SessionOptions, waitMs: number, replay?: DebugReplay): Promise<DebugSession> {
    const program = checked.real;
    const dir = openContainedDirectory(options.root, path.dirname(program), 'program directory');
    const tempDir = privateTempDir('debugkit-dbg-');
    const tty = path.join(tempDir, 'output');
    writeFileSync(tty, '');
    // Under a mock set, the replay's variables (proxychains' preload and config, the proxy URLs, the CA) are the program's.
    const env = { ...process.env, ...replay?.env, GLIBC_TUNABLES: RECORD_TUNABLES };
    let engine: Engine;
    try {
      engine = await Engine.start({ gdbPath: options.gdbPath, cwd: dir.path, args: [checked.path, ...args], env, replyTimeoutMs: options.replyTimeoutMs });
    } finally {
      dir.close();
    }
    void engine.ended.then(() => checked.close());
    // The replay goes with gdb, however gdb ends.
    if (replay) void engine.ended.then(() => replay.close());
    try {
      await engine.mi_(`-inferior-tty-set ${tty}`);
      await engine.mi_('-break-insert -t main');
      // Stopped at the loader's first instruction, before it reads its auxiliary vector: the vDSO is hidden there.
      const first = await engine.exec(`-interpreter-exec console ${quoteMiString('starti')}`, waitMs);
      const clock = first.stopped && !engine.exited ? await hideVdso(engine) : false;
      const run = first.stopped && !engine.exited ? await engine.exec('-exec-continue', waitMs) : first;
      if (!run.stopped || engine.exited) {
        throw new DebugkitError('INVALID_ARGUMENT', `${program} did not reach main (${run.stopped ? 'it exited' : 'still running'}): is it a C/C++ program built with -g?`);
      }
      const pid = Number(/process (\d+)/.exec(await engine.cli('info inferiors'))?.[1] ?? 0);
      const session = new DebugSession(id, 'launched', pid, program, engine, options, tempDir);
      session.builtMs = checked.modifiedMs;
      if (replay) session.underMocks(replay);
      try {
        await engine.cli('record full');
        session.mode = 'record';
        session.modeNote = `recorded by GDB record full from main (glibc start-up makes syscalls record cannot replay)${clock ? "; the program's clock calls go to the kernel, not its vDSO" : ''}`;
      } catch (err) {
        session.modeNote = `record full failed: ${(err as Error).message}`;
      }
      return session;
    } catch (err) {
      await engine.dispose();
      rmSync(tempDir, { recursive: true, force: true });
      throw err;
    }
  }

  /** Attaches to a running process; history comes from fork-based checkpoints. */
  static async attach(id: string, pid: number, options: SessionOptions): Promise<DebugSession> {
    const tempDir = privateTempDir('debugkit-dbg-');
    const engine = await Engine.start({ gdbPath: options.gdbPath, cwd: options.root, args: [], env: process.env, replyTimeoutMs: options.replyTimeoutMs });
    try {
      await engine.mi_(`-target-attach ${pid}`);
      const exe = await engine.cli('info proc exe').catch(() => '');
      const program = /exe = '(.*)'/.exec(exe)?.[1] ?? `pid ${pid}`;
      const session = new DebugSession(id, 'attached', pid, program, engine, options, tempDir);
      session.builtMs = modifiedMs(`/proc/${pid}/exe`);
      // Recording first: it gives real reverse execution until the process runs an instruction
      // record full cannot record (its glibc's AVX paths); then fork checkpoints take over.
      try {
        await engine.cli('record full');
        session.mode = 'record';
        session.modeNote = 'recorded by GDB record full since attach; if the process runs an instruction record full cannot record (glibc AVX paths), history switches to fork checkpoints';
      } catch {
        await session.useCheckpoints('record full is not available for this process');
      }
      return session;
    } catch (err) {
      await engine.dispose();
      rmSync(tempDir, { recursive: true, force: true });
      throw err;
    }
  }

  /** Takes a checkpoint (a fork of the target) and answers its number; its pid is kept for dispose. */
  private async takeCheckpoint(): Promise<number | undefined> {
    const out = await this.engine.cli('checkpoint');
    const pid = /fork returned pid (\d+)/.exec(out)?.[1];
    if (pid) this.checkpointPids.add(Number(pid));
    const n = /checkpoint (\d+)/.exec(out)?.[1];
    if (!n) throw new Error(out.trim() || 'no checkpoint made');
    return Number(n);
  }

  /**
   * Switches history to GDB's fork checkpoints (after `record full` failed or gave up). Positions
   * recorded so far can no longer be returned to.
   */
  async useCheckpoints(why: string): Promise<void> {
    if (this.mode === 'record') await this.engine.cli('record stop').catch(() => undefined);
    for (const p of this.positions) delete p.insn;
    try {
      const probe = await this.takeCheckpoint();
      await this.engine.cli(`delete checkpoint ${probe}`);
      this.mode = 'checkpoint';
      this.modeNote = `history from GDB fork checkpoints taken at each stop (${why}; launch the program with debugger_launch for full reverse execution)`;
    } catch (err) {
      this.mode = 'none';
      this.modeNote = `no history: ${why}, and GDB checkpoints failed (${(err as Error).message}); launch the program with debugger_launch for reverse execution`;
    }
  }

  get tempDirPath(): string {
    return this.tempDir;
  }

  get current(): Position | undefined {
    return this.positions.at(-1);
  }

  /**
   * Answers what replay did since the last stop on each stop; with stopOnMiss a miss interrupts the
   * program, and the miss's answer waits (mocks/under.ts) until it is paused where it asked.
   */
  private underMocks(replay: DebugReplay): void {
    this.replay = replay;
    if (!replay.stopOnMiss) return;
    replay.onMiss(async () => {
      if (!this.engine.running || this.engine.exited) return;
      this.pausedForMiss = true;
      await this.engine.interrupt(2000).catch(() => undefined);
    });
  }

  /** Builds the compact stop for where the target is now and records it as a new position; under a mock set, with what replay did since the last. */
  async describeStop(stopped: MiTuple | undefined, note?: string, output = ''): Promise<CompactStop> {
    const stop = await this.stopAt(stopped, note, output);
    const replayed = this.replay?.sinceLastStop();
    if (replayed) stop.mocks = replayed;
    return stop;
  }

  /** What the compact stop says of the target itself. */
  private async stopAt(stopped: MiTuple | undefined, note?: string, output = ''): Promise<CompactStop> {
    const engine = this.engine;
    if (!stopped) {
      return { state: 'running', note: 'still running after the wait: call debugger_continue again to keep waiting, or debugger_interrupt to stop it' };
    }
    let reason = str(stopped.reason) ?? (this.mode === 'record' ? 'history' : 'stopped');
    const forMiss = this.pausedForMiss;
    this.pausedForMiss = false;
    // The interrupt a replay miss asked for is no signal of the program's: no crash to record.
    if (forMiss && reason === 'signal-received') reason = 'mock-miss';
    if (engine.exited || reason.startsWith('exited')) {
      const code = str(stopped['exit-code']);
      const signal = str(stopped['signal-name']);
      return { state: 'exited', reason, note: signal ? `killed by ${signal}` : `exit code ${code ?? 0}` };
    }
    if (/Process record: inferior program stopped/.test(output) && str(stopped['signal-name']) === '0') {
      // record full stops a program at its exit syscall: the history up to here stays reachable.
      note = [note, 'the program is about to exit: record full stopped it at its exit call; step back to inspect, or debugger_detach to end it'].filter(Boolean).join('; ');
      reason = 'exit-pending';
    }
    const frameTuple = isTuple(stopped.frame) ? stopped.frame : {};
    const top = toFrame(frameTuple);
    const stop: CompactStop = { state: 'stopped', reason, function: top.function };
    if (top.file) {
      stop.file = top.file;
      stop.line = top.line;
    }
    // One round trip's worth of waiting: gdb answers these in order, but none waits for another's reply.
    const [source, frames, now, recordInfo] = await Promise.all([
      sourceLines(this.options.root, str(frameTuple.fullname), top.line),
      this.frames(3),
      this.currentLocals(),
      this.mode === 'record' ? this.engine.cli('info record').catch(() => '') : Promise.resolve(''),
    ]);
    if (source) stop.source = source.lines;
    // As gdb warns, a stop says when its source is newer than the program (attack 18ap g2-6: a rewritten line was shown as the one stopped at).
    const newer = newerSourceNote(source, this.builtMs);
    if (newer) note = [note, newer].filter(Boolean).join('; ');
    if (frames.length > 1) stop.frames = frames;
    // Changes are relative to the last stop in the same function: another frame's locals are not "changes".
    const { changed, more } = changedLocals(this.localsBy.get(top.function) ?? new Map(), now);
    this.localsBy.set(top.function, now);
    if (Object.keys(changed).length > 0) stop.changed = changed;
    if (more > 0) stop.truncated = `${more} more changed locals: debugger_get_variables {scope: "local"} lists them all`;
    if (reason === 'signal-received') {
      const signal = str(stopped['signal-name']) ?? 'signal';
      this.lastCrash = { signal, frames: await this.frames(32) };
    }
    const position = await this.addPosition(top, changed, recordInfo);
    stop.position = position.id;
    if (note) stop.note = note;
    return stop;
  }

  async frames(max: number): Promise<Frame[]> {
    try {
      const r = await this.engine.mi_(`-stack-list-frames 0 ${max - 1}`);
      return Array.isArray(r.stack) ? r.stack.map((f) => toFrame(f as MiTuple)) : [];
    } catch {
      return [];
    }
  }

  async currentLocals(): Promise<Map<string, string>> {
    try {
      return localsOf(await this.engine.mi_('-stack-list-variables --all-values'));
    } catch {
      return new Map();
    }
  }

  /** Marks the state the target is in now as a position; takes a checkpoint in checkpoint mode. */
  private async addPosition(top: Frame, changed: Record<string, string>, info: string): Promise<Position> {
    const position: Position = { id: `p${++this.seq}`, time: new Date().toISOString(), function: top.function, changed };
    if (top.addr) position.pc = top.addr;
    if (top.file) {
      position.file = top.file;
      position.line = top.line;
    }
    if (this.mode === 'record') {
      // Replaying: the current instruction; at the end of the log, the last one recorded (which is
      // what "record goto" takes for the live end); nothing logged yet: 0, the beginning.
      const current = /Current instruction number is (\d+)/.exec(info)?.[1];
      const highest = /Highest recorded instruction number is (\d+)/.exec(info)?.[1];
      position.insn = Number(current ?? highest ?? 0);
    } else if (this.mode === 'checkpoint') {
      const n = await this.takeCheckpoint().catch(() => undefined);
      if (n !== undefined) this.checkpoints.add((position.checkpoint = n));
      await this.pruneCheckpoints();
    }
    this.positions.push(position);
    if (this.positions.length > MAX_POSITIONS) this.positions.splice(0, this.positions.length - MAX_POSITIONS);
    return position;
  }

  private async pruneCheckpoints(): Promise<void> {
    const withCheckpoint = this.positions.filter((p) => p.checkpoint !== undefined);
    for (const old of withCheckpoint.slice(0, Math.max(0, withCheckpoint.length - MAX_CHECKPOINTS))) {
      await this.dropCheckpoint(old.checkpoint!);
      delete old.checkpoint;
    }
  }

  private async dropCheckpoint(n: number): Promise<void> {
    this.checkpoints.delete(n);
    await this.engine.cli(`delete checkpoint ${n}`).catch(() => undefined);
  }

  /**
   * GDB 13 stops resuming when, while replaying, stepping over a breakpoint runs into the end of
   * the recording. Stepping off a breakpoint with the breakpoint disabled avoids that path.
   */
  async stepOffBreakpointWhileReplaying(): Promise<{ stopped?: MiTuple; before: MiTuple } | undefined> {
    if (this.mode !== 'record' || this.breakpoints.size === 0) return undefined;
    const [frame, info] = await Promise.all([
      this.engine.mi_('-stack-info-frame').then(
        (r) => (r.frame ?? {}) as MiTuple,
        () => ({}) as MiTuple,
      ),
      this.engine.cli('info record').catch(() => ''),
    ]);
    const pc = str(frame.addr);
    if (!pc || !/Replay mode/.test(info)) return undefined;
    const here = this.breakpointsAt(pc);
    if (here.length === 0) return undefined;
    await this.engine.mi_(`-break-disable ${here.join(' ')}`);
    try {
      return { stopped: (await this.engine.exec('-exec-step-instruction', this.options.replyTimeoutMs)).stopped, before: { frame } };
    } finally {
      await this.engine.mi_(`-break-enable ${here.join(' ')}`).catch(() => undefined);
    }
  }

  /** Numbers of the breakpoints with a location at `pc`. */
  breakpointsAt(pc: string): number[] {
    const at = BigInt(pc);
    return [...this.breakpoints].filter(([, addrs]) => addrs.includes(at)).map(([n]) => n);
  }

  /** The position `id`, or a -32007 naming the ids that exist. */
  position(id: string): Position {
    const p = this.positions.find((x) => x.id === id || x.bookmark === id);
    if (!p) {
      const known = this.positions.length ? `${this.positions[0]!.id}..${this.current!.id}` : 'none yet';
      throw new DebuggerRpcError('HISTORY_UNAVAILABLE', `no position or bookmark "${id}" in session "${this.id}" (positions: ${known})`);
    }
    return p;
  }

  /** Moves the target back to position `p` (record goto, or restart of its checkpoint). */
  async travelTo(p: Position): Promise<MiTuple | undefined> {
    if (this.mode === 'record' && p.insn !== undefined) {
      if (p.insn === 0) await this.engine.cli('record goto begin');
      else await this.engine.cli(`record goto ${p.insn}`).catch(() => this.engine.cli('record goto end'));
    } else if (this.mode === 'checkpoint' && p.checkpoint !== undefined) {
      await this.engine.cli(`restart ${p.checkpoint}`);
      // The checkpoint is now the live process; keep a fresh copy so p stays reachable.
      const index = this.positions.indexOf(p);
      for (const later of this.positions.slice(index + 1)) {
        if (later.checkpoint !== undefined) await this.dropCheckpoint(later.checkpoint);
      }
      this.positions.splice(index + 1);
      p.checkpoint = await this.takeCheckpoint().catch(() => undefined);
      if (p.checkpoint !== undefined) this.checkpoints.add(p.checkpoint);
    } else {
      throw new DebuggerRpcError('HISTORY_UNAVAILABLE', `position ${p.id} cannot be returned to: ${this.modeNote || 'no history in this session'}`);
    }
    const frame = (await this.engine.mi_('-stack-info-frame')).frame;
    return { reason: 'travel', frame: frame ?? {} } as MiTuple;
  }

  /**
   * Kills a launched program and every checkpoint fork of it by pid (SIGKILL), without asking gdb:
   * the program, each fork whose pid a checkpoint reported, and their children. Only processes
   * this session's gdb traces, or children of one of those, are killed (a pid reused by an
   * unrelated process is left alone). Waits, bounded, until none of them runs code any more.
   */
  private async killProgram(): Promise<void> {
    const gdb = this.engine.pid;
    const ours = new Set<number>();
    let frontier = [this.pid, ...this.checkpointPids].filter((pid) => pid > 0);
    while (frontier.length > 0) {
      const next: number[] = [];
      for (const pid of frontier) {
        if (ours.has(pid)) continue;
        const links = procLinks(pid);
        if (!links || !((gdb !== undefined && links.tracer === gdb) || ours.has(links.ppid))) continue;
        ours.add(pid);
        next.push(...childrenOf(pid));
      }
      frontier = next;
    }
    for (const pid of ours) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    if (ours.size > 0) await pollUntil(() => [...ours].every((pid) => !runsCode(pid)), { timeoutMs: END_STEP_MS, intervalMs: 10 });
  }

  async dispose(): Promise<void> {
    const engine = this.engine;
    try {
      if (engine.running) await engine.interrupt(2000);
      if (this.kind === 'attached') {
        // Checkpoints are forks of the attached process: end them, then let the process go on.
        // Back to the original process (checkpoint 0), end every fork, then let it go on.
        if (this.checkpoints.size > 0) await engine.cli('restart 0').catch(() => undefined);
        for (const n of [...this.checkpoints]) await this.dropCheckpoint(n);
        await engine.mi_('-target-detach');
      } else if (this.checkpointPids.size === 0) {
        await engine.mi_('-exec-abort', END_STEP_MS).catch(() => engine.cli('kill', END_STEP_MS));
      }
      // With checkpoints, gdb is not asked: its kill waits forever for a fork once the program has
      // a second thread. The program and its forks are killed by pid below.
    } catch {
      // gdb is gone, refuses or does not answer in time: the program is killed by pid below, and
      // terminating gdb still ends (or releases) the debuggee.
    }
    if (this.kind === 'launched') await this.killProgram();
    await engine.dispose();
    await this.replay?.close();
    rmSync(this.tempDir, { recursive: true, force: true });
  }
}

/** The parent pid and tracer pid of `pid` from /proc, or undefined when it is gone. */
function procLinks(pid: number): { ppid: number; tracer: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return { ppid: Number(/^PPid:\s*(\d+)/m.exec(status)?.[1] ?? 0), tracer: Number(/^TracerPid:\s*(\d+)/m.exec(status)?.[1] ?? 0) };
  } catch {
    return undefined;
  }
}

/** The children of every thread of `pid` (/proc/PID/task/TID/children); empty when it is gone. */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text) found.push(...text.split(/\s+/).map(Number));
    }
  } catch {
    // Gone meanwhile: no children to add.
  }
  return found;
}

/** Whether `pid` still runs code: it exists, is not a zombie and still has its memory. */
function runsCode(pid: number): boolean {
  try {
    const state = procStat(pid)?.[0];
    if (state === undefined || state === 'Z' || state === 'X' || state === 'x') return false;
    return readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[0] !== '0';
  } catch {
    return false;
  }
}

/** The auxiliary vector's entry naming the vDSO (AT_SYSINFO_EHDR), and the type that makes the loader skip an entry (AT_IGNORE). */
const AT_SYSINFO_EHDR = 33n;
const AT_IGNORE = 1n;
/** Bytes of the start-up stack read at a time, and most read: argv and the environment are at most a few hundred KiB of pointers. */
const STACK_READ = 4096;
const STACK_MOST = 1024 * 1024;

/**
 * Hides the vDSO from a program stopped at its loader's first instruction: the auxiliary vector's
 * AT_SYSINFO_EHDR entry becomes AT_IGNORE, so glibc makes its clock calls (clock_gettime,
 * gettimeofday, time) as system calls, which `record full` records. Through the vDSO they never
 * return under it: the vDSO's clock code retries while the kernel's time page changes, and each
 * recorded instruction is slow enough that it always has (measured on GDB 13: a program's first
 * clock_gettime, or proxychains' gettimeofday in a program under a mock set, never came back).
 * The start-up stack is argc, argv, NULL, the environment, NULL, then the vector's pairs. Answers
 * whether the entry was found and hidden.
 */
export async function hideVdso(engine: Engine): Promise<boolean> {
  const shown = /0x[0-9a-f]+/.exec(str((await engine.mi_('-data-evaluate-expression $sp')).value) ?? '')?.[0];
  if (!shown) return false;
  const sp = BigInt(shown);
  const words: bigint[] = [];
  const word = async (i: number): Promise<bigint | undefined> => {
    while (i >= words.length) {
      if (words.length * 8 >= STACK_MOST) return undefined;
      const at = sp + BigInt(words.length * 8);
      const read = await engine.mi_(`-data-read-memory-bytes 0x${at.toString(16)} ${STACK_READ}`).catch(() => undefined);
      const block = Array.isArray(read?.memory) ? read.memory[0] : undefined;
      const contents = isTuple(block) ? str(block.contents) : undefined;
      if (!contents || contents.length < 16) return undefined;
      const bytes = Buffer.from(contents, 'hex');
      for (let o = 0; o + 8 <= bytes.length; o += 8) words.push(bytes.readBigUInt64LE(o));
    }
    return words[i];
  };
  const argc = await word(0);
  if (argc === undefined || argc > 1_000_000n) return false;
  let i = Number(argc) + 2;
  for (let w = await word(i); w !== 0n; w = await word(++i)) if (w === undefined) return false;
  for (i++; ; i += 2) {
    const type = await word(i);
    if (type === undefined || type === 0n) return false;
    if (type === AT_SYSINFO_EHDR) {
      const at = sp + BigInt(i * 8);
      const ignore = Buffer.alloc(8);
      ignore.writeBigUInt64LE(AT_IGNORE);
      await engine.mi_(`-data-write-memory-bytes 0x${at.toString(16)} ${ignore.toString('hex')}`);
      return true;
    }
  }
}

/** A file's modification time, or undefined when it cannot be read. */
function modifiedMs(file: string): number | undefined {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}
