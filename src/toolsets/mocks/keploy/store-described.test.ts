// Attack 18al v1-1: every keploy_mock_list call parsed a planted set again (24.8 MB of 1.5 M keys:
// 21-60 s of a mock-set thread, to its 768 MB bound, each time; 11 such sets made a listing 98 s
// and the next key's 119 s). A listing now describes each version of a set's file once.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { serializeMockSet } from './serialize.js';
import { httpMock } from './testkit.js';

const described: string[] = [];
vi.mock('./describe.js', async (original) => {
  const real = await original<typeof import('./describe.js')>();
  return {
    ...real,
    describeSet: (file: string, maxBytes: number, owner?: string, shown?: string) => {
      described.push(shown ?? file);
      return real.describeSet(file, maxBytes, owner, shown);
    },
  };
});
const { MockStore } = await import('./store.js');

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'dk-keploy-described-'));
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));

describe('a listing describes each version of a set once (attack 18al v1-1)', () => {
  it('listed again: not read again, by any key; written (even with the same text) or replaced: read again', async () => {
    const dir = path.join(base, 'keploy');
    fs.mkdirSync(path.join(dir, 'broken'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'good'), { recursive: true });
    const broken = path.join(dir, 'broken', 'mocks.yaml');
    const good = path.join(dir, 'good', 'mocks.yaml');
    fs.writeFileSync(broken, 'version: x\nkind: [Http\n');
    fs.writeFileSync(good, serializeMockSet([httpMock({}, 'mock-0')]));
    const list = async (owner: string) => (await new MockStore(dir).list(owner)).map((s) => ({ name: s.name, mocks: s.mocks, error: s.error !== undefined }));
    const first = await list('key-a');
    expect(first).toHaveLength(2);
    expect(first).toEqual(
      expect.arrayContaining([
        { name: 'broken', mocks: 0, error: true },
        { name: 'good', mocks: 1, error: false },
      ]),
    );
    expect(described.length).toBe(2);
    expect(await list('key-a')).toEqual(first);
    expect(await list('key-b')).toEqual(first);
    expect(described.length).toBe(2);
    // Written in place with the same text: a new version (its times changed), described again.
    fs.writeFileSync(broken, fs.readFileSync(broken));
    fs.utimesSync(broken, new Date(), new Date(Date.now() + 5000));
    await list('key-a');
    expect(described.length).toBe(3);
    // Replaced by a rename: described again, and the description is the new file's.
    fs.writeFileSync(`${good}.new`, serializeMockSet([httpMock({}, 'mock-0'), httpMock({}, 'mock-1')]));
    fs.renameSync(`${good}.new`, good);
    expect((await list('key-a')).find((s) => s.name === 'good')?.mocks).toBe(2);
    expect(described.length).toBe(4);
  });
});
