// Attack l1-2: query texts were compared after `replace(/\s+/g, ' ').trim()`, which also ran inside
// string literals and quoted identifiers, so `name='a b'` replayed the answer recorded for
// `name='a  b'` (and for a tab, a newline or a no-break space between a and b).
import { serialize } from 'pg-protocol';
import { describe, expect, it } from 'vitest';
import { cpuTimes, linearMessage } from '../../../core/cputime.js';
import { KEPLOY_MOCK_VERSION, ZERO_TIME, type PostgresMock } from '../keploy/types.js';
import { parseFrontendBytes } from './frontend.js';
import { buildRequestPacket, buildResponsePacket } from './keploy.js';
import { normalizeQuery, ReplayIndex } from './matcher.js';
import { backend } from './wire.js';

/** A recorded conversation: these client messages, answered by these server messages. */
const mock = (name: string, requests: Buffer[], responses: Buffer[]): PostgresMock => {
  const spec = { postgresrequests: [buildRequestPacket(parseFrontendBytes(Buffer.concat(requests)), { length: 8 })], postgresresponses: [buildResponsePacket(responses, { length: 8 })] };
  return { version: KEPLOY_MOCK_VERSION, kind: 'Postgres', name, spec: { metadata: {}, ...spec, reqtimestampmock: ZERO_TIME, restimestampmock: ZERO_TIME } };
};
const RECORDED = "select secret from u where name='a  b'";
const simple = (query: string) => mock('mock-0', [serialize.query(query)], [backend.dataRow([Buffer.from('SECRET-OF-A-2SPACES-B')]), backend.commandComplete('SELECT 1'), backend.readyForQuery('I')]);
const prepared = (query: string) => mock('mock-1', [serialize.parse({ text: query }), serialize.sync()], [backend.parseComplete(), backend.readyForQuery('I')]);

describe('PostgreSQL query texts compare with blanks collapsed only between tokens (attack l1-2)', () => {
  it("a literal that differs only in its blanks is another query: 'a b', a tab, a newline, a no-break space, U+2028", () => {
    const index = new ReplayIndex([simple(RECORDED), prepared(RECORDED)]);
    for (const inside of ['a b', 'a\tb', 'a\nb', 'a\u00a0b', 'a\u2028b', 'a   b', ' a  b', 'a  b ']) {
      const q = `select secret from u where name='${inside}'`;
      expect(index.simpleQuery(q), JSON.stringify(q)).toBeUndefined();
      expect(index.parse(q), JSON.stringify(q)).toBeUndefined();
      expect(index.knows(q), JSON.stringify(q)).toBe(false);
    }
  });

  it('the same query spaced otherwise between tokens, or with blanks before and after it, still matches', () => {
    const index = new ReplayIndex([simple(RECORDED), prepared(RECORDED)]);
    for (const q of [RECORDED, `${RECORDED}\n`, `  ${RECORDED}\r\n`, "select\tsecret\n  from u\n where  name='a  b'", "\fselect secret from u where name='a  b'  "]) {
      expect(index.simpleQuery(q)?.mock, JSON.stringify(q)).toBe('mock-0');
      expect(index.parse(q)?.mock, JSON.stringify(q)).toBe('mock-1');
    }
  });

  it('no-break space, U+2028 and \\v between tokens are not blanks: they are kept, not collapsed nor trimmed', () => {
    for (const odd of ['\u00a0', '\u2028', '\v']) {
      expect(normalizeQuery(`select${odd}1`)).toBe(`select${odd}1`);
      expect(normalizeQuery(`select 1${odd}`)).toBe(`select 1${odd}`);
    }
  });

  // Each pair differs only in blanks that PostgreSQL reads as part of a literal, a name or a
  // comment, or in a line break that changes what it reads: never the same key.
  const different: Array<[string, string]> = [
    ["select 'a  b'", "select 'a b'"],
    ["select 'it''s  x'", "select 'it''s x'"],
    ["select E'a\\'  b'", "select E'a\\' b'"],
    ["select e'a\\\\'  ,  'x  y'", "select e'a\\\\' , 'x y'"],
    ['select "a  b" from t', 'select "a b" from t'],
    ['select "x""  y"', 'select "x"" y"'],
    ['select $$a  b$$', 'select $$a b$$'],
    ['select $t$ $x$  $t$', 'select $t$ $x$ $t$'],
    ['select $fn$a  $$ b$fn$', 'select $fn$a $$ b$fn$'],
    // The backslash ends the literal with standard_conforming_strings on, not with it off.
    ["select 'a\\'  , 'b  c'", "select 'a\\' , 'b c'"],
    // PostgreSQL joins literals separated by a line break: 'a'<newline>'b' is 'ab', 'a' 'b' an error.
    ["select 'a'\n'b'", "select 'a' 'b'"],
    // The line break ends the comment: without it the rest is comment too.
    ['select 1 -- c\nfrom t', 'select 1 -- c from t'],
    // Nested block comments: the first */ does not end the outer one.
    ["select /* /* */ ' */ '  a  '", "select /* /* */ ' */ ' a '"],
    // 1$a$ is the number 1 and a dollar quote for PostgreSQL: its blanks are kept.
    ['select 1$a$  x  $a$', 'select 1$a$ x $a$'],
    ['select $1$a$  x  $a$', 'select $1$a$ x $a$'],
  ];
  it.each(different)('%j and %j are different queries', (a, b) => {
    expect(normalizeQuery(a)).not.toBe(normalizeQuery(b));
    const index = new ReplayIndex([simple(a)]);
    expect(index.simpleQuery(b)).toBeUndefined();
  });

  const same: Array<[string, string]> = [
    ['select  \'a  b\' ,\t"x  y"', 'select \'a  b\' , "x  y"'],
    ['select $q$ a  b $q$   from t', 'select $q$ a  b $q$ from t'],
    ['select a$b$  from  t', 'select a$b$ from t'],
    ["select E'a\\'  b'   from t", "select E'a\\'  b' from t"],
    ['select 1 /* a  b */   from t', 'select 1 /* a  b */ from t'],
    ['select 1 --  c  \n\n  from t\n', 'select 1 --  c  \nfrom t'],
    ["select 'a'\n\n  'b'", "select 'a'\n'b'"],
    ["select 'a'   'b'", "select 'a' 'b'"],
  ];
  it.each(same)('%j is %j', (a, b) => {
    expect(normalizeQuery(a)).toBe(b);
  });

  it('the collapsed text collapses to itself (the text decides the key, whatever the spacing)', () => {
    const alphabet = [' ', '\t', '\n', "'", "''", '"', '$', '$a$', 'E', 'e', '1', 'x', '-', '--', '/*', '*/', '\\', ','];
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let n = 0; n < 5000; n++) {
      let q = '';
      for (let k = Math.floor(random() * 24); k > 0; k--) q += alphabet[Math.floor(random() * alphabet.length)];
      const once = normalizeQuery(q);
      expect(normalizeQuery(once), JSON.stringify(q)).toBe(once);
    }
  });

  it('is linear in the text: blanks between short tokens, nested comments, a dollar quote full of other tags', () => {
    const tag = `$${'t'.repeat(64)}$`;
    const texts = (n: number) => ['a  '.repeat(n), `select ${'/*'.repeat(n)}`, `select ${tag}${`$${'t'.repeat(63)}u$ `.repeat(n / 16)}${tag}`, `select e'${"\\'' ".repeat(n)}'`];
    const [small, big] = [texts(50_000), texts(200_000)];
    for (const q of big) normalizeQuery(q); // warm up
    const t = cpuTimes(
      () => small.map((q) => normalizeQuery(q)),
      () => big.map((q) => normalizeQuery(q)),
      3,
    );
    expect(t.big, linearMessage('texts of n and 4n tokens', t)).toBeLessThan(Math.max(10 * t.small, 20));
  });

  it('a Bind whose one parameter holds NUL is not the two parameters it spells', () => {
    const text = 'select $1::text, $2::text';
    const index = new ReplayIndex([
      mock(
        'mock-2',
        [serialize.parse({ text }), serialize.bind({ values: ['a', 'b'] }), serialize.execute(), serialize.sync()],
        [backend.parseComplete(), backend.bindComplete(), backend.dataRow([Buffer.from('a'), Buffer.from('b')]), backend.commandComplete('SELECT 1'), backend.readyForQuery('I')],
      ),
    ]);
    const run = (params: Buffer[]) => index.execute(index.runKey(text, index.paramKeys(text, params, [])));
    expect(run([Buffer.from('a'), Buffer.from('b')])?.mock).toBe('mock-2');
    expect(run([Buffer.from("a'\0'b")])).toBeUndefined();
  });
});
