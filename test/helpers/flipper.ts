import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { compileC, tempDir } from './programs.js';

let built: string | undefined;

/** test/programs/flipper.c, compiled once per test file. */
function flipperBinary(): string {
  if (!built || !existsSync(built)) built = compileC(tempDir('debugkit-flipper-'), 'flipper');
  return built;
}

export interface Flipper {
  /** Stops the writer and waits until it is gone; `a` and `b` are then in either order. */
  stop(): Promise<void>;
}

/**
 * A writer process swapping `a` and `b` (a file or directory and a link) with renameat2
 * RENAME_EXCHANGE as fast as it can (`holdUs`: holding each state a random 0..holdUs µs):
 * resolves once it has swapped them once and races on.
 */
export async function startFlipper(a: string, b: string, holdUs = 0): Promise<Flipper> {
  const child: ChildProcess = spawn(flipperBinary(), [a, b, String(holdUs)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('flipping\n')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`flipper ${path.basename(a)} exited (${code}): ${stderr}`)));
  });
  return {
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

export type Outcome = 'inside' | 'refused' | 'leak';

/**
 * Runs `attempt` `tries` times while `a` and `b` are swapped by a writer, and counts the outcomes:
 * what was inside the root, a refusal (the link side was seen), or a leak. Half the tries race a
 * writer swapping as fast as it can. The other half race one that holds each state a random
 * 0..`holdUs` µs (asleep; default 100), each try starting as soon as the writer has swapped again:
 * so about half the checks see the file and pass, and what the tool does after its check (an open,
 * gdb loading the program) still races the next swap, whatever else the machine is doing.
 * `concurrency` tries run at once (for tools that wait on a child process, such as rg).
 */
export async function race(
  a: string,
  b: string,
  tries: number,
  attempt: (i: number) => Promise<Outcome> | Outcome,
  { holdUs = 100, concurrency = 1 }: { holdUs?: number; concurrency?: number } = {},
): Promise<Record<Outcome, number>> {
  const counts: Record<Outcome, number> = { inside: 0, refused: 0, leak: 0 };
  let next = 0;
  for (const hold of [0, holdUs]) {
    const end = hold === 0 ? Math.floor(tries / 2) : tries;
    const flipper = await startFlipper(a, b, hold);
    try {
      const lane = async () => {
        let state = isLink(a);
        while (next < end) {
          const i = next++;
          if (hold > 0) state = await swapped(a, state);
          counts[await attempt(i)]++;
        }
      };
      await Promise.all(Array.from({ length: concurrency }, lane));
    } finally {
      await flipper.stop();
    }
  }
  return counts;
}

function isLink(p: string): boolean {
  return lstatSync(p, { throwIfNoEntry: false })?.isSymbolicLink() ?? false;
}

/** Waits until `p` is no longer what it was (`wasLink`): the writer's next swap. */
async function swapped(p: string, wasLink: boolean): Promise<boolean> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const now = isLink(p);
    if (now !== wasLink) return now;
    if (Date.now() > deadline) throw new Error(`the writer stopped swapping ${p}`);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
