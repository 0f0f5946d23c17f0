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

describe('compactSchema', () => {
  it('drops $schema, the safe-integer bounds and (for outputs) descriptions, never a property named description', async () => {
    const { compactSchema } = await import('./rpc-hooks.js');
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        description: { type: 'string', description: 'a field called description' },
        n: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
        m: { type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: 10 },
        list: { type: 'array', items: { anyOf: [{ type: 'string', description: 'x' }, { type: 'null' }] } },
      },
      required: ['description'],
    };
    expect(compactSchema(schema, true)).toEqual({
      type: 'object',
      properties: {
        description: { type: 'string' },
        n: { type: 'integer', minimum: 1 },
        m: { type: 'integer', maximum: 10 },
        list: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'null' }] } },
      },
      required: ['description'],
    });
    expect((compactSchema(schema, false) as any).properties.description.description).toBe('a field called description');
  });
});
