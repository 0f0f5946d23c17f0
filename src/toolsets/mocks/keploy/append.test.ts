import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBackError } from './load.js';
import { parseMockDocuments, parseMockSet } from './parse.js';
import { serializeMockSet } from './serialize.js';
import { MockStore } from './store.js';
import { httpMock } from './testkit.js';

let base: string;
let n = 0;
beforeAll(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'dk-keploy-append-'));
});
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));

/** A keploy directory holding set `grow` of two mocks. */
function workspace(): { dir: string; file: string } {
  const dir = path.join(base, `t${++n}`, 'keploy');
  fs.mkdirSync(path.join(dir, 'grow'), { recursive: true });
  const file = path.join(dir, 'grow', 'mocks.yaml');
  fs.writeFileSync(file, serializeMockSet([httpMock({}, 'mock-0'), httpMock({}, 'mock-1')]));
  return { dir, file };
}

/** Set `name` holding `text`, in a keploy directory of its own: the directory and the file. */
function setOf(name: string, text: string): { dir: string; file: string } {
  const dir = path.join(base, `t${++n}`, 'keploy');
  fs.mkdirSync(path.join(dir, name), { recursive: true });
  const file = path.join(dir, name, 'mocks.yaml');
  fs.writeFileSync(file, text);
  return { dir, file };
}

/** `count` mocks told apart by their URL, for the calls made by `who`. */
const recorded = (who: string, count: number) => Array.from({ length: count }, (_, i) => httpMock({ req: { ...httpMock().spec.req, url: `/${who}/${i}` } }));
const urls = (file: string) => parseMockSet(fs.readFileSync(file, 'utf8'), file).map((m) => (m.kind === 'Http' ? m.spec.req.url : m.kind));

describe('MockStore.append with others appending to the same set (attack 18r K5)', () => {
  it('keeps every mock of three appends at once', async () => {
    const { dir, file } = workspace();
    // Separate stores, as separate calls have: the turns are per set, not per store.
    const totals = await Promise.all(['a', 'b', 'c'].map((who) => new MockStore(dir).append('grow', recorded(who, 5))));
    expect(totals.sort((x, y) => x - y)).toEqual([7, 12, 17]);
    const all = urls(file);
    expect(all).toHaveLength(17);
    for (const who of ['a', 'b', 'c']) for (let i = 0; i < 5; i++) expect(all).toContain(`/${who}/${i}`);
  });

  it('works its text out again when another process replaced the file after it was read', async () => {
    const { dir, file } = workspace();
    let others = 0;
    const store = new MockStore(dir, {
      io: {
        writeNew: async (temp, data) => {
          // Another process's append lands between this one's read and its rename (the first time only).
          if (others++ === 0) {
            const theirs = `${file}.theirs`;
            fs.writeFileSync(theirs, `${fs.readFileSync(file, 'utf8')}---\n${serializeMockSet([httpMock({ req: { ...httpMock().spec.req, url: '/other-process' } }, 'mock-2')])}`);
            fs.renameSync(theirs, file);
          }
          fs.writeFileSync(temp, data, { flag: 'wx' });
        },
      },
    });
    expect(await store.append('grow', recorded('mine', 2))).toBe(5);
    expect(others).toBe(2);
    expect(urls(file).slice(2)).toEqual(['/other-process', '/mine/0', '/mine/1']);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['mocks.yaml']);
  });
});

describe('MockStore.append: names', () => {
  it('names what it adds past every name the set holds (attack 18y W7: a set of mock-0 and mock-2 got a second mock-2)', async () => {
    const dir = path.join(base, `t${++n}`, 'keploy');
    fs.mkdirSync(path.join(dir, 'gap'), { recursive: true });
    const file = path.join(dir, 'gap', 'mocks.yaml');
    fs.writeFileSync(file, serializeMockSet([httpMock({}, 'mock-0'), httpMock({}, 'mock-2')]));
    expect(await new MockStore(dir).append('gap', recorded('new', 2))).toBe(4);
    const names = parseMockSet(fs.readFileSync(file, 'utf8'), file).map((m) => m.name);
    expect(names).toEqual(['mock-0', 'mock-2', 'mock-3', 'mock-4']);
  });
});

describe('MockStore.replace: one test re-recorded', () => {
  it("takes the test's mocks out and adds the new ones, every other document kept byte for byte", async () => {
    const dir = path.join(base, `t${++n}`, 'keploy');
    fs.mkdirSync(path.join(dir, 'suite'), { recursive: true });
    const file = path.join(dir, 'suite', 'mocks.yaml');
    const at = (url: string, name: string) => httpMock({ req: { ...httpMock().spec.req, url } }, name);
    fs.writeFileSync(file, serializeMockSet([at('/a', 'mock-0'), at('/b', 'mock-1'), at('/c', 'mock-2')]));
    const before = fs.readFileSync(file, 'utf8');
    const documents = before.split(/^---\n/m);
    const result = await new MockStore(dir).replace('suite', [at('/b2', 'x'), at('/b3', 'y')], { names: ['mock-1'] });
    expect(result).toEqual({ total: 4, replaced: 1 });
    const after = fs.readFileSync(file, 'utf8');
    expect(urls(file)).toEqual(['/a', '/c', '/b2', '/b3']);
    expect(parseMockSet(after, file).map((m) => m.name)).toEqual(['mock-0', 'mock-2', 'mock-3', 'mock-4']);
    // The documents of the other tests, as they were.
    expect(after.startsWith(`${documents[0]}---\n${documents[2]}`)).toBe(true);
    await expect(new MockStore(dir).replace('suite', [at('/z', 'z')], { names: ['mock-9'] })).rejects.toThrow(/the set holds no mock named 'mock-9'/);
  });
});

describe('MockStore.replace: documents as the YAML parser splits them (attack b1-1)', () => {
  const at = (url: string, name: string) => httpMock({ req: { ...httpMock().spec.req, url } }, name);
  /** One mock's document as serializeMockSet writes it, without a `---` line. */
  const doc = (url: string, name: string) => serializeMockSet([at(url, name)]);

  it("a '...' end marker, a bare document after it and a null document: the named mock goes, every other stays (the old split dropped mock-2 and kept mock-1)", async () => {
    const d0 = doc('/item/0', 'mock-0');
    const d1 = doc('/item/1', 'mock-1');
    const d2 = doc('/item/2', 'mock-2');
    const d3 = doc('/item/3', 'mock-3');
    const { dir, file } = setOf('odd', `${d0}...\n${d1}---\n${d2}---\nnull\n---\n${d3}`);
    const result = await new MockStore(dir).replace('odd', [at('/replaced', 'x')], { names: ['mock-1'] });
    expect(result).toEqual({ total: 4, replaced: 1 });
    const after = fs.readFileSync(file, 'utf8');
    expect(parseMockSet(after, file).map((m) => m.name)).toEqual(['mock-0', 'mock-2', 'mock-3', 'mock-4']);
    expect(urls(file)).toEqual(['/item/0', '/item/2', '/item/3', '/replaced']);
    // The kept documents, byte for byte, with the null document between them.
    expect(after.startsWith(`${d0}...\n---\n${d2}---\nnull\n---\n${d3}---\n`)).toBe(true);
  });

  it('null (~) and empty documents with comments between documents: the first mock replaced, the comments kept', async () => {
    const d0 = doc('/a', 'mock-0');
    const d1 = doc('/b', 'mock-1');
    const d2 = doc('/c', 'mock-2');
    const text = `# set of three\n${d0}---\n~\n---\n---\n# the second\n${d1}---\n# the third\n${d2}`;
    const { dir, file } = setOf('nulls', text);
    expect(await new MockStore(dir).replace('nulls', [at('/a2', 'x')], { names: ['mock-0'] })).toEqual({ total: 3, replaced: 1 });
    const after = fs.readFileSync(file, 'utf8');
    expect(urls(file)).toEqual(['/b', '/c', '/a2']);
    expect(after.startsWith(`# set of three\n---\n~\n---\n---\n# the second\n${d1}---\n# the third\n${d2}---\n`)).toBe(true);
  });

  it("CRLF lines, a byte order mark and '...' markers each followed by a bare document: the middle mock replaced, the others byte for byte", async () => {
    const crlf = (s: string) => s.replace(/\n/g, '\r\n');
    const d0 = crlf(doc('/a', 'mock-0'));
    const d1 = crlf(doc('/b', 'mock-1'));
    const d2 = crlf(doc('/c', 'mock-2'));
    const { dir, file } = setOf('crlf', `\uFEFF# kept\r\n${d0}...\r\n${d1}...\r\n# last\r\n${d2}`);
    expect(await new MockStore(dir).replace('crlf', [at('/b2', 'x')], { names: ['mock-1'] })).toEqual({ total: 3, replaced: 1 });
    const after = fs.readFileSync(file, 'utf8');
    expect(urls(file)).toEqual(['/a', '/c', '/b2']);
    // The bare third document now follows the first: it is given a --- line in the file's line ending.
    expect(after.startsWith(`\uFEFF# kept\r\n${d0}...\r\n# last\r\n---\r\n${d2}---\n`)).toBe(true);
  });
});

describe('MockStore.append and replace: a set with YAML directives is refused (attack 18ad g1-3, g1-4)', () => {
  const at = (url: string, name: string) => httpMock({ req: { ...httpMock().spec.req, url } }, name);
  const doc = (url: string, name: string) => serializeMockSet([at(url, name)]);
  /** A mock answering `body`. */
  const answering = (body: string | Uint8Array, name = 'x') => httpMock({ resp: { ...httpMock().spec.resp, body } }, name);
  const bodies = (file: string) => parseMockSet(fs.readFileSync(file, 'utf8'), file).map((m) => (m.kind === 'Http' ? m.spec.resp.body : m.kind));
  const refused = (verb: string, where: string) =>
    new RegExp(`Mock set 'v11' not ${verb}, its file left as it was: it holds YAML directives \\(%YAML, %TAG\\) in force ${where}, .*Keploy writes no directives: remove them and try again`);

  it("g1-3: replacing the first document's test, which carried %YAML 1.1, would change how another test's kept !!binary reads: refused, the file as it was", async () => {
    // Under the set's %YAML 1.1, mock-1's body is the text "bGl2ZSAy"; without the directive it would read as the bytes of "live 2".
    const text = `%YAML 1.1\n---\n${doc('/a', 'mock-0')}---\n${doc('/b', 'mock-1').replace('body: \'{"ok":true}\'', 'body: !!binary bGl2ZSAy')}`;
    expect(text).toContain('!!binary bGl2ZSAy');
    const { dir, file } = setOf('v11', text);
    expect(bodies(file)).toEqual(['{"ok":true}', 'bGl2ZSAy']);
    await expect(new MockStore(dir).replace('v11', [at('/a2', 'x')], { names: ['mock-0'] })).rejects.toThrow(refused('re-recorded', 'at its document 1'));
    expect(fs.readFileSync(file, 'utf8')).toBe(text);
  });

  it("g1-4: a new mock with a binary body would read back as its base64 text under the set's %YAML 1.1: append and replace refused, the file as it was", async () => {
    const bytes = new Uint8Array([0xff, 0xfe, 0x00, 0x41, 0x08]);
    const text = `%YAML 1.1\n---\n${serializeMockSet([answering(bytes, 'mock-0'), answering(bytes, 'mock-1')])}`;
    expect(text).toContain('!!binary //4AQQg=');
    const { dir, file } = setOf('v11', text);
    await expect(new MockStore(dir).append('v11', [answering(bytes)])).rejects.toThrow(refused('extended', 'at its document 1'));
    await expect(new MockStore(dir).replace('v11', [answering(bytes)], { names: ['mock-1'] })).rejects.toThrow(refused('re-recorded', 'at its document 1'));
    expect(fs.readFileSync(file, 'utf8')).toBe(text);
  });

  it('%YAML 1.2, %TAG and unknown directives before a later document, and one after the last document: refused, naming where', async () => {
    const d0 = doc('/a', 'mock-0');
    const d1 = doc('/b', 'mock-1');
    const d2 = doc('/c', 'mock-2');
    for (const directive of ['%YAML 1.2', '%TAG !e! tag:example.com,2000:', '%TAG !! tag:example.com,2000:', '%FOO bar']) {
      const text = `${d0}---\n${d1}...\n${directive}\n---\n${d2}`;
      const { dir, file } = setOf('v11', text);
      expect(parseMockSet(text, file).map((m) => m.name)).toEqual(['mock-0', 'mock-1', 'mock-2']);
      await expect(new MockStore(dir).append('v11', [at('/new', 'x')]), directive).rejects.toThrow(refused('extended', 'at its document 3'));
      await expect(new MockStore(dir).replace('v11', [at('/b2', 'x')], { names: ['mock-1'] }), directive).rejects.toThrow(refused('re-recorded', 'at its document 3'));
      expect(fs.readFileSync(file, 'utf8')).toBe(text);
    }
    // A directive after the last document applies to no mock of the set, but would to the new ones.
    const text = `${d0}...\n%YAML 1.1\n`;
    const { dir, file } = setOf('v11', text);
    await expect(new MockStore(dir).append('v11', [at('/new', 'x')])).rejects.toThrow(refused('extended', 'after its last document'));
    await expect(new MockStore(dir).replace('v11', [at('/a2', 'x')], { names: ['mock-0'] })).rejects.toThrow(refused('re-recorded', 'after its last document'));
    expect(fs.readFileSync(file, 'utf8')).toBe(text);
  });

  it("'%YAML 1.1' and '%TAG' lines inside a mock's body are content, not directives: the set is extended and replaced", async () => {
    const body = 'line one\n%YAML 1.1\n%TAG ! x\n';
    const { dir, file } = setOf('v11', serializeMockSet([answering(body, 'mock-0'), answering('b', 'mock-1')]));
    // A block scalar's lines, as a text search for directive lines could take them.
    expect(fs.readFileSync(file, 'utf8')).toMatch(/^ +%YAML 1\.1\n +%TAG ! x$/m);
    expect(await new MockStore(dir).append('v11', [answering(body)])).toBe(3);
    expect(await new MockStore(dir).replace('v11', [answering('b2')], { names: ['mock-1'] })).toEqual({ total: 3, replaced: 1 });
    expect(bodies(file)).toEqual([body, body, 'b2']);
  });
});

describe('readBackError: what a changed set reads back as', () => {
  const at = (url: string, name: string) => httpMock({ req: { ...httpMock().spec.req, url } }, name);
  const doc = (url: string, name: string) => serializeMockSet([at(url, name)]);
  const read = (text: string) => parseMockDocuments(text, 'set');

  it('after an append: kept mocks must come from the old text, new ones after it, by name and kind', () => {
    const old = `${doc('/a', 'mock-0')}---\n${doc('/b', 'mock-1')}`;
    const existing = parseMockSet(old, 'set');
    const added = [at('/new', 'mock-2')];
    const text = `${old}---\n${doc('/new', 'mock-2')}`;
    expect(readBackError(text, read(text), { existing, added, keptEnd: old.length })).toBeUndefined();
    // A new document named as the set expects, but the kept ones end past the old text: one swallowed the other.
    expect(readBackError(text, read(text), { existing, added, keptEnd: old.length - 10 })).toMatch(/mock 2 reads back as 'mock-1' \(Http\), not as the kept 'mock-1'/);
    expect(readBackError(text, read(text), { existing: existing.slice(0, 1), added, keptEnd: old.length })).toMatch(/3 mocks read back, expected 1 kept and 1 new/);
    expect(readBackError(text, read(text), { existing, added: [at('/new', 'mock-9')], keptEnd: old.length })).toMatch(/mock 3 reads back as 'mock-2' \(Http\), not as the new 'mock-9'/);
  });

  it('after a replace: each kept document must read back from its own text, or that text after a --- line it was given', () => {
    const d0 = doc('/a', 'mock-0');
    const d1 = doc('/b', 'mock-1');
    const existing = [at('/a', 'mock-0'), at('/b', 'mock-1')];
    const added = [at('/new', 'mock-2')];
    const kept = `${d0}...\n---\n${d1}`;
    const text = `${kept}---\n${doc('/new', 'mock-2')}`;
    const expected = { existing, added, keptEnd: kept.length };
    expect(readBackError(text, read(text), { ...expected, documents: [d0 + '...\n', d1] })).toBeUndefined();
    // The second document was bare: it may now open with the --- line it was given.
    expect(readBackError(text, read(text), { ...expected, documents: [d0 + '...\n', d1.slice(0)] })).toBeUndefined();
    // Same names and kinds, other content: refused.
    const other = doc('/other', 'mock-1');
    expect(readBackError(text, read(text), { ...expected, documents: [d0 + '...\n', other] })).toMatch(/mock 2 reads back as 'mock-1' \(Http\), not as the kept 'mock-1' \(Http\) from the same text/);
  });
});

describe('MockStore.append: the read-back check on a set read from the cache', () => {
  it('compares kept mocks by content, so a set revived from the cache is extended (its non-ASCII text made structured-clone bytes differ)', async () => {
    const dir = path.join(base, `t${++n}`, 'keploy');
    fs.mkdirSync(path.join(dir, 'big'), { recursive: true });
    const file = path.join(dir, 'big', 'mocks.yaml');
    // Past the 64 KiB a set must have to be cached.
    const body = `réponse ${'é'.repeat(400)} 日本`;
    const mocks = Array.from({ length: 200 }, (_, i) => httpMock({ resp: { ...httpMock().spec.resp, body } }, `mock-${i}`));
    fs.writeFileSync(file, serializeMockSet(mocks));
    const cacheDir = path.join(base, `t${n}`, 'cache');
    const store = new MockStore(dir, { cacheDir });
    // The first append parses the set and caches the result; the second reads the set from the cache.
    expect(await store.append('big', recorded('one', 1))).toBe(201);
    expect(fs.readdirSync(cacheDir).length).toBeGreaterThan(0);
    expect(await store.append('big', recorded('two', 1))).toBe(202);
    expect(urls(file).slice(-2)).toEqual(['/one/0', '/two/0']);
  });
});
