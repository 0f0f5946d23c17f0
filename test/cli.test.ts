import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CLI, connectStdio } from './helpers/client.js';

const run = promisify(execFile);
const cli = (args: string[]) => run(process.execPath, [CLI, ...args], { timeout: 30_000 }).catch((err: { code: number; stdout: string; stderr: string }) => err);

describe('the debugkit command', () => {
  it('documents every command and option in --help', async () => {
    const top = (await cli(['--help'])).stdout;
    for (const text of ['serve', 'doctor', '--toolsets', '--root', '--max-sessions']) expect(top).toContain(text);
    const serve = (await cli(['serve', '--help'])).stdout;
    for (const text of ['--host', '--port', '--api-key', '--no-auth', '--allowed-host', '--max-body', '--session-idle', '--session-init-idle', '--max-mcp-sessions', '--max-mcp-sessions-per-key']) {
      expect(serve).toContain(text);
    }
  });

  it('doctor reports gdb with its version, and install commands for what is missing', async () => {
    const result = await cli(['doctor']);
    expect(result.stdout).toMatch(/ok\s+gdb\s+GNU gdb .*13\./);
    expect(result.stdout).toMatch(/ok\s+gcc\s+gcc/);
    for (const line of result.stdout.split('\n').filter((l) => l.startsWith('MISSING'))) {
      const next = result.stdout.split('\n')[result.stdout.split('\n').indexOf(line) + 1]!;
      expect(next).toMatch(/install: apt-get install -y \S+/);
    }
  });

  it('refuses an unknown toolset, naming the valid ones', async () => {
    const result = (await cli(['--toolsets', 'gdb,nope'])) as { code?: number; stderr: string };
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/unknown toolset nope: valid toolsets are gdb/);
  });

  it('refuses a bad option value with what is valid', async () => {
    const result = (await cli(['serve', '--port', '99999'])) as { code?: number; stderr: string };
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/--port must be an integer from 0 to 65535/);
  });

  it('serves only the chosen toolsets', async () => {
    const dk = await connectStdio({ args: ['--toolsets', 'gdb'] });
    try {
      const { tools } = await dk.client.listTools();
      expect(tools.map((t) => t.name)).toContain('open');
    } finally {
      await dk.close();
    }
  });
});
