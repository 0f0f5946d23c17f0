import { describe, expect, it } from 'vitest';
import { cpuTimes } from '../core/cputime.js';
import { REDACTED as R, readsAsPath, redactText } from '../core/secrets.js';
import { redactForAudit, redactWords } from './audit.js';

// Round 18aq. In text that runs (a command line, argv), a secret known by its place is hidden; but a
// place found in a word that is not path-like, run by a wrapper commandRuns does not know, may be a
// directory on the way to what ran: `unknownwrapper token=x/../evil.sh` ran `token=x/../evil.sh` while
// the audit kept `token=[REDACTED]` (a directory `token=x`, made by the same key). The rule now: a
// place-found value that reads as a path (it holds a `/`, and a `.` that starts it, stands next to a
// `/`, or begins a file's extension) is kept, in command lines, argv and code-deciding values alike
// (hiddenInRun); base64, hex and JWT secrets never read so, and stay hidden.

describe('attack 18aq: a place-found value that reads as a path is what ran, kept', () => {
  it('in a command line, after a wrapper the audit does not know', () => {
    for (const line of [
      'unknownwrapper token=x/../evil.sh',
      'somewrap password=a/./b.py',
      'runner --api-key=../../tmp/evil',
      'runner --password ../../tmp/evil',
      'runner --password=x/../evil.sh',
      'runner --token .hidden/run',
      'wrap http://u:p/../x@h/../evil.sh',
      'wrap -H "Authorization: Bearer x/../evil.sh"',
      // The value's shell word goes on past a quote, a backslash or `$`: read whole, as the program gets it.
      'wrap token="x"/./evil.sh',
      'wrap token=x"/./evil.sh"',
      'wrap token="x"/"."/evil',
      'wrap token=x\\/./evil.sh',
      "wrap 'token=x'/'..'/evil",
      'wrap "token=x"/./evil.sh',
      'wrap token=x$D/./evil.sh',
    ])
      expect(redactText(line, true), line).toBe(line);
    // A quoted blank ends the value (attack v2-1): the word before it is the secret, the path after it shown.
    expect(redactText('wrap token="a b"/./evil.sh', true)).toBe(`wrap token="${R} b"/./evil.sh`);
    expect(redactText('wrap --password "a b/./c.sh"', true)).toBe(`wrap --password "${R} b/./c.sh"`);
  });

  it('in argv, whole words and words a blank stopped the value in', () => {
    for (const words of [
      ['unknownwrapper', 'token=x/../evil.sh'],
      ['somewrap', 'password=a/./b.py'],
      ['runner', '--api-key=../../tmp/evil'],
      ['runner', '--password', 'x/../evil.sh'],
      ['runner', '--password', 'abc /./x.sh'],
      ['wrap', 'http://u:p/../x@h/../evil.sh'],
      ['wrap', 'token="x"/./evil.sh'],
      ['wrap', 'token=x$D/./evil.sh'],
      ['wrap', 'configure', 'set', 'token', 'x/../evil.sh'],
    ])
      expect(redactWords(words), words.join(' ')).toEqual(words);
  });

  it('in a code-deciding value, a URL password that reads as a path is a directory on the way', async () => {
    const env = { command: 'bash -c true', env: ['BASH_ENV=http://u:p/../x@h/../evil.sh'] };
    expect(await redactForAudit(env, 'keploy_mock_record', false, false, true)).toEqual(env);
  });
});

describe('attack 18aq: real secrets holding `/` stay hidden', () => {
  const AWS = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
  it('base64 and plain values with `/`, a URL password before a path, an Oracle logon before a service name', async () => {
    expect(redactText(`wrap AWS_SECRET_ACCESS_KEY=${AWS}`, true)).toBe(`wrap AWS_SECRET_ACCESS_KEY=${R}`);
    expect(redactText(`AWS_SECRET_ACCESS_KEY=${AWS} aws s3 ls`, true)).toBe(`AWS_SECRET_ACCESS_KEY=${R} aws s3 ls`);
    expect(redactText('mysql --password a/b+c/d==', true)).toBe(`mysql --password ${R}`);
    expect(redactText('wrap --password "a/b+c/d=="', true)).toBe(`wrap --password "${R}"`);
    expect(redactText('wrap token=bin/evil', true)).toBe(`wrap token=${R}`);
    expect(redactText('wrap http://u:a/b+c/d==@h/x', true)).toBe(`wrap http://u:${R}@h/x`);
    // What follows a URL's `@` or a logon's `@` is the host, never the password's.
    expect(redactText('curl https://u:pw@h/f.tar.gz', true)).toBe(`curl https://u:${R}@h/f.tar.gz`);
    expect(redactText('sqlplus scott/pw@//h:1521/svc.example.com', true)).toBe(`sqlplus scott/${R}@//h:1521/svc.example.com`);
    expect(redactText('wrap -H "Authorization: Bearer K7MDENG/bPxRfiCY+EXAMPLE=="', true)).toBe(`wrap -H "Authorization: Bearer ${R}"`);
    expect(redactWords(['wrap', `AWS_SECRET_ACCESS_KEY=${AWS}`])).toEqual(['wrap', `AWS_SECRET_ACCESS_KEY=${R}`]);
    expect(redactWords(['wrap', '--password', 'a/b+c/d=='])).toEqual(['wrap', '--password', R]);
    expect(redactWords(['aws', 'configure', 'set', 'aws_secret_access_key', AWS])).toEqual(['aws', 'configure', 'set', 'aws_secret_access_key', R]);
    // A value is read on with its own word only: in a quoted script, the words after it are other words.
    expect(redactText(`bash -c 'mysql -p"Hunter2" db/x.sql'`, true)).toBe(`bash -c 'mysql -p"${R}" db/x.sql'`);
    expect(redactText('mysql -p"Hunter2" db/x.sql', true)).toBe(`mysql -p"${R}" db/x.sql`);
    expect(redactText('psql "postgres://u:pw@h/db" -f x/y.sql', true)).toBe(`psql "postgres://u:${R}@h/db" -f x/y.sql`);
    expect(redactWords(['bash', '-c', 'mysql -p"Hunter2" db/x.sql'])).toEqual(['bash', '-c', `mysql -p"${R}" db/x.sql`]);
    // argv is no shell: a quote in one word does not join the next to a password.
    expect(redactWords(['curl', '-u', 'admin:pw"', '/./x.sh'])).toEqual(['curl', '-u', `admin:${R}`, '/./x.sh']);
    const env = { command: 'x', env: ['BASH_ENV=http://u:pw@h/x.sh'] };
    expect(await redactForAudit(env, 'keploy_mock_record', false, false, true)).toEqual({ command: 'x', env: [`BASH_ENV=http://u:${R}@h/x.sh`] });
  });

  it('reads as a path: a `/`, and a `.` that starts the value, stands next to a `/` or begins an extension', () => {
    for (const path of ['x/../evil.sh', 'a/./b.py', '../../tmp/evil', '.ssh/id', 'dir/evil.sh', 'lib.d/x', 'x./y', 'p/../x']) expect(readsAsPath(path), path).toBe(true);
    for (const secret of [AWS, 'a/b+c/d==', 'bin/evil', 'evil.sh', 'eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl', 'ab/cd.x+y/z', 'a/b.']) expect(readsAsPath(secret), secret).toBe(false);
  });
});

describe('attack 18aq: the path reading stays linear', () => {
  // Each shape at n and 8n characters: a linear reading takes ~8x as long, a quadratic one ~64x (the
  // bound of attack 18's linearity tests: 24x, or 10 ms). Both sizes warmed up first, then the least
  // CPU time of 7 runs of each (cpuTimes).
  const linear = (name: string, make: (n: number) => string, run: (text: string) => unknown) => () => {
    const [small, big] = [make(16_000), make(128_000)];
    run(small);
    run(big);
    const cost = cpuTimes(
      () => run(small),
      () => run(big),
      7,
    );
    expect(cost.big, `${name}: ${cost.small.toFixed(2)} ms at 16k, ${cost.big.toFixed(2)} ms at 128k`).toBeLessThan(Math.max(24 * cost.small, 10));
  };
  const line = (text: string) => redactText(text, true);
  // Many values in one shell word, each going on past its quote: the word is read once.
  it(
    'wrap token="x"token="x"... is linear',
    linear('token="x" in one word', (n) => `wrap ${'token="x"'.repeat(n / 9)}/b`, line),
  );
  it(
    'wrap token="x"token="x"..././e is linear',
    linear('token="x" in one path', (n) => `wrap ${'token="x"'.repeat(n / 9)}/./e`, line),
  );
  it(
    'wrap token="x" token="x" ... is linear',
    linear('token="x" in many words', (n) => `wrap ${'token="x" '.repeat(n / 10)}`, line),
  );
  it(
    'wrap http://u:a/b@h ... is linear',
    linear('URL passwords with a slash', (n) => `wrap ${'http://u:a/b@h '.repeat(n / 15)}`, line),
  );
  // One argv word of many values, each stopped by a shell character and read to the word's end.
  it(
    'argv: password=x$password=x$... is linear',
    linear(
      'password=x$ in one argv word',
      (n) => `${'password=x$'.repeat(n / 11)}/b`,
      (t) => redactWords(['wrap', t]),
    ),
  );
});
