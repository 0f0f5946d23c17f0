import { describe, expect, it } from 'vitest';
import { CALL, expressionRefusal } from './common.js';

// Conditions and watched expressions may not call functions in the debuggee (system("id")).
describe('CALL: a function call in a condition or expression', () => {
  for (const text of ['system("id")', 'f (1)', 'tbl[0](x)', '(int)(*&system)(argv[1])', 'argc+(int)(*&system)(argv[1])', '(*fp)()']) {
    it(`is refused: ${text}`, () => expect(CALL.test(text)).toBe(true));
  }
  for (const text of ['i == 5 && p != 0', 'rec.checksum', 'buf[3] > 0', '(a + b) * 2 == c', '*ptr']) {
    it(`is allowed: ${text}`, () => expect(CALL.test(text)).toBe(false));
  }
});

// Attack 18p: expressions that only read were not all refused where calls were. A condition
// `secret = 31337`, or `admin--` given to debugger_last_change, wrote the debuggee's memory; three
// assignments in one condition pointed puts@GOT at system and ran a command without a call written.
describe('expressionRefusal: the one policy for every expression the debugger hands gdb', () => {
  for (const text of [
    'secret = 31337',
    'admin--',
    '(*(long *)0x5555dead)--',
    '++x',
    'x += 1',
    'x <<= 2',
    '*(long*)&((char*)&main)[0x2eb7] = (long)&system',
    'i == 5, admin = 1',
    '$_shell',
    'system("id")',
  ]) {
    it(`is refused: ${text}`, () => expect(expressionRefusal(text)).toBeDefined());
  }
  for (const text of ['i == 5 && p != 0', 'a <= b || c >= d', 'rec.checksum', '*(char *)&j->payload[8]', '*(long *)0x7ffd1234', '$pc', '-x + 3 - -2']) {
    it(`is allowed: ${text}`, () => expect(expressionRefusal(text)).toBeUndefined());
  }
});
