// The baseline of `npm run bench`'s startup section: a bare MCP server made with the same SDK
// package as debugkit (@modelcontextprotocol/server, served over stdio the same way) and one tool.
// Plain JavaScript, spawned with plain `node` like dist/cli.js, so both pay the same for Node itself.
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

serveStdio(() => {
  const server = new McpServer({ name: 'bare', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.registerTool('echo', { description: 'Echoes its text', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  return server;
});
