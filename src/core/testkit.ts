import { runBounded } from './run.js';

/**
 * For test kits: runs a command through the one spawner (core/run), bounded, and answers its
 * output, or throws saying what ran, how it ended and what it printed.
 */
export async function runChecked(command: string, args: readonly string[], { cwd, timeoutMs = 60_000 }: { cwd?: string; timeoutMs?: number } = {}): Promise<{ stdout: string; stderr: string }> {
  const r = await runBounded({ command, args, ...(cwd !== undefined ? { cwd } : {}), timeoutMs, maxOutputChars: 16 * 1024 * 1024 });
  if (r.code === 0) return { stdout: r.stdout, stderr: r.stderr };
  const how = r.timedOut ? `did not finish within ${timeoutMs} ms` : r.code === null ? `was ended by ${r.signal}` : `exited with code ${r.code}`;
  throw new Error(`${command} ${args.join(' ')} ${how}\n${r.stdout}\n${r.stderr}`);
}
