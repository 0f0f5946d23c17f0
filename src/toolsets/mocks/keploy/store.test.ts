import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DebugkitError } from '../../../core/errors.js';
import { parseMockSet } from './parse.js';
import { serializeMockSet } from './serialize.js';
import { createdOf, MockStore, timeMs } from './store.js';
import { ES_FILE, httpMock, SQL_FILE } from './testkit.js';
import type { GenericMock, Mock } from './types.js';

let base: string;
let n = 0;
let dir: string;

beforeAll(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'dk-keploy-store-'));
});
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));
beforeEach(() => {
  dir = path.join(base, `t${++n}`, 'keploy');
});

/** A keploy directory as a real project has it: the two fixture sets plus things that are not sets. */
function populate(): void {
  for (const [name, file] of [
    ['mux-sql', SQL_FILE],
    ['mux-elasticsearch', ES_FILE],
  ] as const) {
    fs.mkdirSync(path.join(dir, name), { recursive: true });
    fs.copyFileSync(file, path.join(dir, name, 'mocks.yaml'));
  }
  fs.mkdirSync(path.join(dir, 'broken'));
  fs.writeFileSync(path.join(dir, 'broken', 'mocks.yaml'), 'version: x\nkind: [Http\n');
  const old = new Date('2020-01-01T00:00:00Z');
  fs.utimesSync(path.join(dir, 'broken', 'mocks.yaml'), old, old);
  fs.mkdirSync(path.join(dir, 'reports'));
  fs.mkdirSync(path.join(dir, '.hidden'));
  fs.writeFileSync(path.join(dir, '.hidden', 'mocks.yaml'), '');
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a set');
  fs.mkdirSync(path.join(base, `t${n}`, 'elsewhere'));
  fs.copyFileSync(ES_FILE, path.join(base, `t${n}`, 'elsewhere', 'mocks.yaml'));
  fs.symlinkSync('../elsewhere', path.join(dir, 'linked'));
}

async function failure(p: Promise<unknown>, code: DebugkitError['code']): Promise<DebugkitError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(DebugkitError);
    expect((err as DebugkitError).code).toBe(code);
    return err as DebugkitError;
  }
  throw new Error('expected a failure');
}

const leftovers = (setDir: string) => (fs.existsSync(setDir) ? fs.readdirSync(setDir).filter((f) => f !== 'mocks.yaml') : []);

describe('MockStore.list', () => {
  it('lists every set newest first, with counts, kinds and when it was recorded; corrupt ones with their error', async () => {
    populate();
    const sets = await new MockStore(dir).list();
    expect(sets.map((s) => s.name)).toEqual(['mux-elasticsearch', 'mux-sql', 'broken']);
    expect(sets[0]).toEqual({
      name: 'mux-elasticsearch',
      path: path.join(dir, 'mux-elasticsearch', 'mocks.yaml'),
      mocks: 3,
      kinds: { Http: 3, Postgres: 0, Generic: 0 },
      created: '2024-08-06T10:57:52.000Z', // the newest `created`, 1722941872
    });
    // No `created` in Postgres mocks: the newest response timestamp (16:54:36.295564003+05:30).
    expect(sets[1]).toMatchObject({ mocks: 8, kinds: { Http: 0, Postgres: 8, Generic: 0 }, created: '2024-06-05T11:24:36.295Z' });
    expect(sets[1]!.error).toBeUndefined();
    expect(sets[2]).toMatchObject({ name: 'broken', mocks: 0, created: '2020-01-01T00:00:00.000Z' });
    expect(sets[2]!.error).toMatch(/^Invalid Keploy mock set .*broken\/mocks\.yaml: document 1, line 3: not valid YAML/);
  });

  it('latest() is the newest set that reads', async () => {
    populate();
    fs.utimesSync(path.join(dir, 'broken', 'mocks.yaml'), new Date(), new Date());
    const store = new MockStore(dir);
    expect((await store.list())[0]!.name).toBe('broken');
    expect((await store.latest())!.name).toBe('mux-elasticsearch');
  });

  it('a missing directory has no sets', async () => {
    expect(await new MockStore(path.join(base, 'nowhere')).list()).toEqual([]);
    expect(await new MockStore(path.join(base, 'nowhere')).latest()).toBeUndefined();
  });

  it('falls back to the file time when the mocks carry no time, and counts other kinds', async () => {
    const store = new MockStore(dir);
    const generic: GenericMock = {
      version: 'api.keploy.io/v1beta1',
      kind: 'Generic',
      name: 'mock-0',
      spec: { metadata: {}, genericrequests: [], genericresponses: [], reqtimestampmock: '0001-01-01T00:00:00Z', restimestampmock: '0001-01-01T00:00:00Z' },
    };
    const redis: Mock = { version: 'api.keploy.io/v1beta1', kind: 'Mongo', name: 'mock-1', spec: { metadata: {} } };
    const file = await store.write('cache', [generic, redis]);
    const [info] = await store.list();
    expect(info).toEqual({ name: 'cache', path: file, mocks: 2, kinds: { Http: 0, Postgres: 0, Generic: 1, Mongo: 1 }, created: fs.statSync(file).mtime.toISOString() });
  });
});

describe('MockStore.read', () => {
  it('reads a set by name', async () => {
    populate();
    const mocks = await new MockStore(dir).read('mux-sql');
    expect(mocks).toEqual(parseMockSet(fs.readFileSync(SQL_FILE, 'utf8'), SQL_FILE));
  });

  it('NOT_FOUND names the sets there are; bad names and links are refused', async () => {
    populate();
    const store = new MockStore(dir);
    const err = await failure(store.read('nope'), 'NOT_FOUND');
    expect(err.message).toBe(`Mock set 'nope' not found in ${dir} (available: mux-elasticsearch, mux-sql, broken)`);
    expect((await failure(store.read('reports'), 'NOT_FOUND')).message).toContain("Mock set 'reports' not found");
    await failure(store.read('../elsewhere'), 'INVALID_ARGUMENT');
    expect((await failure(store.read('linked'), 'INVALID_ARGUMENT')).message).toContain('is a symbolic link');
    expect((await failure(store.read('broken'), 'INVALID_ARGUMENT')).message).toContain('document 1, line 3');
    expect((await failure(new MockStore(path.join(base, 'none')).read('x'), 'NOT_FOUND')).message).toContain('(there are none)');
  });
});

describe('MockStore.write', () => {
  it('creates the directories and writes the set atomically, leaving no temporary file', async () => {
    const store = new MockStore(dir);
    const mocks = [httpMock({}, 'mock-0'), httpMock({}, 'mock-1')];
    const file = await store.write('order-service-http', mocks);
    expect(file).toBe(path.join(dir, 'order-service-http', 'mocks.yaml'));
    expect(fs.readFileSync(file, 'utf8')).toBe(serializeMockSet(mocks));
    expect(await store.read('order-service-http')).toEqual(mocks);
    expect(leftovers(path.dirname(file))).toEqual([]);
  });

  it('never overwrites: an existing set, valid or corrupt, is refused and left as it was', async () => {
    populate();
    const store = new MockStore(dir);
    const before = fs.readFileSync(path.join(dir, 'broken', 'mocks.yaml'), 'utf8');
    for (const name of ['broken', 'mux-sql']) {
      const err = await failure(store.write(name, [httpMock()]), 'INVALID_ARGUMENT');
      expect(err.message).toContain(`Mock set '${name}' already exists`);
      expect(err.message).toContain('uniqueName');
    }
    expect(fs.readFileSync(path.join(dir, 'broken', 'mocks.yaml'), 'utf8')).toBe(before);
    expect(fs.readFileSync(path.join(dir, 'mux-sql', 'mocks.yaml'), 'utf8')).toBe(fs.readFileSync(SQL_FILE, 'utf8'));
    await failure(store.write('linked', [httpMock()]), 'INVALID_ARGUMENT');
    expect(fs.readFileSync(path.join(base, `t${n}`, 'elsewhere', 'mocks.yaml'), 'utf8')).toBe(fs.readFileSync(ES_FILE, 'utf8'));
  });

  it('writes into an existing directory that has no mocks.yaml yet (a test set with tests only)', async () => {
    fs.mkdirSync(path.join(dir, 'test-set-1', 'tests'), { recursive: true });
    const file = await new MockStore(dir).write('test-set-1', [httpMock()]);
    expect(fs.existsSync(file)).toBe(true);
    expect(fs.existsSync(path.join(dir, 'test-set-1', 'tests'))).toBe(true);
  });

  it('a failure half-way through writing leaves no partial file, no temporary file, no empty set', async () => {
    const store = new MockStore(dir, {
      io: {
        async writeNew(file, data) {
          fs.writeFileSync(file, data.slice(0, data.length / 2));
          throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
        },
      },
    });
    const err = await failure(store.write('half', [httpMock()]), 'INTERNAL');
    expect(err.message).toContain('ENOSPC');
    expect(fs.existsSync(path.join(dir, 'half'))).toBe(false);
    expect(await new MockStore(dir).list()).toEqual([]);
  });

  it('a failure when committing leaves nothing either; an existing directory is kept', async () => {
    fs.mkdirSync(path.join(dir, 'kept'), { recursive: true });
    const store = new MockStore(dir, {
      io: {
        link: async () => {
          throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
        },
      },
    });
    await failure(store.write('kept', [httpMock()]), 'INTERNAL');
    expect(fs.readdirSync(path.join(dir, 'kept'))).toEqual([]);
  });

  it('two writers racing for one name: one wins, the other is refused, nothing is clobbered', async () => {
    const store = new MockStore(dir);
    const results = await Promise.allSettled([store.write('race', [httpMock({}, 'a')]), store.write('race', [httpMock({}, 'b')])]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(rejected.reason.message).toContain("Mock set 'race' already exists");
    expect((await store.read('race')).map((m) => m.name)).toHaveLength(1);
    expect(leftovers(path.join(dir, 'race'))).toEqual([]);

    // The same race decided at the very last step: the file appears between the check and the link.
    const sneaky = new MockStore(dir, {
      io: {
        async link(existing, target) {
          fs.writeFileSync(target, 'theirs');
          await fs.promises.link(existing, target);
        },
      },
    });
    await failure(sneaky.write('late', [httpMock()]), 'INVALID_ARGUMENT');
    expect(fs.readFileSync(path.join(dir, 'late', 'mocks.yaml'), 'utf8')).toBe('theirs');
    expect(leftovers(path.join(dir, 'late'))).toEqual([]);
  });

  it('falls back to rename where hard links are not supported', async () => {
    const store = new MockStore(dir, {
      io: {
        link: async () => {
          throw Object.assign(new Error('EPERM: operation not permitted'), { code: 'EPERM' });
        },
      },
    });
    const file = await store.write('nolinks', [httpMock()]);
    expect(parseMockSet(fs.readFileSync(file, 'utf8'), file)).toEqual([httpMock()]);
    expect(leftovers(path.dirname(file))).toEqual([]);
  });

  it('refuses mocks that would not read back, and bad names, before touching the disk', async () => {
    const store = new MockStore(dir);
    const bad = httpMock();
    (bad.spec.resp as { status_code: unknown }).status_code = 'OK';
    expect((await failure(store.write('bad', [bad]), 'INVALID_ARGUMENT')).message).toContain('spec.resp.status_code: expected an integer');
    const unreadable = httpMock();
    unreadable.spec.req.method = '';
    expect((await failure(store.write('bad', [unreadable]), 'INVALID_ARGUMENT')).message).toMatch(/^Mock set 'bad' not written: Cannot write mock 1 \(mock-0\): spec\.req\.method: must not be empty$/);
    for (const name of ['../escape', 'a/b', '.tmp', '']) await failure(store.write(name, [httpMock()]), 'INVALID_ARGUMENT');
    expect(fs.existsSync(dir)).toBe(false);
  });

  it('a mocks path that is a file is a clean error', async () => {
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    fs.writeFileSync(dir, 'not a directory');
    expect((await failure(new MockStore(dir).write('x', [httpMock()]), 'INTERNAL')).message).toContain(`cannot create ${dir}`);
    expect(await new MockStore(dir).list()).toEqual([]);
  });
});

describe('MockStore.uniqueName', () => {
  it('gives the base while it is free, then -2, -3, ...', async () => {
    populate();
    const store = new MockStore(dir);
    expect(await store.uniqueName('order-service-http')).toBe('order-service-http');
    expect(await store.uniqueName('mux-sql')).toBe('mux-sql-2');
    fs.mkdirSync(path.join(dir, 'mux-sql-2'));
    expect(await store.uniqueName('mux-sql')).toBe('mux-sql-3');
    expect(await store.uniqueName('reports')).toBe('reports-2');
    expect(await store.uniqueName('notes.txt')).toBe('notes.txt-2');
    expect(await store.uniqueName('x'.repeat(200))).toBe('x'.repeat(200));
    await failure(store.uniqueName('../x'), 'INVALID_ARGUMENT');
  });

  it('works on a directory that does not exist yet', async () => {
    expect(await new MockStore(path.join(base, 'fresh')).uniqueName('a')).toBe('a');
  });
});

describe('when a set was recorded', () => {
  it('reads created as seconds, or as milliseconds when it can only be that', () => {
    expect(createdOf([httpMock({ created: 1722941810 })])).toBe('2024-08-06T10:56:50.000Z');
    expect(createdOf([httpMock({ created: 1722941810123 })])).toBe('2024-08-06T10:56:50.123Z');
    expect(createdOf([httpMock({ created: 1 }), httpMock({ created: 1722941810 })])).toBe('2024-08-06T10:56:50.000Z');
    expect(createdOf([httpMock({ created: undefined, resTimestampMock: '2024-01-02T00:00:00.75Z' })])).toBe('2024-01-02T00:00:00.750Z');
    expect(createdOf([])).toBeUndefined();
  });

  it('parses Keploy timestamps down to the millisecond', () => {
    expect(timeMs('2024-06-05T16:53:56.841481379+05:30')).toBe(Date.parse('2024-06-05T11:23:56.841Z'));
    expect(timeMs('2024-6-5 1:2:3')).toBe(Date.parse('2024-06-05T01:02:03Z'));
    expect(timeMs('0001-01-01T00:00:00Z')).toBeUndefined();
    expect(timeMs('nonsense')).toBeUndefined();
  });
});

describe('a set directory swapped for a link out of the root (SECURITY.md, "Open what was checked")', () => {
  /** A workspace root with a mocks directory, and a directory outside it. */
  function workspace(): { root: string; keploy: string; outside: string } {
    const root = path.join(base, `t${n}`, 'root');
    const keploy = path.join(root, 'keploy');
    const outside = path.join(base, `t${n}`, 'outside');
    fs.mkdirSync(keploy, { recursive: true });
    fs.mkdirSync(outside, { recursive: true });
    return { root, keploy, outside };
  }
  /** Swaps `setDir` for a link to `outside` (the set directory moved aside to `setDir.moved`). */
  const swap = (setDir: string, outside: string) => {
    fs.renameSync(setDir, `${setDir}.moved`);
    fs.symlinkSync(outside, setDir);
  };
  /** A store in `root` whose writes swap set `name`'s directory for a link to `outside` once the temporary file is written. */
  const swappingStore = (root: string, keploy: string, outside: string, name: string) =>
    new MockStore(keploy, {
      root,
      io: {
        async writeNew(file, data) {
          fs.writeFileSync(file, data, { flag: 'wx' });
          swap(path.join(keploy, name), outside);
        },
      },
    });

  it('write: the file is linked into the directory that was opened, never through the link swapped in', async () => {
    const { root, keploy, outside } = workspace();
    const store = swappingStore(root, keploy, outside, 'rec');
    await store.write('rec', [httpMock()]);
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(parseMockSet(fs.readFileSync(path.join(keploy, 'rec.moved', 'mocks.yaml'), 'utf8'), 'x')).toEqual([httpMock()]);
    expect(leftovers(path.join(keploy, 'rec.moved'))).toEqual([]);
  });

  it('append: read, written and renamed in the directory that was opened; the file outside is left as it was', async () => {
    const { root, keploy, outside } = workspace();
    fs.mkdirSync(path.join(keploy, 'grow'));
    fs.copyFileSync(ES_FILE, path.join(keploy, 'grow', 'mocks.yaml'));
    fs.writeFileSync(path.join(outside, 'mocks.yaml'), 'theirs');
    const store = swappingStore(root, keploy, outside, 'grow');
    expect(await store.append('grow', [httpMock()])).toBe(4);
    expect(fs.readdirSync(outside)).toEqual(['mocks.yaml']);
    expect(fs.readFileSync(path.join(outside, 'mocks.yaml'), 'utf8')).toBe('theirs');
    expect(fs.readFileSync(path.join(keploy, 'grow.moved', 'mocks.yaml'), 'utf8').startsWith(fs.readFileSync(ES_FILE, 'utf8'))).toBe(true);
  });

  it('a mocks directory (or a set directory) that is a link after it was resolved is refused, not followed: nothing is read or made outside', async () => {
    const { root, keploy, outside } = workspace();
    fs.mkdirSync(path.join(outside, 'secret'));
    fs.copyFileSync(ES_FILE, path.join(outside, 'secret', 'mocks.yaml'));
    fs.rmSync(keploy, { recursive: true });
    fs.symlinkSync(outside, keploy);
    // `keploy` as mocks/paths.ts resolved it before the swap: a plain directory in the root.
    const store = new MockStore(keploy, { root });
    expect((await failure(store.write('new', [httpMock()]), 'INVALID_ARGUMENT')).message).toContain('is a symbolic link now');
    expect((await failure(store.read('secret'), 'INVALID_ARGUMENT')).message).toContain('is a symbolic link now');
    expect((await failure(store.load('secret'), 'INVALID_ARGUMENT')).message).toContain('is a symbolic link now');
    await failure(store.list(), 'INVALID_ARGUMENT');
    expect(fs.readdirSync(outside)).toEqual(['secret']);
    // A set directory that is a link: not listed, refused.
    fs.rmSync(keploy);
    fs.mkdirSync(keploy);
    fs.symlinkSync(path.join(outside, 'secret'), path.join(keploy, 'secret'));
    expect(await store.list()).toEqual([]);
    expect((await failure(store.load('secret'), 'INVALID_ARGUMENT')).message).toContain('is a symbolic link');
    expect((await failure(store.append('secret', [httpMock()]), 'INVALID_ARGUMENT')).message).toContain('is a symbolic link');
    expect(fs.readFileSync(path.join(outside, 'secret', 'mocks.yaml'), 'utf8')).toBe(fs.readFileSync(ES_FILE, 'utf8'));
  });
});
