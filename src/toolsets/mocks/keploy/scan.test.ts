import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeSetFile, PARSE_MAX_BYTES } from './scan.js';
import { serializeMockSet } from './serialize.js';
import { MAX_MOCKSET_BYTES, MockStore } from './store.js';
import { ES_FILE, httpMock, SQL_FILE } from './testkit.js';
import type { GenericMock } from './types.js';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dk-keploy-scan-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Parse nothing: every set is counted by the scan. */
const SCAN_ONLY = { bytes: 0, documents: 0 };

describe('describeSetFile', () => {
  it('the scan of a set counts what parsing it finds: mocks, kinds and when it was recorded', async () => {
    const generic: GenericMock = {
      version: 'api.keploy.io/v1beta1',
      kind: 'Generic',
      name: 'mock-9',
      spec: { metadata: {}, genericrequests: [], genericresponses: [], reqtimestampmock: '2024-01-02T00:00:00Z', restimestampmock: '2024-01-03T04:05:06.7Z' },
    };
    const written = path.join(dir, 'written.yaml');
    fs.writeFileSync(written, serializeMockSet([httpMock({ created: 1722941810 }), httpMock({ created: 1722941999 }, 'mock-1'), generic]));
    const noCreated = path.join(dir, 'no-created.yaml');
    fs.writeFileSync(noCreated, serializeMockSet([httpMock({ created: undefined, resTimestampMock: '2024-01-02T00:00:00.75Z' }), generic]));
    for (const file of [ES_FILE, SQL_FILE, written, noCreated]) {
      const parsed = await describeSetFile(file, MAX_MOCKSET_BYTES);
      expect(parsed.note).toBeUndefined();
      expect(parsed.error).toBeUndefined();
      const scanned = await describeSetFile(file, MAX_MOCKSET_BYTES, undefined, SCAN_ONLY);
      expect(scanned.note).toMatch(/^counted by a scan of its lines, not parsed \(.*, over the 0( MiB)? a listed set is parsed to\); its mocks were not checked$/);
      expect({ ...scanned, note: undefined }).toEqual({ ...parsed, note: undefined });
    }
  });

  it('a set past the bounds is scanned, not parsed: one huge scalar, many documents; one past MAX_MOCKSET_BYTES is not read', async () => {
    const huge = path.join(dir, 'huge.yaml');
    fs.writeFileSync(huge, `version: api.keploy.io/v1beta1\nkind: Generic\nname: mock-0\nspec:\n  metadata:\n    note: ${'A'.repeat(PARSE_MAX_BYTES + 10)}\n`);
    expect(await describeSetFile(huge, MAX_MOCKSET_BYTES)).toMatchObject({
      mocks: 1,
      kinds: { Http: 0, Postgres: 0, Generic: 1 },
      note: 'counted by a scan of its lines, not parsed (32 MiB, over the 32 MiB a listed set is parsed to); its mocks were not checked',
    });
    const many = path.join(dir, 'many.yaml');
    fs.writeFileSync(many, 'version: api.keploy.io/v1beta1\nkind: Mongo\nname: m\nspec: {}\n---\n'.repeat(30));
    expect(await describeSetFile(many, MAX_MOCKSET_BYTES, undefined, { bytes: PARSE_MAX_BYTES, documents: 20 })).toMatchObject({
      mocks: 30,
      kinds: { Http: 0, Postgres: 0, Generic: 0, Mongo: 30 },
      note: 'counted by a scan of its lines, not parsed (30 documents, over the 20 a listed set is parsed to); its mocks were not checked',
    });
    expect((await describeSetFile(many, 100)).error).toMatch(/many\.yaml is \d+ bytes; mock sets over 100 bytes are not read$/);
  });

  it('MockStore.list reports a scanned set with its note, off the event loop', async () => {
    const store = path.join(dir, 'keploy');
    fs.mkdirSync(path.join(store, 'big'), { recursive: true });
    fs.writeFileSync(path.join(store, 'big', 'mocks.yaml'), `version: api.keploy.io/v1beta1\nkind: Generic\nname: mock-0\nspec:\n  metadata:\n    note: ${'A'.repeat(PARSE_MAX_BYTES + 10)}\n`);
    const [info] = await new MockStore(store).list();
    expect(info).toMatchObject({ name: 'big', mocks: 1, note: expect.stringMatching(/^counted by a scan/) });
    expect(info!.error).toBeUndefined();
  });
});
