import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { descendants, waitFor } from './helpers/procs.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { compileC, tempDir } from './helpers/programs.js';
import { RawStdioServer } from './helpers/raw-stdio.js';

let root: string;
beforeAll(() => {
  root = tempDir();
  compileC(root, 'spin');
});

describe('MCP protocol features', () => {
  for (const version of ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25']) {
    it(`negotiates protocol version ${version}`, async () => {
      const server = new RawStdioServer([]);
      try {
        const init = await server.request('initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: 'v', version: '1' } });
        expect(init.result.protocolVersion).toBe(version);
        expect(init.result.serverInfo.name).toBe('debugkit');
        expect(init.result.capabilities).toMatchObject({ tools: {}, resources: {}, logging: {} });
      } finally {
        server.proc.stdin!.end();
        await server.exited();
      }
    });
  }

  it('answers an unknown protocol version with its latest', async () => {
    const server = new RawStdioServer([]);
    try {
      const init = await server.request('initialize', { protocolVersion: '1999-01-01', capabilities: {}, clientInfo: { name: 'v', version: '1' } });
      expect(init.result.protocolVersion).toBe('2025-11-25');
    } finally {
      server.proc.stdin!.end();
      await server.exited();
    }
  });

  describe('long calls', () => {
    let dk: TestClient;
    beforeAll(async () => {
      dk = await connectStdio({ root });
    });
    afterAll(async () => {
      await dk?.close();
    });

    it('sends progress while waiting for a program to stop', async () => {
      const { id } = await dk.ok('open', { program: 'spin' });
      const progress: number[] = [];
      const result = await dk.client.callTool({ name: 'call', arguments: { id, command: 'run', wait: 2.5 } }, undefined, {
        onprogress: (p) => progress.push(p.progress),
      });
      expect((result.structuredContent as any).content.state).toBe('running');
      // Timing decides how many arrive; at least one must, and they only grow.
      expect(progress.length).toBeGreaterThanOrEqual(1);
      expect([...progress].sort((a, b) => a - b)).toEqual(progress);
      await dk.ok('close', { id });
    });

    it('stops waiting when the client cancels, and the session stays usable', async () => {
      const { id } = await dk.ok('open', { program: 'spin' });
      const abort = new AbortController();
      const started = Date.now();
      // Cancelled once the program runs (not after a fixed time: a slow start left the interrupt below nothing to stop yet).
      void waitFor(() => descendants(dk.serverPid!).some((p) => / \S*\/spin\s*$/.test(` ${p.args}`)), 30_000, 20).then(() => abort.abort('enough'));
      await expect(dk.client.callTool({ name: 'call', arguments: { id, command: 'run', wait: 60 } }, undefined, { signal: abort.signal })).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(10_000);
      // The interrupt answers at the stop; a loaded machine may take longer than the default bound to deliver it.
      const interrupted = await dk.ok('call', { id, command: '-exec-interrupt', wait: 30 });
      // Right after a cancelled `run` the program may still be starting (seen stopped in ld.so's _start): the interrupt's
      // answer can come before its stop, which gdb_wait then gives.
      const stop = interrupted.state === 'running' ? await dk.ok('gdb_wait', { id, timeout: 30 }) : interrupted;
      expect(stop.state, JSON.stringify(stop)).toBe('stopped');
      await dk.ok('close', { id });
    });

    it('sends log messages at the level the client set', async () => {
      const seen: Array<{ level: string; data: unknown }> = [];
      dk.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void seen.push(n.params));
      await dk.client.setLoggingLevel('warning');
      const quiet = await dk.ok('open', {});
      await dk.client.setLoggingLevel('info');
      const loud = await dk.ok('open', {});
      await waitFor(() => seen.length > 0, 2000);
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ level: 'info', data: expect.stringContaining(`gdb session ${loud.id} started`) });
      await dk.ok('close', { id: quiet.id });
      await dk.ok('close', { id: loud.id });
    });
  });
});
