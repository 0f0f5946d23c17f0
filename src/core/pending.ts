import { TimeoutError } from './errors.js';

interface Entry<T> {
  resolve(value: T): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout | undefined;
  label: string;
}

/**
 * The one place that matches replies to requests: DAP sequence numbers and MI tokens alike.
 * Every entry has a bound; closing the owner rejects whatever is still waiting.
 */
export class PendingTable<K, T> {
  private readonly entries = new Map<K, Entry<T>>();
  private closedWith: Error | undefined;

  get size(): number {
    return this.entries.size;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** Registers `key` and returns the promise its reply settles. `timeoutMs <= 0` means no bound here (the caller bounds it). */
  add(key: K, timeoutMs: number, label: string): Promise<T> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (this.entries.has(key)) return Promise.reject(new Error(`duplicate pending request key ${String(key)}`));
    return new Promise<T>((resolve, reject) => {
      const entry: Entry<T> = { resolve, reject, timer: undefined, label };
      if (timeoutMs > 0) {
        entry.timer = setTimeout(() => {
          this.entries.delete(key);
          reject(new TimeoutError(`${label} got no reply within ${timeoutMs} ms`));
        }, timeoutMs);
        entry.timer.unref();
      }
      this.entries.set(key, entry);
    });
  }

  /** Settles `key` with a value; returns false when nothing waited for it (late or unsolicited reply). */
  resolve(key: K, value: T): boolean {
    const entry = this.take(key);
    entry?.resolve(value);
    return entry !== undefined;
  }

  reject(key: K, err: unknown): boolean {
    const entry = this.take(key);
    entry?.reject(err);
    return entry !== undefined;
  }

  /** Rejects every waiting entry; with `close`, later `add` calls fail at once with the same error. */
  rejectAll(err: Error, close = false): void {
    if (close) this.closedWith = err;
    const all = [...this.entries.values()];
    this.entries.clear();
    for (const entry of all) {
      if (entry.timer) clearTimeout(entry.timer);
      entry.reject(err);
    }
  }

  private take(key: K): Entry<T> | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.timer) clearTimeout(entry.timer);
    return entry;
  }
}
