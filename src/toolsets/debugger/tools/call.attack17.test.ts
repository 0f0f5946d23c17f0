// Issue 17, the attack on the finished change: a `debugger` key's breakpoint condition may not call
// functions in the debuggee (SECURITY.md: "a plain C comparison ... no function calls"). A C++
// template instantiation is called as NAME<ARGS>(...): the character before "(" is ">", which CALL
// does not look for, so `debugger_set_breakpoint {condition: "mark<int>(1) == 0"}` passes and gdb
// called mark<int> in the debuggee at every hit (found by the attack; CALL now sees it). The other spellings tried are refused.
import { describe, expect, it } from 'vitest';
import { CALL } from './common.js';

describe('CALL (attack 17)', () => {
  it.each(['mark<int>(1) == 0', 'ns::run<char>(0)', 'std::max<int> (1, 2) > 0'])('refuses a call of a template instantiation: %s (found by the attack)', (text) => {
    expect(CALL.test(text)).toBe(true);
  });

  it.each(['system (0)', 'f\t(1)', 'a[0](1)', '(*&f)(1)', 'x.f(1)', 'p->f(1)', 'f_1(2)', 'F(3)'])('refuses %j (held)', (text) => {
    expect(CALL.test(text)).toBe(true);
  });
});
