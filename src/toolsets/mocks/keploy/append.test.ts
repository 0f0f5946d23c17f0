import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMockSet } from './parse.js';
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
