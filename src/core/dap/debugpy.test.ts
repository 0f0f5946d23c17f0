import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { DebugkitError } from '../errors.js';
import { spawnChild, terminate } from '../process.js';
import { DapConnection } from './connection.js';

const PYTHON = '/usr/bin/python3';

function debugpyImportable(): boolean {
  try {
    execFileSync(PYTHON, ['-c', 'import debugpy'], { stdio: 'ignore', timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}

// A smoke test of the DAP layer against a real adapter; the python toolset has the full e2e tests.
describe('DapConnection against debugpy', () => {
  it('initializes debugpy.adapter over stdio, reads its capabilities and disconnects', async () => {
    // Never skipped: a machine without debugpy must fail loudly with the fix, not pass quietly.
    expect(debugpyImportable(), `${PYTHON} cannot import debugpy; install it with: apt-get install -y python3-debugpy`).toBe(true);

    const owned = await spawnChild(PYTHON, ['-m', 'debugpy.adapter'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    owned.child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
    const { stdout, stdin } = owned.child;
    if (!stdout || !stdin) throw new Error('spawnChild did not give the adapter stdio pipes');
    const conn = new DapConnection(stdout, stdin, { name: 'debugpy', timeoutMs: 20_000 });
    try {
      const caps = await conn.request('initialize', {
        clientID: 'debugkit',
        clientName: 'debugkit',
        adapterID: 'debugpy',
        linesStartAt1: true,
        columnsStartAt1: true,
        pathFormat: 'path',
      });
      expect(caps, `no capabilities; adapter stderr: ${stderr}`).toBeDefined();
      expect(caps?.supportsConfigurationDoneRequest).toBe(true);
      expect(caps?.exceptionBreakpointFilters?.map((f) => f.filter)).toContain('uncaught');
      await conn.request('disconnect', {});
    } finally {
      conn.close(new DebugkitError('SESSION_CLOSED', 'smoke test finished'));
      await terminate(owned);
    }
  });
});
