import { describe, expect, it } from 'vitest';
import { REDACTED as R, inlineCode, redactText } from '../core/secrets.js';
import { redactWords } from './audit.js';

// Round 18ap, from stop 40's review: the audit had two readings of "an option that brings code"
// (secrets.ts for command lines, audit.ts for argv) that disagreed: `perl -0777e CODE` and code
// attached to its option (`python3 -c'...'`) were code for argv's rule and options for the
// command line's, so the program the code ran, named like a token, was hidden.
const TOK = 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

describe('attack 18ap: one reading of inline code, for command lines and argv', () => {
  it('reads the option forms', () => {
    for (const w of ['-c', '-e', '-E', '-lc', '-Sc', '-lne', '-0777e', '-p', '--eval', '--print', '--command', '--exec']) expect(inlineCode(w), w).toBe('next');
    for (const w of ["-cimport os; os.system('x')", '-eprint(1)', '--eval=process.exit(1)', '--exec=ls']) expect(inlineCode(w), w).toBe('attached');
    for (const w of ['-verbose', '-force', '-trace', '-xvuec', '--password', '-c1', '-x', 'c']) expect(inlineCode(w), w).toBeUndefined();
  });

  it('code after -0777e, or attached to its option, is shown whole on a command line and in argv', () => {
    for (const line of [`perl -0777e 'system("./${TOK}")'`, `python3 -c'import os; os.system("./${TOK}")'`, `node --eval='require("child_process").execSync("${TOK}")'`])
      expect(redactText(line, true), line).toBe(line);
    expect(redactWords(['perl', '-0777e', `system("${TOK}")`])).toEqual(['perl', '-0777e', `system("${TOK}")`]);
    expect(redactWords(['python3', `-cimport os; os.system("${TOK}")`])).toEqual(['python3', `-cimport os; os.system("${TOK}")`]);
  });

  it('a shell still reads -c<letters> as options, and a secret in a value is still hidden', () => {
    // bash reads `-cx` as the options c and x: its script is the next word.
    expect(redactWords(['bash', '-cx', `mysql -p${TOK}`])).toEqual(['bash', '-cx', `mysql -p${R}`]);
    expect(redactText(`python3 -c 'print(1)' --token ${TOK}`, true)).toBe(`python3 -c 'print(1)' --token ${R}`);
    expect(redactWords(['curl', '--password', TOK])).toEqual(['curl', '--password', R]);
  });

  it('reads each word once for URLs: 60,000 characters of ./TOK spans in one word', () => {
    const word = `./${TOK}`.repeat(Math.floor(60_000 / (TOK.length + 2)));
    expect(redactWords(['run', word])).toEqual(['run', word]);
    expect(redactText(`run ${word}`, true)).toBe(`run ${word}`);
  });
});
