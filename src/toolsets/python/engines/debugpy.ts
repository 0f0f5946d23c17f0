import { DapConnection } from '../../../core/dap/connection.js';
import { describeError } from '../../../core/errors.js';
import { spawnChild } from '../../../core/process.js';
import { conditionErrors, undefinedFunctions } from '../checks.js';
import { MAX_TYPE_CHARS, MESSAGE_CHARS, TRACEBACK_MESSAGE_CHARS, cutMessage, killedBy, tracebackWithin, uncaughtFromStderr } from '../ends.js';
import type { ConditionFailure, Engine, EngineLaunch, ErrorInfo, StartedEngine, TracebackFrames } from '../engine.js';
import type { Interpreter } from '../interpreter.js';
import { formatTraceback } from '../snapshot.js';

const DAP_TIMEOUT_MS = 30_000;
const CONDITION_FAILED = 'pydevd: Error while evaluating expression in conditional breakpoint: ';

/** pydevd's "important" output for a condition that raised: its first line names the condition, its traceback ends in the exception line. */
export function conditionFailure(output: string): ConditionFailure | undefined {
  if (!output.startsWith(CONDITION_FAILED)) return undefined;
  const [first = '', ...rest] = output.slice(CONDITION_FAILED.length).split('\n');
  const error = rest.map((l) => l.trimEnd()).filter((l) => l !== '' && !/^\s/.test(l) && !l.startsWith('Traceback (most recent call last):'));
  return { condition: first.trim(), error: error.at(-1) ?? 'the condition raised an exception' };
}

/** Python through debugpy's adapter (`python -m debugpy.adapter`, DAP on its stdio). */
export class DebugpyEngine implements Engine {
  readonly name = 'debugpy';
  readonly language = 'Python';

  constructor(readonly interpreter: Interpreter) {}

  async start(spec: EngineLaunch, onAdapter?: (pid: number) => void): Promise<StartedEngine> {
    const { interpreter } = this;
    const env = { ...process.env, PYTHONPATH: interpreter.pythonPath };
    const proc = await spawnChild(interpreter.python, ['-m', 'debugpy.adapter'], { stdio: ['pipe', 'pipe', 'pipe'], env });
    if (proc.child.pid !== undefined) onAdapter?.(proc.child.pid);
    proc.child.stderr!.resume();
    const dap = new DapConnection(proc.child.stdout!, proc.child.stdin!, { name: 'debugpy', timeoutMs: DAP_TIMEOUT_MS });
    // debugpy runs the opened entry (its descriptor path), never the workspace path, which a
    // writer could have swapped for a link by then; boot/sitecustomize.py runs it under its real
    // name (DEBUGKIT_ENTRY), so __file__, sys.path[0], breakpoints and tracebacks are as before.
    const { program } = spec;
    const launch = {
      program: program.path,
      args: spec.args,
      cwd: spec.cwd,
      env: {
        ...spec.env,
        PYTHONPATH: [interpreter.pythonPath, spec.env.PYTHONPATH].filter(Boolean).join(':'),
        DEBUGKIT_ENTRY: program.real,
        DEBUGKIT_ENTRY_FD: program.path,
      },
      python: [interpreter.python],
      console: 'internalConsole',
      justMyCode: true,
      redirectOutput: true,
      // With subProcess on, debugpy injects itself into child Pythons, which then wait for a
      // client to attach them (a debugpyAttach event); without one they hang. Children run
      // undebugged instead.
      subProcess: false,
      showReturnValue: false,
    };
    return { proc, dap, launch };
  }

  async configure(dap: DapConnection, spec: EngineLaunch): Promise<void> {
    await dap.request('setExceptionBreakpoints', { filters: spec.stopOnRaised ? ['raised', 'uncaught'] : ['uncaught'] });
    // debugpy tells pydevd to take a condition that raises as false, silently (a NameError in a
    // condition never stopped the whole run): stop there instead, and say why, as VS Code does.
    await dap.request('setDebuggerProperty', { skipSuspendOnBreakpointException: [], skipPrintBreakpointException: [] });
  }

  readOutput(category: string, output: string): { conditionFailure?: ConditionFailure } {
    const failure = category === 'important' ? conditionFailure(output) : undefined;
    return failure ? { conditionFailure: failure } : {};
  }

  conditionErrors(conditions: string[]): Promise<Map<string, string>> {
    return conditionErrors(this.interpreter.python, conditions);
  }

  async functionsNowhere(root: string, names: string[]): Promise<Map<string, string>> {
    const nowhere = await undefinedFunctions(root, names);
    return new Map(
      [...nowhere].map((name) => [
        name,
        `no function named ${name.split(/[.:]/).at(-1)} is defined in the .py files under the workspace root; debugpy stops only in your own code, so this breakpoint would never stop`,
      ]),
    );
  }

  async exceptionError(dap: DapConnection, threadId: number, _stop: unknown, stack: TracebackFrames): Promise<ErrorInfo> {
    let failed: unknown;
    const info = await dap.request('exceptionInfo', { threadId }).catch((err: unknown) => {
      failed = err;
      return undefined;
    });
    const type = cutMessage(info?.details?.typeName ?? info?.exceptionId ?? 'Exception', MAX_TYPE_CHARS);
    // No answer is no empty message (attack 18z Z9: an 8 MB message timed out and read as "").
    const message =
      failed === undefined
        ? (info?.details?.message ?? info?.description ?? '')
        : `debugpy did not describe the exception (${describeError(failed)}); at this stop, python_evaluate \`type(__exception__[1]).__name__\` and \`str(__exception__[1])[:${MESSAGE_CHARS}]\` show it`;
    // The traceback ends with a shorter cut of the message, so its frames stay within its bound.
    const traceback = tracebackWithin(await formatTraceback(stack.frames, type, cutMessage(message, TRACEBACK_MESSAGE_CHARS), stack.depth));
    return { type, message: cutMessage(message), traceback };
  }

  endError(exitCode: number, stderrTail: string): ErrorInfo | null {
    // Exceptions debugpy does not stop on (RecursionError, errors at interpreter exit) still print a traceback.
    return uncaughtFromStderr(stderrTail) ?? killedBy(exitCode);
  }
}
