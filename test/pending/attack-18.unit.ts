// PENDING (issue 18, still open): the attack on the finished issue-18 change (branch attack-18,
// c3dac82), one redaction finding whose test fails today: an unquoted value after a secret-looking
// name is read to a blank, quote or bracket, so code there (a lambda default, a keyword argument:
// token=os.system) is hidden as if it were a secret literal. Telling code from a secret literal
// needs a rule of its own (see SECURITY.md's audit paragraph). Not run (not *.test.ts), so CI stays
// true: move it into src/control/attack18.test.ts (import from './audit.js') once fixed.
import { describe, expect, it } from 'vitest';
import { redactText } from '../../src/control/audit.js';

describe('attack 18: an entry records what ran (open)', () => {
  it('a lambda default or keyword argument that is code is kept', () => {
    expect(redactText('(lambda token=os.system:token("rm -rf ~"))()')).toContain('os.system');
    expect(redactText('x = dict(token=os.system)["token"]("rm -rf ~")')).toContain('os.system');
  });});
