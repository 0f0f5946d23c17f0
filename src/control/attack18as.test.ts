import { describe, expect, it } from 'vitest';
import { REDACTED as R } from '../core/secrets.js';
import { redact } from './audit.js';

// Round 18as (issue 18, stop 45's attack t2 on the audit). Found: an environment entry whose value
// holds blanks (`PGPASSWORD=correct horse battery staple`) was read as text, and only its first word
// was hidden (t2-3); so was gdb's `set environment NAME=VALUE`, whose value is the rest of its line.

describe('attack 18as t2-3: an environment entry is one value, blanks and all', () => {
  it('hides the whole value of a secret-named entry in an env list; keeps what decides code and what is not secret', () => {
    const stored = redact({
      command: 'python3 dump.py envtest',
      env: ['PGPASSWORD=correct horse battery staple', 'MYSQL_PWD=Tr0ub4dor &3 x', 'API_TOKEN=a\tb', 'LD_PRELOAD=/opt/token_abc.so', 'GREETING=hello there', 'PGPASSWORD='],
    }) as { env: string[] };
    expect(stored.env).toEqual([`PGPASSWORD=${R}`, `MYSQL_PWD=${R}`, `API_TOKEN=${R}`, 'LD_PRELOAD=/opt/token_abc.so', 'GREETING=hello there', 'PGPASSWORD=']);
  });

  it('reads the same under each spelling of an environment list, and only there: a list of commands is still read word by word', () => {
    for (const name of ['env', 'environment', 'environ']) {
      expect((redact({ [name]: ['DB_PASSWORD=two words'] }) as Record<string, string[]>)[name], name).toEqual([`DB_PASSWORD=${R}`]);
    }
    // gdb's commands are separate lines, each read as text; gdb's `set environment` takes the rest of the line, in each spelling.
    for (const line of ['set environment DB_PASSWORD=two words', 'set env DB_PASSWORD = two words', 'set environ DB_PASSWORD two words']) {
      expect(redact({ commands: [line] }), line).toEqual({ commands: [line.replace('two words', R)] });
    }
  });
});
