import { rm } from 'node:fs/promises';
import { ShellSyntaxError, readCommandWords } from '../../core/argv.js';
import { DebugkitError } from '../../core/errors.js';
import { privateTempDir } from '../../core/paths.js';
import { runBounded } from '../../core/run.js';
import type { ProxyCredential } from './proxy/auth.js';
import { proxiedCommand, writeProxychainsConfig } from './proxy/proxychains.js';

export interface RunRequest {
  /** The command line as the user gave it: split like a shell would, run without one. */
  command: string;
  cwd: string;
  socksPort: number;
  httpPort: number;
  /** The capture proxy's credential: in the proxychains config and the proxy URLs the program is given. */
  credential?: ProxyCredential;
  /** Extra environment (CA bundles for TLS interception), after the user's. */
  env: Record<string, string>;
  /** The user's variables (the tool's `env`); a `NAME=value` prefix of the command goes after them, as in a shell. */
  userEnv?: Record<string, string>;
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
  /** The tool's `env` argument. */
  env?: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Runs `req`'s command through the capture proxy `proxy` (runUnderProxy), `onTick` once a second. */
export function runThroughProxy(
  req: ProxiedCommand,
  proxy: { socksPort: number; httpPort: number; credential?: ProxyCredential | undefined },
  onTick: (elapsedMs: number) => void,
): Promise<RunResult> {
  return runUnderProxy({
    command: req.command,
    cwd: req.cwd,
    socksPort: proxy.socksPort,
    httpPort: proxy.httpPort,
    ...(proxy.credential ? { credential: proxy.credential } : {}),
    env: req.caEnv,
    ...(req.env ? { userEnv: req.env } : {}),
    timeoutMs: req.timeoutMs,
    ...(req.signal ? { signal: req.signal } : {}),
    onTick,
  });
}

/** A command split as a shell splits it: its leading `NAME=value` words (the program's environment) and the program's argv. */
export interface ParsedCommand {
  argv: string[];
  env: Record<string, string>;
}

const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=/;

/**
 * Parses the command; refuses what would need a shell. `NAME=value cmd` sets NAME for cmd, as a
 * shell does (before, the assignment was taken for the program and proxychains said only "can't
 * load process").
 */
export function parseCommand(command: string): ParsedCommand {
  const read = readCommandWords(command);
  const words = read.map((w) => w.value);
  const env: Record<string, string> = {};
  let first = 0;
  for (; first < words.length; first++) {
    const m = ASSIGNMENT.exec(words[first]!);
    if (!m) break;
    // A shell takes NAME=value for an assignment only with NAME and `=` unquoted: `'PGPASSWORD=x'` and `PGPASSWORD'='x` are a
    // program's name to it, and set the variable here while the audit read them as a shell does (attack v2-4).
    if (!read[first]!.text.startsWith(m[0])) {
      throw new ShellSyntaxError(
        `Command contains the assignment ${JSON.stringify(read[first]!.text)} with quotes or a backslash before its "=" (a shell runs that as a program's name): write NAME=value with NAME and "=" unquoted, quoting only the value`,
      );
    }
    env[m[1]!] = words[first]!.slice(m[0].length);
  }
  const argv = words.slice(first);
  if (argv.length === 0) throw new DebugkitError('INVALID_ARGUMENT', first > 0 ? `the command sets ${Object.keys(env).join(', ')} but names no program to run` : 'Command is required');
  return { argv, env };
}

/**
 * Runs the program under proxychains4 with the proxy variables set, so its outgoing TCP goes
 * through the capture proxy. Bounded by `timeoutMs`; the whole process group ends with it.
 */
export async function runUnderProxy(req: RunRequest): Promise<RunResult> {
  const { argv, env: assigned } = parseCommand(req.command);
  const dir = privateTempDir('debugkit-proxychains-');
  const started = Date.now();
  try {
    const credential = req.credential ? { credential: req.credential } : {};
    const configPath = writeProxychainsConfig(dir, req.socksPort, { httpPort: req.httpPort, ...credential });
    const proxied = proxiedCommand(argv, { socksPort: req.socksPort, httpPort: req.httpPort, configPath, env: { ...process.env, ...req.userEnv, ...assigned, ...req.env }, ...credential });
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
