import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, TestClient, connectStdio } from './helpers/client.js';
import { KEPLOY_FIXTURES, SUPPORT_BUNDLES } from './helpers/fixtures.js';

const run = promisify(execFile);

/**
 * Issue 19: the toolsets load their engines (gdb sessions, the bundle store's tar and API server,
 * the Keploy reader, the debugger's sessions and artefact scanner) on first use, and a stdio server
 * run as a client's configuration runs it (no --data-dir: the default store) opens its control
 * store after start. Here, as a client sees it over stdio: the catalog is listed whole at once and
 * the same as a server that opened its store first lists it; each toolset works on its first call;
 * and every one of those calls is in the audit, which verifies.
 */
describe('stdio start-up with toolsets loaded on first use (issue 19)', () => {
  let home: string;
  let root: string;
  let env: Record<string, string>;
  let client: TestClient;
  let transport: StdioClientTransport;
  let stderr = '';

  beforeAll(async () => {
    home = mkdtempSync(path.join(os.tmpdir(), 'debugkit-startup-lazy-'));
    root = path.join(home, 'root');
    mkdirSync(path.join(root, 'artefacts'), { recursive: true });
    cpSync(KEPLOY_FIXTURES, path.join(root, 'keploy'), { recursive: true });
    copyFileSync(path.join(SUPPORT_BUNDLES, 'support-bundle.tar.gz'), path.join(root, 'bundle.tar.gz'));
    // The default data directory (XDG_DATA_HOME), as with no --data-dir: the store opens after start.
    env = { ...(process.env as Record<string, string>), XDG_DATA_HOME: path.join(home, 'data'), XDG_CACHE_HOME: path.join(home, 'cache'), DEBUGKIT_STORE: '' };
    transport = new StdioClientTransport({ command: process.execPath, args: [CLI, '--root', root, '--bundle-dir', path.join(home, 'bundles')], env, stderr: 'pipe' });
    transport.stderr!.on('data', (d) => (stderr += d));
    const sdk = new Client({ name: 'startup-lazy', version: '1' });
    await sdk.connect(transport);
    client = new TestClient(sdk, transport.pid ?? undefined);
  });

  afterAll(async () => {
    await client?.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('lists every toolset at once, exactly as a server that opened its store before serving', async () => {
    const listed = await client.client.listTools();
    const names = listed.tools.map((t) => t.name);
    for (const name of ['list_sessions', 'open', 'python_start_session', 'initialize_bundle', 'list_files', 'keploy_list_mocks', 'keploy_mock_test', 'debugger_launch']) {
      expect(names).toContain(name);
    }
    // --data-dir: the store is opened before the server serves (the way every server did before issue 19).
    const eager = await connectStdio({ root, args: ['--bundle-dir', path.join(home, 'bundles')] });
    try {
      expect(listed).toEqual(await eager.client.listTools());
    } finally {
      await eager.close();
    }
  });

  it('each toolset works on its first call', async () => {
    // gdb: the MI session loads with the first open.
    const opened = await client.tool('open', {});
    expect(opened.isError, opened.text).toBe(false);
    expect((await client.tool('list_sessions')).text).toContain(opened.structured.content.id);
    expect((await client.tool('close', { id: opened.structured.content.id })).isError).toBe(false);

    // python: a call that reaches the service (no such session).
    const python = await client.tool('python_get_session', { sessionId: 'no-such-session' });
    expect(python.isError).toBe(true);
    expect(python.text).toMatch(/no-such-session/);

    // bundles: tar and the bundle's API server load with the first bundle; the file tools with their first call.
    const bundle = await client.tool('initialize_bundle', { source: 'bundle.tar.gz' });
    expect(bundle.isError, bundle.text).toBe(false);
    const files = await client.tool('list_files', { path: '.' });
    expect(files.isError, files.text).toBe(false);
    expect(files.structured.metadata.total_files + files.structured.metadata.total_dirs).toBeGreaterThan(0);

    // mocks: the Keploy reader loads with the first listing.
    const mocks = await client.tool('keploy_list_mocks', { path: './keploy' });
    expect(mocks.structured).toMatchObject({ success: true });
    expect(mocks.structured.mockSets).toEqual(expect.arrayContaining(['mux-sql', 'mux-elasticsearch']));

    // debugger: its control (the store, opened after start) and the artefact scanner on first use.
    const quota = await client.tool('debugger_quota_status');
    expect(quota.isError, quota.text).toBe(false);
    // After the scan of an empty directory there is no crash to compare: the contract's -32005, as a tool result the model sees.
    const similar = await client.tool('debugger_find_similar_bugs', { search_path: 'artefacts' });
    expect(similar.isError).toBe(true);
    expect(similar.text).toMatch(/^Not attached \(code -32005\): no crash to compare/);

    expect(stderr).not.toMatch(/not audited/);
  });

  it('every call is in the audit, written by the store opened after start, and the chain verifies', async () => {
    const { stdout } = await run(process.execPath, [CLI, 'audit', 'export'], { env, timeout: 30_000 });
    const entries = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event: string; tool: string });
    const called = entries.filter((e) => e.event === 'call').map((e) => e.tool);
    expect(called).toEqual(['open', 'list_sessions', 'close', 'python_get_session', 'initialize_bundle', 'list_files', 'keploy_list_mocks', 'debugger_quota_status', 'debugger_find_similar_bugs']);
    await run(process.execPath, [CLI, 'audit', 'verify'], { env, timeout: 30_000 });
  });
});
