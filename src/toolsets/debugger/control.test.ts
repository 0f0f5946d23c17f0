import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { McpServer } from '@modelcontextprotocol/server';
import { ProtocolError as McpError } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../../config.js';
import { createLogger } from '../../mcp/log.js';
import { installRpcHooks } from '../../mcp/rpc-hooks.js';
import { JsonSignatureStore, localControl, type DebuggerControl } from './control.js';
import { DebuggerRpcError } from './errors.js';
import { debuggerToolsetWith } from './index.js';
import { makeSignature } from './similar/signature.js';

async function clientWith(control: DebuggerControl): Promise<Client> {
  const dir = mkdtempSync(path.join(tmpdir(), 'debugkit-ctl-'));
  const toolset = debuggerToolsetWith(control).create({ config: defaultConfig({ root: dir }), log: createLogger('error') });
  const server = new McpServer({ name: 't', version: '1' });
  toolset.register(server, { owner: 'o', notify: () => undefined });
  installRpcHooks(server);
  const [a, b] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'c', version: '1' });
  await Promise.all([server.connect(a), client.connect(b)]);
  return client;
}

describe('the control-plane interface', () => {
  it("answers the contract's quota and license errors as JSON-RPC errors, with their data", async () => {
    const base = localControl(mkdtempSync(path.join(tmpdir(), 'debugkit-ctl-')));
    const quota: DebuggerControl = {
      ...base,
      quota: async () => {
        throw new DebuggerRpcError('QUOTA_EXCEEDED', 'the key used its 10000 requests', { limit: 10000, used: 10000, reset_at: '2024-12-01T00:00:00Z' });
      },
    };
    let err = await (await clientWith(quota)).callTool({ name: 'debugger/quota_status', arguments: {} }).catch((e: unknown) => e);
    expect((err as McpError).code).toBe(-32002);
    expect((err as McpError).message).toContain('Quota exceeded');
    expect((err as McpError).data).toMatchObject({ limit: 10000, used: 10000, reset_at: '2024-12-01T00:00:00Z' });
    const expired: DebuggerControl = {
      ...base,
      license: async () => {
        throw new DebuggerRpcError('LICENSE_EXPIRED', 'the key expired on 2026-01-01', { expires_at: '2026-01-01T00:00:00Z' });
      },
    };
    err = await (await clientWith(expired)).callTool({ name: 'debugger/license_info', arguments: {} }).catch((e: unknown) => e);
    expect((err as McpError).code).toBe(-32010);
    // By the MCP names, the same failures are tool results the model sees: the code, what failed, the contract's fields.
    const visible = await (await clientWith(quota)).callTool({ name: 'debugger_quota_status', arguments: {} });
    expect(visible.isError).toBe(true);
    expect(visible.content).toEqual([{ type: 'text', text: 'Quota exceeded (code -32002): the key used its 10000 requests (limit: 10000, used: 10000, reset_at: 2024-12-01T00:00:00Z)' }]);
    const license = await (await clientWith(expired)).callTool({ name: 'debugger_license_info', arguments: {} });
    expect(license).toMatchObject({ isError: true, content: [{ type: 'text', text: 'License expired (code -32010): the key expired on 2026-01-01 (expires_at: 2026-01-01T00:00:00Z)' }] });
  });

  it('keeps signatures in a JSON file written atomically, across instances', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'debugkit-sig-')), 'sub', 'signatures.json');
    const store = new JsonSignatureStore(file);
    await store.add('local', makeSignature('SIGSEGV', ['walk', 'main'], 'test'));
    await store.add('local', makeSignature('SIGFPE', ['divide', 'main'], 'test'));
    await store.add('other', makeSignature('SIGABRT', ['explode', 'main'], 'test'));
    expect(JSON.parse(readFileSync(file, 'utf8')).signatures).toHaveLength(3);
    expect((await new JsonSignatureStore(file).list('local')).map((s) => s.signature)).toEqual(['SIGSEGV | walk | main', 'SIGFPE | divide | main']);
    // Each key sees only its own.
    expect((await new JsonSignatureStore(file).list('other')).map((s) => s.signature)).toEqual(['SIGABRT | explode | main']);
  });
});
