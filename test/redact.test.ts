// Secrets in answers (issue 21): a Python local named like a credential, a JWT the program prints,
// a C program's password in gdb's `info locals` and a private key in a file it reads are hidden
// from what the model reads, the answer saying what was hidden; --no-redact shows them.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from './helpers/client.js';
import { tempDir } from './helpers/programs.js';
import { execFileSync } from 'node:child_process';

const JWT = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhZG1pbiIsImV4cCI6NDEwMjQ0NDgwMH0.dGhpcy1pcy1ub3QtYS1yZWFsLXNpZ25hdHVyZQ';

const PY = `import sys
def login(user):
    password = "hunter2-${'x'.repeat(4)}"
    session = "${JWT}"
    tries = 3
    print("session", session, flush=True)
    return len(password) + tries  # line 7

login("admin")
`;

const C = `#include <stdio.h>
int check(const char *user) {
  const char *password = "hunter2-c";
  int tries = 3;
  return user[0] + password[0] + tries; /* line 5 */
}
int main(void) { printf("%d\\n", check("admin")); return 0; }
`;

let root: string;
let dk: TestClient;
let open: TestClient;

beforeAll(async () => {
  root = tempDir('debugkit-redact-');
  writeFileSync(path.join(root, 'login.py'), PY);
  writeFileSync(path.join(root, 'check.c'), C);
  execFileSync('gcc', ['-g', '-O0', '-o', path.join(root, 'check'), path.join(root, 'check.c')]);
  [dk, open] = await Promise.all([connectStdio({ root, args: ['--toolsets', 'python,gdb'] }), connectStdio({ root, args: ['--toolsets', 'python,gdb', '--no-redact'] })]);
}, 60_000);
afterAll(async () => Promise.all([dk?.close(), open?.close()]));

/** The Python program stopped at line 7: the answer, whole. */
async function pythonStop(client: TestClient) {
  const { structured } = await client.tool('python_start_session', { entry: 'login.py' });
  const stop = await client.tool('python_run_to_breakpoint', { sessionId: structured.sessionId, file: 'login.py', line: 7 });
  const output = await client.tool('python_get_output', { sessionId: structured.sessionId });
  await client.tool('python_end_session', { sessionId: structured.sessionId });
  return { stop, output };
}

describe('answers hide what looks like a credential', () => {
  it('python: a local named password and a JWT in a local and in the output are hidden; the others are shown; the answer says so', async () => {
    const { stop, output } = await pythonStop(dk);
    expect(stop.isError, stop.text).toBe(false);
    const all = JSON.stringify(stop.structured) + stop.text + JSON.stringify(output.structured) + output.text;
    expect(all).not.toContain('hunter2');
    expect(all).not.toContain(JWT);
    expect(stop.structured.locals.tries.repr).toBe('3');
    expect(stop.structured.locals.password.type).toBe('str');
    expect(stop.text).toMatch(/\[debugkit: hid 2 values that look like a credential \(password, JWT, secret-named value\); the server's --no-redact shows them\]$/);
    expect(stop.text).toMatch(/\nlocals: password='\[redacted password\]' str, session='\[redacted JWT\]' str, tries=3 int, user='admin' str\n/);
    expect(output.text).toContain('session [redacted JWT]');
  });

  it('--no-redact: the same answers show them', async () => {
    const { stop, output } = await pythonStop(open);
    expect(stop.structured.locals.password.repr).toBe("'hunter2-xxxx'");
    expect(JSON.stringify(output.structured)).toContain(JWT);
    expect(stop.text).not.toMatch(/redacted/);
  });

  it("gdb: a password's string in `info locals` is hidden, the address and the other locals kept", async () => {
    const { id } = await dk.ok('open', { program: 'check' });
    await dk.ok('call', { id, commands: ['break 5', 'run'] });
    const locals = await dk.tool('call', { id, command: 'info locals' });
    expect(locals.text).toMatch(/^password = 0x[0-9a-f]+ "\[redacted password\]"\ntries = 3\n\[debugkit: hid 1 value that looks like a credential \(password\)/);
    expect(JSON.stringify(locals.structured)).not.toContain('hunter2');
    await dk.ok('close', { id });
  });
});
