import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MockSetBoundError } from './describe.js';
import { serializeMockSet } from './serialize.js';
import { MockStore } from './store.js';
import { markStyle } from './style.js';
import { httpMock } from './testkit.js';
import type { Mock } from './types.js';

/**
 * MockStore.write serializes and checks a new set on the mock-set worker threads (attack 18k-A F2:
 * on the event loop, a 32 MB set held it 20 s). What it writes is what serializing it here writes,
 * and it never writes a set keploy_mock_test would refuse.
 */

const dir = () => mkdtempSync(path.join(os.tmpdir(), 'debugkit-write-'));
const cacheDir = () => mkdtempSync(path.join(os.tmpdir(), 'debugkit-write-cache-'));

/** A mock with one list marked flow and one block, as the MySQL recorder marks its byte lists. */
function styled(i: number): Mock {
  return {
    version: 'api.keploy.io/v1beta1',
    kind: 'Http2',
    name: `mock-${i}`,
    spec: { req: { n: i, list: markStyle([0, 1, 2], true), other: markStyle({ a: 1 }, true), block: markStyle([3], false) } },
  } as unknown as Mock;
}

describe('MockStore.write on the worker threads', () => {
  it('writes byte for byte what serializing the mocks here gives, the styles marked in code kept', async () => {
    const mocks = [httpMock(), styled(1), httpMock({}, 'mock-2')];
    const file = await new MockStore(dir(), { cacheDir: cacheDir() }).write('same', mocks);
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('list: [0, 1, 2]');
    expect(text).toBe(serializeMockSet(mocks));
  });

  it('append keeps the styles marked in code too: its mocks read as they would have been written', async () => {
    const store = new MockStore(dir(), { cacheDir: cacheDir() });
    const file = await store.write('grown', [httpMock()]);
    await store.append('grown', [styled(1)]);
    const text = readFileSync(file, 'utf8');
    // Before, the clone sent to the worker lost the marks: "list:" was written as a block.
    expect(text).toContain('list: [0, 1, 2]');
    expect(text).toBe(`${serializeMockSet([httpMock()])}---\n${serializeMockSet([styled(1)])}`);
  });

  it('refuses a set past the replay bounds; writeWithin writes the first mocks that fit and says how many', async () => {
    const mocks = Array.from({ length: 20_001 }, (_, i) => ({ ...styled(i), name: `mock-${i}` }));
    const store = new MockStore(dir(), { cacheDir: cacheDir() });
    const refused = await store.write('many', mocks).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(MockSetBoundError);
    expect((refused as Error).message).toContain("Mock set 'many' was not written: 20001 documents, over the 20000 a set is parsed to for replay");
    const { file, written } = await store.writeWithin('fit', mocks);
    expect(written).toBe(20_000);
    expect(readFileSync(file, 'utf8')).toBe(serializeMockSet(mocks.slice(0, 20_000)));
  }, 60_000);
});
