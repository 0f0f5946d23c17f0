import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { McpServer } from '@modelcontextprotocol/server';
import { ProtocolError as McpError } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { installRpcHooks, registerToolAlias, rpcErrorResult } from './rpc-hooks.js';

async function connected(): Promise<Client> {
  const server = new McpServer({ name: 't', version: '1' });
  server.registerTool('dbg_echo', { inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  server.registerTool('dbg_fail', { inputSchema: {} }, async () => rpcErrorResult({ code: -32004, message: 'Process not found', data: { details: 'no pid 7' } }));
  registerToolAlias(server, 'dbg/echo', 'dbg_echo');
  installRpcHooks(server);
  const [a, b] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'c', version: '1' });
  await Promise.all([server.connect(a), client.connect(b)]);
  return client;
}

describe('rpc hooks', () => {
  it('calls a tool by its hidden alias, which tools/list does not show', async () => {
    const client = await connected();
    const r = await client.callTool({ name: 'dbg/echo', arguments: { text: 'hi' } });
    expect(r.content).toEqual([{ type: 'text', text: 'hi' }]);
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['dbg_echo', 'dbg_fail']);
    // SDK v2 answers an unknown tool with a JSON-RPC error (-32602), not an isError result.
    await expect(client.callTool({ name: 'dbg/nothing', arguments: {} })).rejects.toMatchObject({ code: -32602 });
  });

  it('turns a marked result into a JSON-RPC error with code and data', async () => {
    const client = await connected();
    const err = await client.callTool({ name: 'dbg_fail', arguments: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).code).toBe(-32004);
    expect((err as McpError).data).toEqual({ details: 'no pid 7' });
  });
});
