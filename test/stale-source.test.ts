import { appendFileSync, mkdtempSync, realpathSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from './helpers/client.js';
import { pyOk } from './helpers/python.js';

// Attack 18ap i2-7: a stop on a source edited after the program was built (Go) or started (Python,
// JavaScript) showed the new lines as the ones stopped at, with no word of it. It now says so, as
// gdb and the debugger toolset do.
const PROGRAMS: Record<string, { entry: string; text: string; line: number; since: string }> = {
  Python: { entry: 'loop.py', text: 'for i in range(3):\n    x = i * 2\n    print(x)\n', line: 2, since: 'started' },
  JavaScript: { entry: 'loop.js', text: 'for (let i = 0; i < 3; i++) {\n  const x = i * 2;\n  console.log(x);\n}\n', line: 2, since: 'started' },
  Go: { entry: 'loop.go', text: 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfor i := 0; i < 3; i++ {\n\t\tx := i * 2\n\t\tfmt.Println(x)\n\t}\n}\n', line: 7, since: 'built' },
};

let root: string;
let dk: TestClient;

beforeAll(async () => {
  root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'debugkit-stale-')));
  for (const { entry, text } of Object.values(PROGRAMS)) writeFileSync(path.join(root, entry), text);
  dk = await connectStdio({ root });
});
afterAll(async () => {
  await dk?.close();
  rmSync(root, { recursive: true, force: true });
});

describe('a stop on a source newer than the program says so (attack 18ap i2-7)', () => {
  for (const [language, { entry, line, since }] of Object.entries(PROGRAMS)) {
    it(`${language}: no note before the edit, a note after it`, async () => {
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry });
      const first = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: entry, line, timeout: 120 });
      expect(first).toMatchObject({ hit: true, frameInfo: { line } });
      expect(first.source).not.toMatch(/modified/);
      const file = path.join(root, entry);
      appendFileSync(file, language === 'Python' ? '# edited\n' : '// edited\n');
      const later = new Date(Date.now() + 5000);
      utimesSync(file, later, later);
      const second = await pyOk(dk, 'python_continue', { sessionId });
      expect(second).toMatchObject({ hit: true, frameInfo: { line } });
      expect(second.source).toContain(`(the source file was modified after the program was ${since}: its lines shown may not be the code that runs (start a new session to run the new code))`);
      await pyOk(dk, 'python_end_session', { sessionId });
    }, 180_000);
  }
});
