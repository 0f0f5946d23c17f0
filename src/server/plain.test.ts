import { McpServer } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { plainFormat } from '../mcp/result-formats.js';
import { registerTool } from '../mcp/tools.js';
import { PlainServers } from './plain.js';

/** A key's plain server with one tool that runs until its call is cancelled (and says when it was). */
function slowServer(cancelled: string[]): () => McpServer {
  return () => {
    const server = new McpServer({ name: 't', version: '1' }, { capabilities: { tools: {} } });
    registerTool(server, { owner: 'o', notify: () => undefined }, plainFormat, {
      name: 'slow',
      title: 'Slow',
      description: 'Runs until cancelled',
      input: {},
      output: {},
      run: (_args, call) =>
        new Promise((_resolve, reject) =>
          call.signal.addEventListener('abort', () => {
            cancelled.push('slow');
            reject(new Error('cancelled'));
          }),
        ),
    });
    return server;
  };
}

describe('PlainServers', () => {
  it('a call whose HTTP client left is cancelled and given up at once: nothing of it stays waiting for an answer the SDK never sends', async () => {
    const plain = new PlainServers();
    const cancelled: string[] = [];
    try {
      const answers = [];
      for (let i = 0; i < 20; i++) {
        const gone = new AbortController();
        const answer = plain.answer('key', slowServer(cancelled), { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'slow', arguments: {} } }, {}, gone.signal);
        setTimeout(() => gone.abort(), 5);
        answers.push(answer);
      }
      // Each settles (before, none did: the entry and the request's body stayed for the server's life).
      const settled = await Promise.all(answers);
      expect(settled.map((a) => (a.error as { code: number }).code)).toEqual(new Array(20).fill(-32800));
      expect(settled.map((a) => a.id)).toEqual([...Array(20).keys()]);
      expect(await plain.pending('key')).toBe(0);
      await expect.poll(() => cancelled.length).toBe(20);
    } finally {
      await plain.close();
    }
  });
});
