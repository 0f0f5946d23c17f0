// Attack l1-1: request bodies and query strings were decoded as UTF-8 with U+FFFD replacement
// before they were compared. A JSON body holding `\xfe` (or `\x80`, or a real U+FFFD) matched the
// mock recorded with `\xff`, and a query value `%FE` (or `%EF%BF%BD`) the one recorded with `%FF`:
// a strict replay passed while the program got the answer recorded for other bytes. Now a body
// that is not valid UTF-8 is compared as bytes (and the miss says so), and a query name or value
// whose percent-decoding is not UTF-8 is compared as its bytes. Ordinary matching is unchanged.
import { describe, expect, it } from 'vitest';
import type { HttpMock } from '../keploy/types.js';
import { HttpMatcher, type MatchRequest, type MatchResult } from './matcher.js';
import { postMock, postRequest } from './test-support.js';

const json = (account: Buffer) => Buffer.concat([Buffer.from('{"account":"'), account, Buffer.from('","amount":100}')]);
const FF = Buffer.from([0xff]);
const FE = Buffer.from([0xfe]);
const X80 = Buffer.from([0x80]);
const REPLACEMENT = Buffer.from([0xef, 0xbf, 0xbd]);

// A POST with no body and a query, and a form POST, built on test-support's JSON POST.
const queryMock = (target: string, name = 'mock-0'): HttpMock => postMock(target, '', name);
const query = (target: string): MatchRequest => postRequest(target, '');
function formMock(body: string): HttpMock {
  const m = postMock('/form', body);
  m.spec.req.header = { 'Content-Type': 'application/x-www-form-urlencoded' };
  return m;
}
const form = (body: string): MatchRequest => ({ ...postRequest('/form', Buffer.from(body, 'latin1')), headers: [['Content-Type', 'application/x-www-form-urlencoded']] });
const differences = (r: MatchResult) => (r.miss ? (r.closest?.differences ?? []) : []);

describe('a JSON body that is not valid UTF-8 is compared as bytes (l1-1)', () => {
  // How the miss shows each body: bytes that are not UTF-8 as \xFF, others as text.
  const shown = (account: string) => `"{\\"account\\":\\"${account}\\",\\"amount\\":100}"`;
  it.each([
    ['\\xfe', FE, '\\xFE'],
    ['\\x80', X80, '\\x80'],
    ['a valid U+FFFD (EF BF BD)', REPLACEMENT, '\ufffd'],
  ])('recorded with \\xff, a request holding %s is a miss that says why', (_, other, account) => {
    const m = new HttpMatcher([postMock('/bank', json(FF))]);
    const r = m.match(postRequest('/bank', json(other)));
    // Before: { miss: false, how: 'json' }, both bodies read as {"account":"\uFFFD","amount":100}.
    expect(r.miss).toBe(true);
    expect(differences(r)).toEqual([
      `body: recorded 28 bytes ${shown('\\xFF')}, got ${json(other).length} bytes ${shown(account)}; compared as bytes, not as JSON: the recorded body is JSON text that is not valid UTF-8 (byte 0xFF at offset 12)`,
    ]);
  });

  it('recorded with a valid U+FFFD, a request holding \\xff is a miss naming the request body', () => {
    const m = new HttpMatcher([postMock('/bank', json(REPLACEMENT))]);
    const r = m.match(postRequest('/bank', json(FF)));
    expect(r.miss).toBe(true);
    expect(differences(r)[0]).toMatch(/; compared as bytes, not as JSON: the request body is JSON text that is not valid UTF-8 \(byte 0xFF at offset 12\)$/);
  });

  it('a body cut inside a character, or holding an overlong form or a surrogate, is compared as bytes too', () => {
    for (const [recorded, got] of [
      [Buffer.from([0xc3]), Buffer.from([0xc4])], // cut after a lead byte
      [Buffer.from([0xc0, 0xaf]), Buffer.from([0xc1, 0xaf])], // overlong '/'
      [Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xed, 0xa0, 0x81])], // UTF-16 surrogates
    ] as const) {
      const m = new HttpMatcher([postMock('/bank', json(recorded))]);
      expect(m.match(postRequest('/bank', json(got))).miss).toBe(true);
    }
  });

  it('controls: the same invalid bytes match exact; valid UTF-8 bodies still match as JSON', () => {
    const m = new HttpMatcher([postMock('/bank', json(FF), 'a'), postMock('/bank', '{"name":"Müller","n":1}', 'b'), postMock('/bank', json(REPLACEMENT), 'c')]);
    expect(m.match(postRequest('/bank', json(FF)))).toMatchObject({ miss: false, how: 'exact', index: 0 });
    // Key order and an escape that is the same character: equal JSON.
    expect(m.match(postRequest('/bank', '{"n":1,"name":"M\\u00fcller"}'))).toMatchObject({ miss: false, how: 'json', index: 1 });
    expect(m.match(postRequest('/bank', '{"amount":100,"account":"\\ufffd"}'))).toMatchObject({ miss: false, how: 'json', index: 2 });
  });
});

describe('a query name or value that is not UTF-8 once percent-decoded is compared as bytes (l1-1)', () => {
  it.each(['%FE', '%EF%BF%BD', '%80'])('recorded with the byte 0xFF as id (percent-encoded), the request ?id=%s is a miss', (other) => {
    const m = new HttpMatcher([queryMock('/account?id=%FF')]);
    const r = m.match(query(`/account?id=${other}`));
    // Before: { miss: false, how: 'exact' }, every one of them read as id=\uFFFD.
    expect(r.miss).toBe(true);
    expect(differences(r)).toEqual([expect.stringMatching(/^query parameter id: recorded "%FF", got .* \(not UTF-8 once percent-decoded: compared as bytes, not as text\)$/)]);
  });

  it('Latin-1 values (M%FCller, M%E4ller) differ; so do names that are not UTF-8', () => {
    const m = new HttpMatcher([queryMock('/u?name=M%FCller'), queryMock('/k?%FF=1')]);
    expect(m.match(query('/u?name=M%E4ller')).miss).toBe(true);
    expect(m.match(query('/k?%FE=1')).miss).toBe(true);
  });

  it('values are compared one by one: a=x%00y is not a=x&a=y', () => {
    const m = new HttpMatcher([queryMock('/q?a=x&a=y')]);
    // Before: both lists joined with NUL were "x\0y".
    expect(m.match(query('/q?a=x%00y')).miss).toBe(true);
  });

  it('controls: the same bytes match however spelled; valid UTF-8 values match as before', () => {
    const m = new HttpMatcher([queryMock('/account?id=%FF', 'ff'), queryMock('/e?v=%C3%A9', 'e'), queryMock('/s?q=a+b&z=1', 's'), queryMock('/r?v=%EF%BF%BD', 'r')]);
    const answer = (r: MatchResult) => (r.miss ? 'MISS' : r.mock.name);
    expect(answer(m.match(query('/account?id=%ff')))).toBe('ff');
    expect(answer(m.match(query('/e?v=é')))).toBe('e');
    expect(answer(m.match(query('/s?z=1&q=a%20b')))).toBe('s');
    expect(answer(m.match(query('/r?v=\ufffd')))).toBe('r');
  });
});

describe('form bodies, paths and header values are not decoded before comparing (l1-1 guards)', () => {
  it('an application/x-www-form-urlencoded body is compared as bytes: %FF, %FE and %EF%BF%BD differ', () => {
    const m = new HttpMatcher([formMock('account=%FF')]);
    expect(m.match(form('account=%FE')).miss).toBe(true);
    expect(m.match(form('account=%EF%BF%BD')).miss).toBe(true);
    expect(m.match(form('account=%FF')).miss).toBe(false);
  });

  it('a path is compared as written: /a%FF is not /a%FE or /a%EF%BF%BD', () => {
    const m = new HttpMatcher([queryMock('/a%FF')]);
    expect(m.match(query('/a%FE')).miss).toBe(true);
    expect(m.match(query('/a%EF%BF%BD')).miss).toBe(true);
    expect(m.match(query('/a%FF')).miss).toBe(false);
  });
});
