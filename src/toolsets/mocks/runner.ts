import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { splitShellWords } from '../../core/argv.js';
import { DebugkitError } from '../../core/errors.js';
import { runBounded } from '../../core/run.js';
import { proxiedCommand, writeProxychainsConfig } from './proxy/proxychains.js';

export interface RunRequest {
  /** The command line as the user gave it: split like a shell would, run without one. */
  command: string;
  cwd: string;
  socksPort: number;
  httpPort: number;
  /** Extra environment (CA bundles for TLS interception). */
  env: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  onTick?: (elapsedMs: number) => void;
}

export interface RunResult {
  exitCode: number;
  timedOut: boolean;
  /** The last few KiB of the program's output, for messages. */
  stdoutTail: string;
  stderrTail: string;
  durationMs: number;
}

const TAIL = 4096;

/** What recording and replay pass on of their request: the command, where it runs, the CA's environment, its bounds. */
export interface ProxiedCommand {
  command: string;
  cwd: string;
  caEnv: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Runs `req`'s command through the capture proxy `proxy` (runUnderProxy), `onTick` once a second. */
export function runThroughProxy(req: ProxiedCommand, proxy: { socksPort: number; httpPort: number }, onTick: (elapsedMs: number) => void): Promise<RunResult> {
  return runUnderProxy({
    command: req.command,
    cwd: req.cwd,
    socksPort: proxy.socksPort,
    httpPort: proxy.httpPort,
    env: req.caEnv,
    timeoutMs: req.timeoutMs,
    ...(req.signal ? { signal: req.signal } : {}),
    onTick,
  });
}

/** Parses the command; refuses what would need a shell. */
export function commandArgv(command: string): string[] {
  const argv = splitShellWords(command.trim());
  if (argv.length === 0) throw new DebugkitError('INVALID_ARGUMENT', 'Command is required');
  return argv;
}

/**
 * Runs the program under proxychains4 with the proxy variables set, so its outgoing TCP goes
 * through the capture proxy. Bounded by `timeoutMs`; the whole process group ends with it.
 */
export async function runUnderProxy(req: RunRequest): Promise<RunResult> {
  const argv = commandArgv(req.command);
  const dir = await mkdtemp(path.join(tmpdir(), 'debugkit-proxychains-'));
  const started = Date.now();
  try {
    const configPath = writeProxychainsConfig(dir, req.socksPort, { httpPort: req.httpPort });
    const proxied = proxiedCommand(argv, { socksPort: req.socksPort, httpPort: req.httpPort, configPath, env: { ...process.env, ...req.env } });
    const tick = setInterval(() => req.onTick?.(Date.now() - started), 1000);
    const exit = await runBounded({
      command: proxied.command,
      args: proxied.args,
      cwd: req.cwd,
      env: proxied.env,
      timeoutMs: req.timeoutMs,
      signal: req.signal,
      maxOutputChars: TAIL,
      keep: 'tail',
      graceMs: 1000,
    }).finally(() => clearInterval(tick));
    const timedOut = exit.timedOut;
    // 128 + signal number, as a shell reports a killed program.
    const exitCode = exit.code ?? 128 + (exit.signal === 'SIGKILL' ? 9 : exit.signal === 'SIGTERM' ? 15 : 1);
    return { exitCode, timedOut, stdoutTail: exit.stdout, stderrTail: exit.stderr, durationMs: Date.now() - started };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The end of a failed program's output for a tool result: stderr, else stdout, at most `max` characters. */
export function appOutput(run: RunResult, max = 2000): string {
  const text = (run.stderrTail.trim() ? run.stderrTail : run.stdoutTail).trimEnd();
  return text.length > max ? `...${text.slice(-max)}` : text;
}
