import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sleep } from '../core/wait.js';
import { forwardRequest } from './forward.js';

const servers: Server[] = [];
async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
});

/** A front node forwarding every request to `target`, reaching it within `connectTimeoutMs`. */
async function front(target: string, connectTimeoutMs: number): Promise<string> {
  return serve((req, res) => void forwardRequest({ node: 'node-b', url: target }, req, res, { jsonrpc: '2.0', id: 1, method: 'ping' }, 'token', 'node-a', { connectTimeoutMs }));
}

describe('forwardRequest', () => {
  it('waits for a call that takes longer than reaching the node (attack 18k: a 10 s continue was answered "did not answer")', async () => {
    const slow = await serve((_req, res) => void sleep(400).then(() => res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { late: true } }))));
    const answer = await fetch(await front(slow, 100), { method: 'POST' });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ jsonrpc: '2.0', id: 1, result: { late: true } });
  });

  it('says which node holds the session when it cannot be reached', async () => {
    const gone = await serve(() => undefined);
    await new Promise((resolve) => servers.pop()!.close(resolve));
    const answer = await fetch(await front(gone, 100), { method: 'POST' });
    expect(answer.status).toBe(502);
    expect(((await answer.json()) as { error: { message: string } }).error.message).toMatch(
      /^Session is held by node node-b \(http:\/\/127\.0\.0\.1:\d+\/mcp\), which did not answer: connect ECONNREFUSED/,
    );
  });
});
