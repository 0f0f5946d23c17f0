// Attack l1-3: the index key joined a command's arguments with NUL, so `MGET acct:1 acct:2` and
// `MGET` of the one binary key `acct:1<NUL>acct:2` were the same key: the one-key MGET replayed
// the two values recorded for the other.
import { describe, expect, it } from 'vitest';
import { RedisIndex } from './matcher.js';

const args = (...a: string[]) => a.map((s) => Buffer.from(s, 'latin1'));
const TWO = Buffer.from('*2\r\n$17\r\nBALANCE-OF-ACCT-1\r\n$17\r\nBALANCE-OF-ACCT-2\r\n');

describe('RedisIndex keys (attack l1-3)', () => {
  it('an argument holding NUL is not the arguments it would join', () => {
    const index = new RedisIndex();
    index.add({ name: 'mock-0', args: args('MGET', 'acct:1', 'acct:2'), response: TWO });
    expect(index.answer(args('MGET', 'acct:1\0acct:2'))).toBeUndefined();
    expect(index.answer(args('MGET', 'acct:1\0', 'acct:2'))).toBeUndefined();
    expect(index.answer(args('MGET', 'acct:1', '\0acct:2'))).toBeUndefined();
    expect(index.answer(args('MGET\0acct:1', 'acct:2'))).toBeUndefined();
    expect(index.answer(args('MGET', 'acct:1', 'acct:2'))?.entry.name).toBe('mock-0');
  });

  it('the same arguments still match, the command name in any case; an empty argument counts', () => {
    const index = new RedisIndex();
    index.add({ name: 'mock-0', args: args('GET', 'k'), response: Buffer.from('$1\r\nv\r\n') });
    index.add({ name: 'mock-1', args: args('SET', 'k', ''), response: Buffer.from('+OK\r\n') });
    expect(index.answer(args('get', 'k'))?.entry.name).toBe('mock-0');
    expect(index.answer(args('Get', 'k'))?.entry.name).toBe('mock-0');
    expect(index.answer(args('SET', 'k'))).toBeUndefined();
    expect(index.answer(args('SET', 'k', ''))?.entry.name).toBe('mock-1');
    expect(index.answer(args('SET', 'k', '', ''))).toBeUndefined();
  });
});
