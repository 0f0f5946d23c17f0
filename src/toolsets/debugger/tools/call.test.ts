import { describe, expect, it } from 'vitest';
import { CALL } from './common.js';

// Conditions and watched expressions may not call functions in the debuggee (system("id")).
describe('CALL: a function call in a condition or expression', () => {
  for (const text of ['system("id")', 'f (1)', 'tbl[0](x)', '(int)(*&system)(argv[1])', 'argc+(int)(*&system)(argv[1])', '(*fp)()']) {
    it(`is refused: ${text}`, () => expect(CALL.test(text)).toBe(true));
  }
  for (const text of ['i == 5 && p != 0', 'rec.checksum', 'buf[3] > 0', '(a + b) * 2 == c', '*ptr']) {
    it(`is allowed: ${text}`, () => expect(CALL.test(text)).toBe(false));
  }
});
