import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildHttpMock } from '../http/keploy.js';
import { numberMocks } from './serialize.js';
import { MockStore } from './store.js';

function mocks(n: number) {
  return numberMocks(
    Array.from({ length: n }, (_, i) =>
      buildHttpMock({
        method: 'POST',
        url: `/items/${i}`,
        host: 'api.test',
        requestHeaders: [['Content-Type', 'application/octet-stream']],
        requestBody: i % 2 ? Buffer.from([0xff, 0x00, i & 0xff]) : `{"n":${i}}`,
        statusCode: 200,
        responseHeaders: [['Content-Type', 'application/json']],
        responseBody: JSON.stringify({ id: i, text: 'x'.repeat(100) }),
        requestTime: new Date(1_700_000_000_000 + i),
        responseTime: new Date(1_700_000_000_500 + i),
      }),
    ),
  );
}

describe('the cache of parsed mock sets', () => {
  it('gives replay the same mocks as parsing, from the cache once written, and follows edits', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'debugkit-cache-set-'));
    const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'debugkit-cache-'));
    const store = new MockStore(dir, { cacheDir });
    const file = await store.write('big', mocks(400));
    expect(readdirSync(cacheDir).filter((n) => n.endsWith('.json'))).toHaveLength(1); // written with the set
    const parsed = await store.read('big');
    const cached = await store.read('big', { cached: true });
    expect(cached).toEqual(parsed);
    expect(cached[1]!.spec).toMatchObject({ req: { body: new Uint8Array([0xff, 0x00, 1]) } });
    // An edit is new content: parsed again, not served stale.
    writeFileSync(file, readFileSync(file, 'utf8').replace('/items/0', '/items/zero'));
    const edited = await store.read('big', { cached: true });
    expect(edited[0]!.spec).toMatchObject({ req: { url: '/items/zero' } });
    expect(readdirSync(cacheDir).filter((n) => n.endsWith('.json'))).toHaveLength(2);
    // A corrupt cache entry is ignored.
    for (const n of readdirSync(cacheDir)) writeFileSync(path.join(cacheDir, n), '{not json');
    expect(await store.read('big', { cached: true })).toEqual(edited);
  });
});
