import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'vitest';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttpTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdioTransport } from '@modelcontextprotocol/client/stdio';
import { pollUntil } from '../../src/core/wait.js';
import { removeAtFileEnd } from './file-end.js';

export const CLI = path.resolve(import.meta.dirname, '../../dist/cli.js');

/**
 * A private --data-dir for one test server (unless the test gives --data-dir or --store), so the
 * keys in a populated default data directory (~/.local/share/debugkit) never change what it does.
 */
export function privateDataDir(args: string[]): string[] {
  if (args.some((a) => a === '--data-dir' || a === '--store' || a.startsWith('--data-dir=') || a.startsWith('--store='))) return [];
  return ['--data-dir', removeAtFileEnd(mkdtempSync(path.join(os.tmpdir(), 'debugkit-test-data-')))];
}

export interface ToolResult {
  isError: boolean;
  structured: any;
  text: string;
}

/** What TestClient needs of an SDK client: v1 (`@modelcontextprotocol/sdk`) and v2 both fit. */
interface ToolCaller {
  callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<any>;
  close(): Promise<void>;
}

/** The protocol revision of the v2 SDK client (stateless: no initialize, `_meta` on every request). */
export const MODERN_PROTOCOL = '2026-07-28';

/**
 * An MCP client connected to a real debugkit, with one-line tool calls. The connect helpers list
 * the tools first, as real clients do, so the SDK validates every result against its output schema.
 * `TestClient` is the v1 client (protocol up to 2025-11-25); `ModernTestClient` the v2 client (2026-07-28).
 */
export class TestClient<C extends ToolCaller = Client> {
  constructor(
    readonly client: C,
    /** The server's pid when this client started it (stdio). */
    readonly serverPid?: number,
  ) {}

  async tool(name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
    const r = await this.client.callTool({ name, arguments: args });
    const text = (r.content as Array<{ type: string; text?: string }>).map((c) => c.text ?? '').join('');
    return { isError: r.isError === true, structured: r.structuredContent, text };
  }

  /** Calls a tool that must succeed (a mocks tool, say) and returns its structured content. */
  async structured(name: string, args: Record<string, unknown> = {}): Promise<any> {
    const r = await this.tool(name, args);
    expect(r.isError).toBe(false);
    return r.structured;
  }

  /** Calls a gdb-envelope tool and returns `content`, failing loudly if the envelope says error. */
  async ok(name: string, args: Record<string, unknown> = {}): Promise<any> {
    const r = await this.tool(name, args);
    if (r.structured?.type !== 'ok') throw new Error(`${name} ${JSON.stringify(args)} failed: ${r.text}`);
    return r.structured.content;
  }

  /** Calls a gdb-envelope tool that must fail; returns the error message. */
  async fails(name: string, args: Record<string, unknown> = {}): Promise<string> {
    const r = await this.tool(name, args);
    if (r.structured?.type !== 'error' || !r.isError) throw new Error(`${name} ${JSON.stringify(args)} should have failed: ${r.text}`);
    return r.structured.content as string;
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

export async function connectStdio({ args = [], root }: { args?: string[]; root?: string } = {}): Promise<TestClient> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, ...(root ? ['--root', root] : []), ...privateDataDir(args), ...args],
    stderr: 'pipe',
  });
  const client = new Client({ name: 'debugkit-test', version: '1.0.0' });
  await client.connect(transport);
  await client.listTools();
  return new TestClient(client, transport.pid ?? undefined);
}

export type ModernTestClient = TestClient<ModernClient>;

function modernClient(name: string): ModernClient {
  return new ModernClient({ name, version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN_PROTOCOL } } });
}

/** The v2 SDK client over stdio, pinned to protocol 2026-07-28; tools listed first. */
export async function connectStdioModern({ args = [], root }: { args?: string[]; root?: string } = {}): Promise<ModernTestClient> {
  const transport = new ModernStdioTransport({
    command: process.execPath,
    args: [CLI, ...(root ? ['--root', root] : []), ...privateDataDir(args), ...args],
    stderr: 'pipe',
  });
  const client = modernClient('debugkit-test-modern');
  await client.connect(transport);
  await client.listTools();
  return new TestClient(client, transport.pid ?? undefined);
}

/** The v2 SDK client over HTTP, pinned to protocol 2026-07-28; tools listed first. */
export async function connectHttpModern(url: string, key: string): Promise<ModernTestClient> {
  const transport = new ModernHttpTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  const client = modernClient('debugkit-test-modern-http');
  await client.connect(transport);
  await client.listTools();
  return new TestClient(client);
}

export interface HttpServer {
  url: string;
  key: string;
  proc: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

/** Starts `debugkit serve --port 0` and reads the URL and key it prints. */
export async function startHttpServer(args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<HttpServer> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...privateDataDir(args), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DEBUGKIT_STORE: '', ...env },
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  // Ready once it printed its URL and how clients authenticate (a key, stored keys, or --no-auth).
  const ready = () => /serving MCP \(Streamable HTTP\) at https?:\S+[\s\S]*\n(API key|Clients send|WARNING)/.test(out);
  await pollUntil(() => ready() || proc.exitCode !== null, { timeoutMs: 15_000, intervalMs: 50 });
  if (!ready()) throw new Error(proc.exitCode !== null ? `debugkit serve exited (${proc.exitCode}): ${out}` : `debugkit serve did not start: ${out}`);
  const url = /serving MCP \(Streamable HTTP\) at (https?:\S+)/.exec(out)![1]!;
  const key = /API key: (\S+)/.exec(out)?.[1] ?? '';
  return {
    url,
    key,
    proc,
    output: () => out,
    stop: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

export async function connectHttp(url: string, key: string): Promise<TestClient> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name: 'debugkit-test-http', version: '1.0.0' });
  await client.connect(transport);
  await client.listTools();
  return new TestClient(client);
}
