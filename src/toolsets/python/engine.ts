import type { Readable } from 'node:stream';
import type { DapConnection } from '../../core/dap/connection.js';
import type { ChildExit, OwnedChild } from '../../core/process.js';

/** The entry, checked and opened inside the root (core/paths openContainedHandle). */
export interface EntryFile {
  /** Its real path: what the program, breakpoints and tracebacks know it by. */
  real: string;
  /** /proc/<pid>/fd/N: the opened file. */
  path: string;
  close(): void;
}

/** What one launch of the program is given. */
export interface EngineLaunch {
  program: EntryFile;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  timeoutMs: number;
  /** Also stop where an exception is raised, even if caught (engines that can tell). */
  stopOnRaised: boolean;
}

/** An engine's adapter, running, and the DAP channel to it. */
export interface StartedEngine {
  /** What debugkit started: the adapter (debugpy's, Delve's), or the program itself (Node.js's, whose adapter runs in debugkit); none when it attached. */
  proc?: OwnedChild;
  /** Attached to a program debugkit did not start (Node.js's --inspect): the session's end detaches and leaves it running. */
  attached?: boolean;
  dap: DapConnection;
  /** The `launch` request's arguments. */
  launch: Record<string, unknown>;
  /** Where the program's output arrives when the adapter does not send it as `output` events (Delve's own streams). */
  programOutput?: { stdout: Readable; stderr: Readable };
  /** When the adapter runs inside debugkit (Node.js's), `proc` is the program itself: this settles if the adapter fails, never when the program ends. */
  adapterExited?: Promise<ChildExit>;
  /** Closes what the channel runs over (a socket), after the adapter has gone. */
  closeChannel?(): void;
}

/** An error an agent reads at an exception stop or at the end: its type, message, and a traceback in the language's own form. */
export interface ErrorInfo {
  type: string;
  message: string;
  traceback: string | null;
}

/** A breakpoint condition that raised when evaluated: the condition and the error. */
export interface ConditionFailure {
  condition: string;
  error: string;
}

/** What the engine reports as console output that the session needs (Delve: the program's pid and exit status). */
export interface ConsoleNotes {
  pid?: number;
  exitCode?: number;
}

/**
 * One language's debugger behind the python toolset's tools (issue 24): how to start its DAP
 * adapter and launch the program, what to set before it runs, and how to read what only that
 * language's engine says (a condition that raised, the program's end, an exception's traceback).
 * Everything else (runs, stops, snapshots, values, budgets, breakpoints) is the one session's.
 */
export interface Engine {
  /** The engine's name in answers: "debugpy", "Delve". */
  readonly name: string;
  /** The language, in answers: "Python", "Go". */
  readonly language: string;
  /** Starts the adapter (`onAdapter`: its pid, as soon as it runs). */
  start(spec: EngineLaunch, onAdapter?: (pid: number) => void): Promise<StartedEngine>;
  /** Between `initialized` and the breakpoints: exception filters, engine properties. */
  configure(dap: DapConnection, spec: EngineLaunch): Promise<void>;
  /** Reads an `important`/`console` output event; what it says of the program. */
  readOutput?(category: string, output: string): { conditionFailure?: ConditionFailure } & ConsoleNotes;
  /** Conditions that can never be evaluated (condition -> why), checked before they are set. */
  conditionErrors?(conditions: string[]): Promise<Map<string, string>>;
  /** Function names no source under `root` defines, with why each cannot stop. */
  functionsNowhere?(root: string, names: string[]): Promise<Map<string, string>>;
  /** The frame an exception stop looks at first (0: the innermost; Go: the first frame of the program's own code). */
  exceptionFrame?(frames: ReadonlyArray<{ presentationHint?: string }>): number;
  /** At an exception stop: the error of a breakpoint condition that failed to evaluate, when that is what stopped (Delve). */
  conditionFailureAt?(dap: DapConnection, threadId: number, stop: { description?: string; text?: string }): Promise<string | undefined>;
  /** The name of a thread that stopped, if it is not the program's main thread (Node.js: a worker thread's). */
  threadName?(dap: DapConnection, threadId: number): Promise<string | undefined>;
  /** The error of an exception stop, from the engine's exception info and the stack. */
  exceptionError(dap: DapConnection, threadId: number, stop: { description?: string; text?: string }, stack: TracebackFrames): Promise<ErrorInfo>;
  /** Once the program has ended, before its end is read: asks the engine for what it only says then (Delve: the exit status, at disconnect). */
  settleEnd?(dap: DapConnection): Promise<void>;
  /** The error a program that ended with `exitCode` left (read from its stderr's tail), if any. */
  endError(exitCode: number, stderrTail: string): ErrorInfo | null;
  /**
   * The program's exit status says whether an exception it stopped at was its end: Node.js exits 1 on an uncaught one, so an
   * exit 0 after such a stop means the program handled it after all (attack 18aq k2-2).
   */
  readonly exitDecidesError?: boolean;
  /** When the program that runs was built (Delve: its binary's last link), for engines that build it; else its start counts. */
  readonly builtMs?: number;
  /** Ends what the engine made for the session (a built binary). */
  dispose?(): Promise<void>;
}

/** The stack an exception stop has, for its traceback: frames innermost first and the stack's real depth. */
export interface TracebackFrames {
  frames: ReadonlyArray<{ name: string; line: number; source?: { path?: string }; presentationHint?: string }>;
  depth: number;
}
