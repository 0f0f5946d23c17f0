import { mkdirSync, renameSync, rmSync, symlinkSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DebugkitError } from '../../core/errors.js';
import { runBounded } from '../../core/run.js';

export interface Interpreter {
  /** What to execute: the user's choice, as given (absolute path or a command on PATH). */
  python: string;
  /**
   * PYTHONPATH for the adapter and the debuggee: debugkit's sitecustomize (TCP_NODELAY on
   * debugpy's sockets), and, when the interpreter lacks debugpy, a way to import the system's.
   */
  pythonPath: string;
  debugpyVersion: string;
  /** The interpreter's own version (3.11.2). */
  pythonVersion: string;
}

/** Holds sitecustomize.py; see it for why. */
const BOOT_DIR = fileURLToPath(new URL('./boot', import.meta.url));

/** The interpreter a session that names none runs with, and the one doctor checks: python3 on PATH. */
const DEFAULT_PYTHON = 'python3';
const SYSTEM_PYTHON = '/usr/bin/python3';
const PROBE = 'import debugpy, sys; print(debugpy.__version__); print(sys.version.split()[0])';
const INSTALL_HINT = 'install it with "apt-get install -y python3-debugpy" (for /usr/bin/python3) or "<python> -m pip install debugpy"';

/** A probe under way or done, and how many calls still wait for it (the last one to give up stops it). */
interface Probe {
  found: Promise<Interpreter>;
  stop: AbortController;
  waiting: number;
  settled: boolean;
}

const cache = new Map<string, Probe>();

/**
 * The cache key of an interpreter path: an absolute path normalized (`/x/./py`, `/x//py` and `/x/py`
 * are one probe). Links are not resolved: a venv's `bin/python` links to the system's, yet runs with
 * the venv's packages.
 */
function probeKey(python: string): string {
  return path.isAbsolute(python) ? path.resolve(python) : python;
}

/**
 * Finds how to run debugpy with the interpreter the user chose. Debian's debugpy is importable
 * only by /usr/bin/python3; another interpreter (pyenv's, a venv's) gets a private directory on
 * PYTHONPATH holding links to it and to the `bytecode` package Debian unvendored from it.
 * Without this, a launch with such an interpreter hangs ~15 s and then fails vaguely.
 * `signal`: the call that asks; once every call waiting for a probe has been cancelled, the probe's
 * process is stopped (attack 18an a2-4: cancelled calls left 16-20 s probes running, 48 for one key).
 */
export function resolveInterpreter(python = DEFAULT_PYTHON, signal?: AbortSignal): Promise<Interpreter> {
  signal?.throwIfAborted();
  const key = probeKey(python);
  let probe = cache.get(key);
  if (!probe) {
    const stop = new AbortController();
    const started: Probe = { found: probeInterpreter(python, stop.signal), stop, waiting: 0, settled: false };
    started.found.then(
      () => (started.settled = true),
      () => {
        started.settled = true;
        if (cache.get(key) === started) cache.delete(key);
      },
    );
    cache.set(key, started);
    probe = started;
  }
  if (!signal) return probe.found;
  const waited = probe;
  waited.waiting++;
  return new Promise<Interpreter>((resolve, reject) => {
    const onAbort = () => {
      waited.waiting--;
      if (waited.waiting === 0 && !waited.settled) {
        waited.stop.abort();
        if (cache.get(key) === waited) cache.delete(key);
      }
      reject(new DebugkitError('SESSION_CLOSED', 'the call was cancelled while the Python interpreter was being checked'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    waited.found.then(
      (found) => {
        signal.removeEventListener('abort', onAbort);
        waited.waiting--;
        resolve(found);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        waited.waiting--;
        reject(err);
      },
    );
  });
}

async function probeInterpreter(python: string, stop: AbortSignal): Promise<Interpreter> {
  if (python.startsWith('-')) throw new DebugkitError('INVALID_ARGUMENT', `pythonPath must be an interpreter path, not an option: ${python}`);
  const run = (command: string, args: string[], env: Record<string, string>) => runProbe(command, args, env, stop);
  const direct = await run(python, ['-c', PROBE], {});
  if (direct.ok) return { python, pythonPath: searchPath(BOOT_DIR), debugpyVersion: direct.lines[0]!, pythonVersion: direct.lines[1] ?? '' };
  if (direct.missing) {
    throw new DebugkitError('ENGINE_MISSING', `Python interpreter not found: ${python} (give an absolute path to python3, or install python3)`);
  }
  const shim = await systemDebugpyShim();
  if (shim) {
    const pythonPath = searchPath(BOOT_DIR, shim);
    const viaShim = await run(python, ['-c', PROBE], { PYTHONPATH: pythonPath });
    if (viaShim.ok) return { python, pythonPath, debugpyVersion: viaShim.lines[0]!, pythonVersion: viaShim.lines[1] ?? '' };
  }
  throw new DebugkitError('ENGINE_MISSING', `debugpy is not importable by ${python}: ${INSTALL_HINT}`);
}

function searchPath(...dirs: string[]): string {
  return [...dirs, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter);
}

let shimDir: Promise<string | undefined> | undefined;

/** A directory with links to the system's debugpy and bytecode packages, made once per process. */
function systemDebugpyShim(): Promise<string | undefined> {
  shimDir ??= (async () => {
    const where = await runProbe(SYSTEM_PYTHON, ['-c', 'import debugpy, os; print(os.path.dirname(os.path.dirname(debugpy.__file__)))'], {});
    if (!where.ok) return undefined;
    const site = where.lines[0]!;
    const dir = path.join(tmpdir(), `debugkit-${process.getuid?.() ?? 'user'}`, 'python-shim');
    for (const pkg of ['debugpy', 'bytecode']) linkAtomically(path.join(site, pkg), path.join(dir, pkg));
    return dir;
  })();
  return shimDir;
}

/** Creates or replaces a symlink without a moment where it is missing (other servers may read it). */
function linkAtomically(target: string, link: string): void {
  mkdirSync(path.dirname(link), { recursive: true, mode: 0o700 });
  try {
    if (readlinkSync(link) === target) return;
  } catch {
    /* not there yet */
  }
  const temp = `${link}.${process.pid}.tmp`;
  rmSync(temp, { force: true });
  symlinkSync(target, temp);
  renameSync(temp, link);
}

interface RunResult {
  ok: boolean;
  missing: boolean;
  lines: string[];
}

/** Runs a probe through the one bounded runner (so it gets debugkit's child environment and bounds); `stop` ends it. */
async function runProbe(command: string, args: string[], env: Record<string, string>, stop?: AbortSignal): Promise<RunResult> {
  stop?.throwIfAborted();
  try {
    const r = await runBounded({ command, args, env: { ...process.env, ...env }, timeoutMs: 10_000, ...(stop ? { signal: stop } : {}) });
    return { ok: r.code === 0 && !r.timedOut, missing: false, lines: r.stdout.trim().split('\n') };
  } catch (err) {
    // The interpreter could not be started (missing, not executable).
    if (err instanceof DebugkitError && err.code === 'ENGINE_MISSING') return { ok: false, missing: true, lines: [] };
    throw err;
  }
}
