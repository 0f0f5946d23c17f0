import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Debugkit } from './createServer.js';

/** Serves one client over stdin/stdout; the client closing stdin ends the server. */
export async function serveStdio(dk: Debugkit, onEnd: (reason: string) => void): Promise<void> {
  const server = dk.connect('stdio');
  const transport = new StdioServerTransport();
  transport.onclose = () => onEnd('the client closed the connection');
  process.stdin.once('end', () => onEnd('stdin closed'));
  process.stdin.once('close', () => onEnd('stdin closed'));
  await server.connect(transport);
}
