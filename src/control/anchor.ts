import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { open, readFile, rename, stat, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AuditKey, type Checkpoint } from './audit.js';

/**
 * What anchors the audit chain outside the database: the audit key (entries are hashed with
 * HMAC-SHA256 under it) and the checkpoint file (the newest entry this server appended, and its
 * hash). Whoever can write the database but not these files can neither re-hash entries they
 * changed nor remove entries from the end unseen.
 */
export interface AuditAnchor {
  /** Absent when the store is only read and the chain is not keyed, or the key could not be used (`keyProblem`). */
  key?: AuditKey;
  keyFile: string;
  checkpoint?: CheckpointFile;
  /** Why the key cannot be used to verify (missing, or not the chain's): verify refuses with it. */
  keyProblem?: string;
}

function errCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException)?.code;
}

/** The audit key in `file`, or undefined when there is no such file. */
export function readAuditKey(file: string): AuditKey | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (errCode(err) === 'ENOENT') return undefined;
    throw new Error(`cannot read the audit key ${file}: ${(err as Error).message}`, { cause: err });
  }
  return AuditKey.fromText(text, `the audit key file ${file}`);
}

/**
 * The audit key in `file`, made on first use (with `keyedFrom`, the first entry it signs, written in
 * its file: see AuditKey): 32 random bytes written to a private temporary file
 * (mode 0600), flushed, then linked into place, so the key file is never seen half-written and two
 * processes starting together end up with the one key that was linked first.
 */
export function loadOrCreateAuditKey(file: string, { keyedFrom }: { keyedFrom?: number } = {}): { key: AuditKey; created: boolean } {
  const existing = readAuditKey(file);
  if (existing) return { key: existing, created: false };
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, AuditKey.generate(keyedFrom).text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  let created = true;
  try {
    linkSync(tmp, file);
  } catch (err) {
    if (errCode(err) !== 'EEXIST') throw new Error(`cannot create the audit key ${file}: ${(err as Error).message}`, { cause: err });
    created = false; // another process made it first: use theirs
  } finally {
    unlinkSync(tmp);
  }
  try {
    const dirFd = openSync(dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  } catch {
    /* a directory that cannot be flushed: the key file is still complete */
  }
  return { key: readAuditKey(file)!, created };
}

function parseCheckpointFile(text: string, file: string): Checkpoint {
  let value: { seq?: unknown; hash?: unknown };
  try {
    value = JSON.parse(text) as typeof value;
  } catch {
    throw new Error(`the audit checkpoint file ${file} is not valid JSON (it was changed: debugkit writes it whole, atomically)`);
  }
  if (!Number.isSafeInteger(value?.seq) || (value.seq as number) < 1 || typeof value.hash !== 'string' || !/^[0-9a-f]{64}$/.test(value.hash)) {
    throw new Error(`the audit checkpoint file ${file} does not hold {"seq": N, "hash": "..."} (it was changed: debugkit writes it whole, atomically)`);
  }
  return { seq: value.seq as number, hash: value.hash, source: file };
}

/** The checkpoint in `file`, or undefined when there is none; throws when the file is not one. */
export function readCheckpointFile(file: string): Checkpoint | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (errCode(err) === 'ENOENT') return undefined;
    throw new Error(`cannot read the audit checkpoint ${file}: ${(err as Error).message}`, { cause: err });
  }
  return parseCheckpointFile(text, file);
}

/**
 * The checkpoint file beside a store: the newest entry appended (by this process or another one
 * sharing the file) and its hash, rewritten atomically (a temporary file renamed over it) after
 * appends, at most one write at a time (later appends are folded into the next write), under a lock
 * file that every process sharing the checkpoint takes for its read-compare-rename. It only
 * moves forward: before each append the store checks that the entry it names is still there with
 * that hash; if not, the chain was cut or rewritten behind the server's back, and the file is
 * left as it is, the evidence `audit verify` reports.
 */
export class CheckpointFile {
  private known: { seq: number; hash: string } | undefined;
  /** Why the file is no longer moved (the entry it names changed or went away, or the file is not valid). */
  problem: string | undefined;
  /** The last write that failed (disk full, permissions), if the next one has not succeeded since. */
  writeError: string | undefined;
  private writing: Promise<void> | undefined;
  private again = false;
  private n = 0;

  constructor(readonly file: string) {
    try {
      this.known = readCheckpointFile(file);
    } catch (err) {
      this.problem = (err as Error).message;
    }
  }

  /** The entry the store must still hold, with this hash, before it appends. */
  expected(): { seq: number; hash: string } | undefined {
    return this.problem ? undefined : this.known;
  }

  /**
   * Inside the append's transaction: the hash the store holds for the expected entry (undefined:
   * no such entry) and the seq of its newest entry. The chain only grows, so a head before the
   * checkpoint means entries were removed, whatever hash the store reports for the entry (a
   * PostgreSQL writer can redefine what the query answers; attack 18o: the tail deleted, the old
   * hash answered, and the node appended its own entries in their place and moved the checkpoint
   * onto them, so that `audit verify` said OK).
   */
  check(expected: { seq: number; hash: string }, stored: string | undefined, headSeq: number): void {
    if (this.problem || (stored === expected.hash && headSeq >= expected.seq)) return;
    this.problem =
      stored === undefined
        ? `entry ${expected.seq}, the checkpoint in ${this.file}, is no longer in the store (entries were removed)`
        : stored !== expected.hash
          ? `entry ${expected.seq} no longer has the hash the checkpoint in ${this.file} holds (the chain was rewritten)`
          : `the store's newest entry is ${headSeq}, before entry ${expected.seq}, the checkpoint in ${this.file} (entries were removed)`;
  }

  /** After an append committed. */
  appended(seq: number, hash: string): void {
    // Another process sharing the file may have moved it past this entry meanwhile: it stays there.
    if (this.problem || (this.known && seq <= this.known.seq)) return;
    this.known = { seq, hash };
    if (this.writing) {
      this.again = true;
      return;
    }
    this.writing = this.writeLoop().finally(() => (this.writing = undefined));
  }

  private async writeLoop(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.writeOnce();
        this.writeError = undefined;
      } catch (err) {
        this.writeError = `the audit checkpoint ${this.file} cannot be written: ${(err as Error).message}`;
      }
    } while (this.again && !this.problem);
  }

  private async writeOnce(): Promise<void> {
    if (!this.known || this.problem) return;
    // Read, compare and rename under one lock shared by every process using the file: without it two
    // nodes on one data dir could each read the old checkpoint and rename theirs in, the older last,
    // leaving the file behind the chain's head (attack 18aj q1-2: 11 runs in 200).
    await withFileLock(`${this.file}.lock`, () => this.writeLocked());
  }

  private async writeLocked(): Promise<void> {
    const want = this.known;
    if (!want || this.problem) return;
    // Another process sharing the file may be ahead: then its checkpoint stays (and is the one checked next).
    let onDisk: Checkpoint | undefined;
    try {
      onDisk = parseCheckpointFile(await readFile(this.file, 'utf8'), this.file);
    } catch (err) {
      if (errCode(err) !== 'ENOENT') {
        this.problem = (err as Error).message;
        return;
      }
    }
    if (onDisk && onDisk.seq >= want.seq) {
      if (onDisk.seq > want.seq && (!this.known || this.known.seq < onDisk.seq)) this.known = { seq: onDisk.seq, hash: onDisk.hash };
      return;
    }
    const tmp = `${this.file}.tmp-${process.pid}-${++this.n}`;
    try {
      await writeFile(tmp, `${JSON.stringify({ seq: want.seq, hash: want.hash, written_at: new Date().toISOString() })}\n`, { mode: 0o600 });
      await rename(tmp, this.file);
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
  }

  /** Waits for the write in progress (and the ones folded into it). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }
}

/** How long a lock may be held before another process takes it as left behind by a holder that died. */
const LOCK_STALE_MS = 10_000;
/** How long to try for the lock before the write fails (and is tried again after the next append). */
const LOCK_GIVE_UP_MS = 30_000;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errCode(err) === 'EPERM';
  }
}

/**
 * Runs `fn` holding the lock file `lock` (created exclusively, naming this host and process), which
 * every process sharing the guarded file takes for the same short work. A lock whose holder on this
 * host is gone, or that is older than LOCK_STALE_MS, is taken over.
 */
export async function withFileLock<T>(lock: string, fn: () => Promise<T>): Promise<T> {
  const me = `${os.hostname()} ${process.pid}`;
  const started = Date.now();
  for (let delay = 1; ; delay = Math.min(delay * 2, 50)) {
    let fd: FileHandle | undefined;
    try {
      fd = await open(lock, 'wx', 0o600);
    } catch (err) {
      if (errCode(err) !== 'EEXIST') throw err;
    }
    if (fd) {
      try {
        await fd.writeFile(me);
      } finally {
        await fd.close();
      }
      try {
        return await fn();
      } finally {
        await unlink(lock).catch(() => undefined);
      }
    }
    const holder = await lockHolder(lock);
    if (holder && (Date.now() - holder.since > LOCK_STALE_MS || (holder.host === os.hostname() && holder.pid !== undefined && !processAlive(holder.pid)))) {
      await unlink(lock).catch(() => undefined);
      continue;
    }
    if (Date.now() - started > LOCK_GIVE_UP_MS) throw new Error(`the lock ${lock} stayed held for ${LOCK_GIVE_UP_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, delay + Math.random() * delay));
  }
}

async function lockHolder(lock: string): Promise<{ host: string; pid: number | undefined; since: number } | undefined> {
  try {
    const [text, info] = await Promise.all([readFile(lock, 'utf8'), stat(lock)]);
    const [host = '', pid] = text.split(' ');
    // A lock being written (empty yet) is not judged on its holder, only on its age.
    return { host: text ? host : '', pid: pid && /^\d+$/.test(pid) ? Number(pid) : undefined, since: info.mtimeMs };
  } catch (err) {
    if (errCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}
