import { readFileSync } from 'node:fs';

/**
 * File descriptors are one pool for the whole process: the MCP listener (--max-connections takes
 * half of them by default), sessions' processes, pipes and files, and the mocks toolset's capture
 * proxies. When the process reaches its limit, libuv accepts and at once closes every new
 * connection, so every client of the server is reset, not only the one that took the descriptors.
 * A part that can take many (a program opening connections through a capture proxy) holds a
 * `DescriptorBudget` and refuses past it.
 */

/** The soft limit on this process's open files (RLIMIT_NOFILE), from /proc; undefined where it cannot be read. */
export function openFilesLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    return line === undefined || line === 'unlimited' ? undefined : Number(line);
  } catch {
    return undefined;
  }
}

/** A count of things held at once, at most `max`: `take` says whether one more may be held. */
export class DescriptorBudget {
  private count = 0;
  constructor(readonly max: number) {}

  /** Holds one more when under `max` (true); false, holding nothing, when at it. */
  take(): boolean {
    if (this.count >= this.max) return false;
    this.count++;
    return true;
  }

  /** Gives back one taken. */
  give(): void {
    if (this.count > 0) this.count--;
  }

  get held(): number {
    return this.count;
  }
}

/**
 * A positive integer from the environment variable `name`, or undefined when it is unset or empty.
 * Anything else is an error naming the variable and what is valid.
 */
export function countFromEnv(name: string, env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) {
    throw new Error(`${name} is '${raw}': it must be a whole number of connections, 1 or more (unset: the default)`);
  }
  return Number(raw);
}
