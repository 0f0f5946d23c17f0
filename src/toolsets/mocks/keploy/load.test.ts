import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DebugkitError } from '../../../core/errors.js';
import { workerEntry, WorkerPool } from '../../../core/workers.js';
import { MockSetBoundError } from './describe.js';
import { PARSE_MAX_BYTES, PARSE_MAX_DOCS } from './scan.js';
import { serializeMockSet } from './serialize.js';
import { MockStore } from './store.js';
import { ES_FILE, httpMock, SQL_FILE } from './testkit.js';
import type { GenericMock, HttpMock } from './types.js';

/** MockStore.load and append for replay: on the mock-set worker threads (describe.ts, load.ts), within the parse bounds. */

let base: string;
let dir: string;
let store: MockStore;
beforeAll(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'dk-keploy-load-'));
  dir = path.join(base, 'keploy');
  store = new MockStore(dir, { cacheDir: path.join(base, 'cache') });
});
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));

function set(name: string, text: string): void {
  fs.mkdirSync(path.join(dir, name), { recursive: true });
  fs.writeFileSync(path.join(dir, name, 'mocks.yaml'), text);
}

const HTTP_DOC = httpMock();
/** A document with what a structured clone could lose: bytes (!!binary), an integer past 2^53 (bigint), a key named __proto__. */
const TRICKY =
  serializeMockSet([HTTP_DOC]).replace(`body: '{"ok":true}'`, 'body: !!binary //79AAE=').replace("Accept: '*/*'", "Accept: '*/*'\n            __proto__: polluted") +
  '    app_port: 18446744073709551615\n';

async function refused(p: Promise<unknown>): Promise<MockSetBoundError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MockSetBoundError);
  expect((err as DebugkitError).code).toBe('INVALID_ARGUMENT');
  return err as MockSetBoundError;
}

describe('MockStore.load', () => {
  it('gives the mocks read gives, intact through the threads: bytes stay Uint8Array, bigint stays bigint, __proto__ stays a key', async () => {
    set('sql', fs.readFileSync(SQL_FILE, 'utf8'));
    set('es', fs.readFileSync(ES_FILE, 'utf8'));
    expect(TRICKY).toContain('!!binary');
    expect(TRICKY).toContain('__proto__');
    set('tricky', TRICKY);
    for (const name of ['sql', 'es', 'tricky']) {
      const loaded = await store.load(name);
      expect(loaded.length).toBeGreaterThan(0);
      expect(loaded).toStrictEqual(await store.read(name));
    }
    const [mock] = (await store.load('tricky')) as HttpMock[];
    expect(mock!.spec.resp.body).toBeInstanceOf(Uint8Array);
    expect(mock!.spec.resp.body).toEqual(new Uint8Array([0xff, 0xfe, 0xfd, 0x00, 0x01]));
    expect(mock!.spec.extra!.app_port).toBe(18446744073709551615n);
    expect(Object.getOwnPropertyNames(mock!.spec.req.header)).toContain('__proto__');
    expect(Object.getPrototypeOf(mock!.spec.req.header)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('hands an Http body over 64 KiB of text over as its UTF-8 bytes (the main thread neither copies nor encodes a long string); a short one stays text', async () => {
    const long = `é${'0,'.repeat(40 * 1024)}`;
    const doc = httpMock();
    doc.spec.req.body = long;
    doc.spec.resp.body = `${long}!`;
    set('long-body', serializeMockSet([doc, httpMock({}, 'mock-1')]));
    const [big, small] = (await store.load('long-body')) as HttpMock[];
    expect(big!.spec.req.body).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(big!.spec.req.body as Uint8Array).toString('utf8')).toBe(long);
    expect(Buffer.from(big!.spec.resp.body as Uint8Array).toString('utf8')).toBe(`${long}!`);
    expect(small!.spec.req.body).toBe(httpMock().spec.req.body);
    expect(small!.spec.resp.body).toBe(httpMock().spec.resp.body);
    // What is read (listing, extending a set) keeps the text.
    expect(((await store.read('long-body')) as HttpMock[])[0]!.spec.req.body).toBe(long);
  });

  it('hands over a set bigger than one batch whole and in order; a second load comes from the cache, the same', async () => {
    const note = 'x'.repeat(300 * 1024);
    const mocks = Array.from(
      { length: 12 },
      (_, i) => ({ version: 'api.keploy.io/v1beta1', kind: 'Generic', name: `mock-${i}`, spec: { metadata: { note: `${i}${note}` } } }) as unknown as GenericMock,
    );
    set('batches', serializeMockSet(mocks));
    const first = await store.load('batches');
    expect(first.map((m) => m.name)).toEqual(mocks.map((m) => m.name));
    expect(first).toStrictEqual(await store.read('batches'));
    expect(fs.readdirSync(path.join(base, 'cache')).filter((f) => f.endsWith('.json'))).not.toHaveLength(0);
    expect(await store.load('batches')).toStrictEqual(first);
  });

  it('refuses a set past the bounds, naming the bound and what is valid, without parsing it', async () => {
    set('huge', `version: api.keploy.io/v1beta1\nkind: Generic\nname: mock-0\nspec:\n  metadata:\n    note: ${'A'.repeat(PARSE_MAX_BYTES + 10)}\n`);
    expect((await refused(store.load('huge'))).message).toBe(
      "Mock set 'huge' was not loaded: 32 MiB, over the 32 MiB a set is parsed to for replay. keploy_mock_test replays sets of at most 32 MiB and 20000 documents, " +
        "loaded within 20 s and 768 MB: split a bigger set into smaller ones (Keploy's test sets), or leave out the mocks it does not need",
    );
    set('many', 'version: api.keploy.io/v1beta1\nkind: Mongo\nname: m\nspec: {}\n---\n'.repeat(PARSE_MAX_DOCS + 1));
    expect((await refused(store.load('many'))).message).toMatch(/^Mock set 'many' was not loaded: 20001 documents, over the 20000 a set is parsed to for replay\. /);
  });

  it('a corrupt set fails as read fails; a missing one is NOT_FOUND naming the sets there are', async () => {
    set('broken', 'version: x\nkind: [Http\n');
    const broken = await store.load('broken').catch((e: unknown) => e as DebugkitError);
    expect(broken).toBeInstanceOf(DebugkitError);
    expect(broken).not.toBeInstanceOf(MockSetBoundError);
    expect((broken as DebugkitError).code).toBe('INVALID_ARGUMENT');
    expect((broken as DebugkitError).message).toContain('document 1, line 3: not valid YAML');
    const missing = await store.load('nope').catch((e: unknown) => e as DebugkitError);
    expect((missing as DebugkitError).code).toBe('NOT_FOUND');
    expect((missing as DebugkitError).message).toMatch(/^Mock set 'nope' not found in .* \(available: .*sql/);
  });
});

describe('MockStore.append', () => {
  it('adds recorded mocks (bytes included) named on from the count, the old text kept byte for byte', async () => {
    const old = fs.readFileSync(ES_FILE, 'utf8');
    set('grow', old);
    const before = (await store.load('grow')).length;
    const recorded: GenericMock = {
      version: 'api.keploy.io/v1beta1',
      kind: 'Generic',
      name: 'ignored',
      spec: { metadata: {}, genericrequests: [{ origin: 'client', message: [{ type: 'binary', data: 'AAEC' }] }], genericresponses: [], reqtimestampmock: '', restimestampmock: '' },
    };
    const withBytes = httpMock({ resp: { ...HTTP_DOC.spec.resp, body: Buffer.from([0, 0xff, 7]) as unknown as string } });
    expect(await store.append('grow', [recorded, withBytes])).toBe(before + 2);
    const text = fs.readFileSync(path.join(dir, 'grow', 'mocks.yaml'), 'utf8');
    expect(text.startsWith(old)).toBe(true);
    const after = await store.load('grow');
    expect(after.slice(before).map((m) => m.name)).toEqual([`mock-${before}`, `mock-${before + 1}`]);
    expect((after[before + 1] as HttpMock).spec.resp.body).toEqual(new Uint8Array([0, 0xff, 7]));
    expect(after).toStrictEqual(await store.read('grow'));
  });

  it('refuses to grow a set past the bounds (it could not be replayed again), leaving it as it was', async () => {
    const big = `version: api.keploy.io/v1beta1\nkind: Generic\nname: mock-0\nspec:\n  metadata:\n    note: ${'A'.repeat(PARSE_MAX_BYTES - 100)}\n`;
    set('full', big);
    const err = await refused(store.append('full', [httpMock()]));
    expect(err.message).toMatch(/^Mock set 'full' was not extended: 32 MiB, over the 32 MiB a set is parsed to for replay\. /);
    expect(fs.readFileSync(path.join(dir, 'full', 'mocks.yaml'), 'utf8')).toBe(big);
  });
});

describe('cancelled loads', () => {
  /** This process's descriptors that name a file `which` accepts (the worker threads share them). */
  const openOn = (which: (name: string) => boolean) =>
    fs.readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return which(fs.readlinkSync(`/proc/self/fd/${fd}`));
      } catch {
        return false; // closed meanwhile
      }
    });

  it('leave no descriptor of the set open, wherever the cancel lands (the worker thread ended mid-scan included)', async () => {
    // 40 MiB of short lines: past the parse bounds, so the worker scans it line by line, 1 MiB read at a time (where the cancels land), and refuses it.
    fs.mkdirSync(path.join(dir, 'cancelled'), { recursive: true });
    const file = path.join(dir, 'cancelled', 'mocks.yaml');
    const fd = fs.openSync(file, 'w');
    fs.writeSync(fd, 'version: api.keploy.io/v1beta1\nkind: Generic\nname: mock-0\nspec:\n  metadata:\n');
    for (let i = 0; i < 40; i++) fs.writeSync(fd, Buffer.from('    k: v\n'.repeat((1024 * 1024) / 9)));
    fs.closeSync(fd);
    const outcomes = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const cancel = new AbortController();
      const load = store.load('cancelled', { signal: cancel.signal }).then(
        () => 'loaded',
        (err: unknown) => (err instanceof MockSetBoundError ? 'refused' : 'cancelled'),
      );
      setTimeout(() => cancel.abort(new Error('the client left')), i * 50);
      outcomes.add(await load);
    }
    expect(outcomes.has('cancelled'), [...outcomes].join()).toBe(true);
    // The descriptor is closed once each cancelled job's thread has ended (a moment after the call failed).
    await vi.waitFor(() => expect(openOn((name) => name === file)).toEqual([]), { timeout: 10_000, interval: 50 });
  }, 60_000);

  it('leave no module file open when they land while a fresh thread is still loading its modules', async () => {
    set('booting', serializeMockSet([httpMock()]));
    // Each cancelled job ends its thread, so the next one starts a fresh thread: every cancel lands in its loading.
    const modules = (name: string) => /\.(?:[cm]?[jt]s|json)$/.test(name) && !name.startsWith('/proc/');
    const before = new Set(openOn(modules));
    for (let i = 0; i < 12; i++) {
      const cancel = new AbortController();
      const load = store.load('booting', { signal: cancel.signal }).catch(() => undefined);
      setTimeout(() => cancel.abort(new Error('the client left')), i * 15);
      await load;
    }
    await vi.waitFor(() => expect(openOn(modules).filter((fd) => !before.has(fd))).toEqual([]), { timeout: 30_000, interval: 100 });
    // And the pool still works.
    expect(await store.load('booting')).toHaveLength(1);
  }, 60_000);

  it('many at once never hold more threads than the pool has: a thread still loading keeps its place until it has loaded and ended', async () => {
    set('many-at-once', serializeMockSet([httpMock()]));
    const pool = new WorkerPool({ name: 'test', size: 2, entry: workerEntry(new URL('./describe.ts', import.meta.url).href, 'describe-worker') });
    let most = 0;
    const sample = setInterval(() => (most = Math.max(most, pool.threads)), 2);
    try {
      const job = { op: 'load', file: path.join(dir, 'many-at-once', 'mocks.yaml'), shown: 'many-at-once', cacheDir: path.join(base, 'cache') };
      const runs = Array.from({ length: 20 }, (_, i) => {
        const cancel = new AbortController();
        setTimeout(() => cancel.abort(new Error('the client left')), i % 4);
        return pool.run(job, { signal: cancel.signal, onRequest: async () => ({ value: null }) }).then(
          () => 'done',
          () => 'cancelled',
        );
      });
      expect(new Set(await Promise.all(runs)).has('cancelled')).toBe(true);
      // Once the cancelled threads have loaded and ended, the pool runs jobs again.
      expect(await pool.run(job, { onRequest: async () => ({ value: null }) })).toEqual({ mocks: 1 });
    } finally {
      clearInterval(sample);
      await pool.close();
    }
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
  }, 60_000);
});
