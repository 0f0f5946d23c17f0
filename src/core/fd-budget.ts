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

/** Which bound refused a `take`: the key's share, the reserve kept for keys holding little, or the whole budget. */
export type ShareRefusal = 'key' | 'reserve' | 'whole';

/**
 * One budget shared by keys, each key holding at most `perKey` of it across everything it runs:
 * first come, first served over the whole let one key's three calls hold every slot the capture
 * proxies had, and another key's replays were then refused (attack 18u P1). No key (the one
 * local user, who has nobody to share with) may take the whole.
 */
export class BudgetShares {
  /** Only keys holding something: an entry goes when its count returns to 0. */
  private readonly keys = new Map<string, DescriptorBudget>();
  readonly perKey: number;
  /**
   * What is kept for keys holding at most `small`: two keys at their shares held the whole, and a
   * third key's replays were refused (attack 18v Q2). A key holding more than `small` takes no more
   * once only the reserve is free; keys holding little still find it.
   */
  readonly reserve: number;
  readonly small: number;

  constructor(
    readonly whole: DescriptorBudget,
    fraction = 1 / 2,
  ) {
    if (!(fraction > 0 && fraction <= 1)) throw new RangeError(`a key's share is a fraction above 0 and at most 1, not ${fraction}`);
    this.perKey = Math.max(1, Math.floor(whole.max * fraction));
    this.reserve = Math.floor(whole.max / 4);
    this.small = Math.floor(whole.max / 8);
  }

  /** Holds one more for `key` (undefined: no share applies); or says which bound is full, holding nothing. */
  take(key: string | undefined): ShareRefusal | undefined {
    const share = key === undefined ? undefined : (this.keys.get(key) ?? new DescriptorBudget(this.perKey));
    if (share && !share.take()) return 'key';
    const refused = this.whole.held >= this.whole.max ? 'whole' : share && share.held > this.small && this.whole.max - this.whole.held <= this.reserve ? 'reserve' : undefined;
    if (refused || !this.whole.take()) {
      share?.give();
      return refused ?? 'whole';
    }
    if (share && key !== undefined) this.keys.set(key, share);
    return undefined;
  }

  /** Gives back one that `take(key)` held. */
  give(key: string | undefined): void {
    this.whole.give();
    if (key === undefined) return;
    const share = this.keys.get(key);
    share?.give();
    if (share?.held === 0) this.keys.delete(key);
  }

  /** What `key` holds now. */
  held(key: string): number {
    return this.keys.get(key)?.held ?? 0;
  }
}
