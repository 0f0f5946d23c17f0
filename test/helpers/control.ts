import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startPostgres } from '../../src/toolsets/mocks/postgres/testing.js';
import { pollUntil } from '../../src/core/wait.js';
import { CLI, MODERN_PROTOCOL } from './client.js';

/** Control-plane test helpers: a private data directory, the CLI, nodes, plain JSON-RPC over fetch. */

export async function tempDataDir(): Promise<{ dir: string; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-control-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** stderr with each structured (pino JSON) log line replaced by its message, so tests match the words. */
export function logText(stderr: string): string {
  return stderr
    .split('\n')
    .map((line) => {
      try {
        const entry = JSON.parse(line) as { msg?: unknown };
        return typeof entry.msg === 'string' ? entry.msg : line;
      } catch {
        return line;
      }
    })
    .join('\n');
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr: logText(stderr) });
    });
  });
}

/** `debugkit keys create ... --json`: the key and its record. */
export async function createKey(storeArgs: string[], name: string, scopes: string, extra: string[] = []): Promise<{ key: string; id: string }> {
  const r = await runCli(['keys', 'create', ...storeArgs, '--name', name, '--scopes', scopes, ...extra, '--json']);
  if (r.code !== 0) throw new Error(`keys create failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout) as { key: string; id: string };
}

export interface Node {
  url: string;
  proc: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** `debugkit serve --port 0 ARGS`, ready when it prints its URL. */
export async function startNode(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Node> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const ready = () => /serving MCP \(Streamable HTTP\) at (https?:\S+)[\s\S]*\n(API key|Clients send|WARNING)/.test(out);
  await pollUntil(() => ready() || proc.exitCode !== null, { timeoutMs: 20_000, intervalMs: 50 });
  if (!ready()) throw new Error(proc.exitCode !== null ? `debugkit serve exited (${proc.exitCode}): ${out}` : `debugkit serve did not start: ${out}`);
  return {
    url: /at (https?:\S+)/.exec(out)![1]!,
    proc,
    output: () => out,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

let nextId = 1;

export interface RpcAnswer {
  status: number;
  headers: Headers;
  body: any;
}

/** One JSON-RPC POST, as curl would send it; SSE answers are read to their first message. */
export async function rpc(url: string, key: string, message: object, extraHeaders: Record<string, string> = {}): Promise<RpcAnswer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...extraHeaders },
    body: JSON.stringify(message),
  });
  const text = await res.text();
  let body: any = undefined;
  if (text) {
    const data = /^data: (.*)$/m.exec(text);
    body = JSON.parse(data ? data[1]! : text);
  }
  return { status: res.status, headers: res.headers, body };
}

/** The Tasks extension's identifier, as a client declares it in its capabilities. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

export interface ModernRpcOptions {
  /** Declare the Tasks extension in the request's client capabilities (default: yes). */
  tasks?: boolean;
  clientInfo?: { name: string; version: string };
  signal?: AbortSignal;
}

/**
 * One 2026-07-28 request as a client sends it, without an MCP session: the protocol version, client
 * info and client capabilities (with or without the Tasks extension) in the request's `_meta`, and
 * the routing headers (`Mcp-Method`, `Mcp-Name`: the tool's name or the task's id). Returns the
 * JSON-RPC answer; throws when the answer is not JSON.
 */
export async function modernRpc(url: string, key: string, method: string, params: Record<string, unknown>, options: ModernRpcOptions = {}): Promise<any> {
  const { tasks = true, clientInfo = { name: 'debugkit-test', version: '1.0.0' }, signal } = options;
  const routed = method === 'tools/call' ? params.name : params.taskId;
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL,
    'io.modelcontextprotocol/clientInfo': clientInfo,
    'io.modelcontextprotocol/clientCapabilities': tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
  };
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${key}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': MODERN_PROTOCOL,
      'Mcp-Method': method,
      ...(typeof routed === 'string' ? { 'Mcp-Name': routed } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: { ...(params._meta as object), ...meta } } }),
    ...(signal ? { signal } : {}),
  });
  const text = await res.text();
  if (!/^application\/json/.test(res.headers.get('content-type') ?? ''))
    throw new Error(`${method}: expected a JSON answer, got HTTP ${res.status} ${res.headers.get('content-type')}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** Opens an MCP session with plain requests; returns its id. */
export async function openMcpSession(url: string, key: string): Promise<string> {
  const init = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'plain-fetch', version: '1' } } }),
  });
  await init.text();
  const sid = init.headers.get('mcp-session-id');
  if (!sid) throw new Error(`initialize gave no session (HTTP ${init.status})`);
  const note = await rpc(url, key, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' });
  if (note.status !== 202) throw new Error(`notifications/initialized: HTTP ${note.status}`);
  return sid;
}

export function callTool(url: string, key: string, sid: string, name: string, args: object = {}, headers: Record<string, string> = {}): Promise<RpcAnswer> {
  return rpc(url, key, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } }, { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18', ...headers });
}

export interface Cluster {
  /** The shared store's connection string (for `keys create --store`, `audit export --store`). */
  storeUrl: string;
  /**
   * The nodes' data directory (one, shared): the audit key they hash with (audit.key, made by the
   * first to start) and their checkpoint file. `audit verify --data-dir` it.
   */
  dataDir: string;
  a: Node;
  b: Node;
  stop(): Promise<void>;
}

/**
 * Two debugkit nodes on loopback (`node-a`, `node-b`) sharing one PostgreSQL store started for
 * them; a bootstrap key exists first, so the nodes serve stored keys only. `args` go to both.
 */
export async function startCluster(args: string[] = []): Promise<Cluster> {
  const pg = await startPostgres();
  const data = await tempDataDir();
  const storeUrl = `postgres://${pg.user}:${pg.password}@127.0.0.1:${pg.port}/postgres`;
  const nodes: Node[] = [];
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    await pg.stop();
    await data.cleanup();
  };
  try {
    await createKey(['--store', storeUrl], 'bootstrap', 'gdb:read');
    const started = await Promise.allSettled(['node-a', 'node-b'].map((id) => startNode(['--store', storeUrl, '--node-id', id, '--data-dir', data.dir, ...args])));
    for (const s of started) if (s.status === 'fulfilled') nodes.push(s.value);
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
  } catch (err) {
    await stop();
    throw err;
  }
  return { storeUrl, dataDir: data.dir, a: nodes[0]!, b: nodes[1]!, stop };
}

/** Every audit entry of the store `storeArgs` names (`audit export`), parsed. */
export async function auditEntries(storeArgs: string[]): Promise<any[]> {
  const r = await runCli(['audit', 'export', ...storeArgs]);
  return r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}
