import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';

/**
 * Writes a file so readers see the old content or the new, never a part: a temp file beside it
 * (same filesystem), then rename. The temp file is removed if anything fails.
 */
export async function writeFileAtomic(file: string, data: string | Uint8Array, { mode = 0o600 }: { mode?: number } = {}): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await writeFile(tmp, data, { mode, flag: 'wx' });
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
}
