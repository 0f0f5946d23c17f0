import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { debugkitCacheDir } from '../../../core/dirs.js';
import path from 'node:path';
import type { Mock } from './types.js';

/**
 * Parsed mock sets kept as JSON, keyed by the SHA-256 of the YAML text, so a set replayed again
 * (or replayed after debugkit recorded it) is not parsed as YAML again: parsing YAML costs about
 * half a second per MB, reading this JSON a few ms. The key is the content, so an edited file is
 * simply a new entry; entries are private to the user (`~/.cache/debugkit/mock-sets`, 0700) and
 * the newest MAX_ENTRIES are kept. Only sets over MIN_BYTES are cached. Parsed style marks (flow
 * or block collections) are not kept: use it for replay, not for rewriting a file.
 */

const MIN_BYTES = 64 * 1024;
const MAX_ENTRIES = 32;
const FORMAT = 1;

export function cacheDir(): string {
  return debugkitCacheDir('mock-sets');
}

export function contentKey(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

// Tagged JSON: bytes and big integers, which JSON has no type for.
const BYTES = '\u0000bytes';
const BIG = '\u0000bigint';

function replacer(this: unknown, _key: string, value: unknown): unknown {
  if (value instanceof Uint8Array) return { [BYTES]: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  if (typeof value === 'bigint') return { [BIG]: value.toString() };
  return value;
}

function reviver(_key: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const v = value as Record<string, unknown>;
    if (typeof v[BYTES] === 'string') return new Uint8Array(Buffer.from(v[BYTES] as string, 'base64'));
    if (typeof v[BIG] === 'string') return BigInt(v[BIG] as string);
  }
  return value;
}

/** The cached mocks for this exact text, or undefined. */
export async function cachedMocks(text: string, dir = cacheDir()): Promise<Mock[] | undefined> {
  if (text.length < MIN_BYTES) return undefined;
  try {
    const data = JSON.parse(await readFile(path.join(dir, `${contentKey(text)}.json`), 'utf8'), reviver) as { format: number; mocks: Mock[] };
    return data.format === FORMAT && Array.isArray(data.mocks) ? data.mocks : undefined;
  } catch {
    return undefined;
  }
}

/** Keeps the parsed mocks of `text` (best effort: a cache that cannot be written is no error). */
export async function cacheMocks(text: string, mocks: readonly Mock[], dir = cacheDir()): Promise<void> {
  if (text.length < MIN_BYTES) return;
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, `${contentKey(text)}.json`);
    const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(temp, JSON.stringify({ format: FORMAT, mocks }, replacer), { mode: 0o600 });
    await rename(temp, file);
    await prune(dir);
  } catch {
    // no cache then
  }
}

async function prune(dir: string): Promise<void> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.json'));
  if (names.length <= MAX_ENTRIES) return;
  const withTimes = await Promise.all(names.map(async (n) => ({ n, t: (await stat(path.join(dir, n)).catch(() => undefined))?.mtimeMs ?? 0 })));
  withTimes.sort((a, b) => b.t - a.t);
  await Promise.all(withTimes.slice(MAX_ENTRIES).map(({ n }) => unlink(path.join(dir, n)).catch(() => {})));
}
