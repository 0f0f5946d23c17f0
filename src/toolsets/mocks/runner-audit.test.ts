import { describe, expect, it } from 'vitest';
import { ShellSyntaxError } from '../../core/argv.js';
import { redactText } from '../../core/secrets.js';
import { parseCommand } from './runner.js';

// Attack p2 (issue 18): the runner split a command line at every JavaScript blank and read `$'x\'` as `$` and a
// single-quoted `x\`, while the audit reads it as a shell does: the program that ran was hidden under [REDACTED].
describe('the mocks runner and the audit read a command line alike: what runs is shown', () => {
  const spellings = [
    'PGPASSWORD=x\u00a0touch\u00a0/tmp/m1',
    'env PGPASSWORD=x\u00a0touch /tmp/m1',
    'wrap token=x\u2028touch /tmp/m1',
    'mysql -px\u3000touch\u3000/tmp/m1',
    'curl --password x\u00a0touch /tmp/m1',
    'psql postgres://u:pw\u00a0touch\u00a0m@h',
    "wrap=1 PGPASSWORD=$'x\\' touch /tmp/m2 ''",
    "wrap --password $'x\\' touch /tmp/m2 ''",
    'PGPASSWORD=ab\\\ncd touch /tmp/m3',
    'PGPASSWORD="x\\\nq" touch /tmp/m4',
    'node argv.mjs --password\u00a0Hunter2Secret',
    'timeout 5 PGPASSWORD=x\u00a0touch /tmp/m5',
    'nice wrap token=x\u00a0touch /tmp/m6',
  ];
  for (const line of spellings)
    it(JSON.stringify(line), () => {
      let argv: string[];
      try {
        argv = parseCommand(line).argv;
      } catch (err) {
        expect(err, 'refused as shell syntax').toBeInstanceOf(ShellSyntaxError);
        return;
      }
      // Run: the program, as the runner found it, is in what the audit keeps, and so is `touch` wherever it is a word that runs.
      const stored = redactText(line, true);
      expect(stored.includes(argv[0]!), `ran ${JSON.stringify(argv)}, stored ${JSON.stringify(stored)}`).toBe(true);
      if (argv.includes('touch')) expect(stored, `ran ${JSON.stringify(argv)}`).toMatch(/touch/);
    });
});
