import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI } from './helpers/client.js';

/** The real built command, as a person types it: what comes back on stderr, and the exit code. */
function debugkit(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    child.stdin?.end();
  });
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'debugkit-cli-errors-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('command-line mistakes are one sentence on stderr and a non-zero exit', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['an unknown scope', ['keys', 'create', '--name', 'ci', '--scopes', 'all', '--data-dir', dataDir], /unknown scope "all": valid scopes are \*, gdb/],
    ['an unknown flag', ['--bogus'], /unknown option '--bogus'/],
    ['an unknown flag of a subcommand', ['serve', '--prot', '80'], /unknown option '--prot'/],
    ['a bad value', ['serve', '--port', '99999'], /--port must be an integer from 0 to 65535/],
    ['an unknown toolset', ['--toolsets', 'gdb,nope', '--data-dir', dataDir], /unknown toolset nope: valid toolsets are gdb/],
    ['a key that does not exist', ['keys', 'revoke', 'nobody', '--data-dir', dataDir], /no key with id or name "nobody"/],
    ['half of a pair of options', ['serve', '--tls-cert', 'cert.pem', '--port', '0', '--data-dir', dataDir], /--tls-cert and --tls-key go together/],
  ];

  it.each(cases)('%s', async (_what, args, says) => {
    const r = await debugkit(args);
    expect(r.code).not.toBe(0);
    const lines = r.stderr.split('\n').filter((l) => l.trim());
    expect(lines, r.stderr).toHaveLength(1);
    const [line] = lines as [string];
    expect(line).toMatch(/^debugkit: /);
    expect(line).toMatch(says);
    // Not a log record: no JSON, no level or timestamp fields.
    expect(line).not.toMatch(/^\{|"level"|"time"/);
    expect(r.stdout).toBe('');
  });
});
