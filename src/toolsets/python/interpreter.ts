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

const cache = new Map<string, Promise<Interpreter>>();

/**
 * Finds how to run debugpy with the interpreter the user chose. Debian's debugpy is importable
 * only by /usr/bin/python3; another interpreter (pyenv's, a venv's) gets a private directory on
 * PYTHONPATH holding links to it and to the `bytecode` package Debian unvendored from it.
 * Without this, a launch with such an interpreter hangs ~15 s and then fails vaguely.
 */
export function resolveInterpreter(python = DEFAULT_PYTHON): Promise<Interpreter> {
  let found = cache.get(python);
  if (!found) {
    found = probeInterpreter(python);
    cache.set(python, found);
    found.catch(() => cache.delete(python));
  }
  return found;
}

async function probeInterpreter(python: string): Promise<Interpreter> {
  if (python.startsWith('-')) throw new DebugkitError('INVALID_ARGUMENT', `pythonPath must be an interpreter path, not an option: ${python}`);
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
    const where = await run(SYSTEM_PYTHON, ['-c', 'import debugpy, os; print(os.path.dirname(os.path.dirname(debugpy.__file__)))'], {});
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

/** Runs a probe through the one bounded runner (so it gets debugkit's child environment and bounds). */
async function run(command: string, args: string[], env: Record<string, string>): Promise<RunResult> {
  try {
    const r = await runBounded({ command, args, env: { ...process.env, ...env }, timeoutMs: 10_000 });
    return { ok: r.code === 0 && !r.timedOut, missing: false, lines: r.stdout.trim().split('\n') };
  } catch (err) {
    // The interpreter could not be started (missing, not executable).
    if (err instanceof DebugkitError && err.code === 'ENGINE_MISSING') return { ok: false, missing: true, lines: [] };
    throw err;
  }
}
