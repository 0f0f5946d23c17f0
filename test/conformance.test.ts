import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, startHttpServer, type HttpServer } from './helpers/client.js';

const run = promisify(execFile);
const BIN = path.resolve(import.meta.dirname, '../node_modules/.bin');

/** The generic scenarios of @modelcontextprotocol/conformance that fit any server. */
const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'logging-set-level', 'resources-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'];

describe('MCP conformance suite against debugkit serve', () => {
  let server: HttpServer;
  beforeAll(async () => {
    server = await startHttpServer(['--no-auth']);
  });
  afterAll(async () => {
    await server?.stop();
  });

  for (const scenario of SCENARIOS) {
    it(scenario, async () => {
      const { stdout } = await run(path.join(BIN, 'conformance'), ['server', '--url', server.url, '--scenario', scenario], {
        timeout: 60_000,
      }).catch((err: { stdout?: string; stderr?: string }) => {
        throw new Error(`conformance ${scenario} failed:\n${err.stdout}\n${err.stderr}`);
      });
      const summary = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(stdout);
      expect(summary, stdout).not.toBeNull();
      expect(summary![3]).toBe('0');
      expect(summary![1]).toBe(summary![2]);
    });
  }
});

describe('MCP Inspector CLI as an external client', () => {
  const inspector = (args: string[]) => run(path.join(BIN, 'mcp-inspector'), ['--cli', ...args], { timeout: 60_000 });

  it('lists and calls the tools over stdio', async () => {
    const list = JSON.parse((await inspector(['--method', 'tools/list', '--', process.execPath, CLI])).stdout);
    expect(list.tools.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['open', 'call', 'close', 'list_sessions']));
    const opened = JSON.parse((await inspector(['--method', 'tools/call', '--tool-name', 'open', '--', process.execPath, CLI])).stdout);
    expect(opened.structuredContent).toMatchObject({ type: 'ok', content: { id: expect.stringMatching(/^[0-9a-f-]{36}$/) } });
  });

  it('lists tools and reads a resource over HTTP with the key', async () => {
    const server = await startHttpServer(['--api-key', 'inspector-key']);
    try {
      const common = [server.url, '--transport', 'http', '--header', 'Authorization: Bearer inspector-key'];
      const list = JSON.parse((await inspector([...common, '--method', 'tools/list'])).stdout);
      expect(list.tools.length).toBeGreaterThanOrEqual(4);
      const doc = JSON.parse((await inspector([...common, '--method', 'resources/read', '--uri', 'gdb://commands/mapping'])).stdout);
      expect(doc.contents[0].text).toMatch(/^# /);
      const denied = await inspector([server.url, '--transport', 'http', '--method', 'tools/list']).then(
        () => 'accepted',
        (err: { stdout?: string; stderr?: string }) => `${err.stdout}${err.stderr}`,
      );
      expect(denied).toMatch(/401|Authentication failed|Unauthorized/i);
    } finally {
      await server.stop();
    }
  });
});
