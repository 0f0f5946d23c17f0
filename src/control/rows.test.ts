import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from './sqlite.js';

// Session routing rows belong to the key that claimed them (the PostgreSQL store's twin of this is
// in test/owners-cluster.test.ts).
let dir: string;
let store: SqliteStore;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-rows-'));
  store = new SqliteStore(path.join(dir, 'control.db'));
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('SqliteStore session rows', () => {
  it("a claim never takes over another key's row, nor does a release with another key drop it", async () => {
    await store.claimSession('debug:x', { node: 'n1', url: 'http://n1/mcp', key_id: 'key_first' });
    await store.claimSession('debug:x', { node: 'n2', url: 'http://n2/mcp', key_id: 'key_second' });
    expect(await store.locateSession('debug:x')).toEqual({ node: 'n1', url: 'http://n1/mcp', key_id: 'key_first' });
    await store.releaseSession('debug:x', 'key_second');
    expect(await store.locateSession('debug:x')).toMatchObject({ key_id: 'key_first' });
    await store.claimSession('debug:x', { node: 'n2', url: 'http://n2/mcp', key_id: 'key_first' });
    expect(await store.locateSession('debug:x')).toEqual({ node: 'n2', url: 'http://n2/mcp', key_id: 'key_first' });
    await store.releaseSession('debug:x', 'key_first');
    expect(await store.locateSession('debug:x')).toBeUndefined();
    await store.claimSession('mcp-session', { node: 'n1', url: 'http://n1/mcp', key_id: 'key_first' });
    await store.releaseSession('mcp-session');
    expect(await store.locateSession('mcp-session')).toBeUndefined();
  });
});
