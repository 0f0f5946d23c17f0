import { spawn, type ChildProcess } from 'node:child_process';
import { CLI } from './client.js';

/**
 * debugkit over stdio driven by hand (newline-delimited JSON-RPC), for tests that need the
 * server process itself: its pid, its stdin, its signals.
 */
export class RawStdioServer {
  readonly proc: ChildProcess;
  private nextId = 1;
  private buffer = '';
  private waiting = new Map<number, (msg: any) => void>();
  stderr = '';

  constructor(args: string[], env: NodeJS.ProcessEnv = {}) {
    this.proc = spawn(process.execPath, [CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    this.proc.stderr!.on('data', (d) => (this.stderr += d));
    this.proc.stdout!.setEncoding('utf8');
    this.proc.stdout!.on('data', (chunk: string) => {
      this.buffer += chunk;
      let nl: number;
      while ((nl = this.buffer.indexOf('\n')) >= 0) {
        const msg = JSON.parse(this.buffer.slice(0, nl));
        this.buffer = this.buffer.slice(nl + 1);
        if (msg.id !== undefined) this.waiting.get(msg.id)?.(msg);
      }
    });
  }

  get pid(): number {
    return this.proc.pid!;
  }

  request(method: string, params: unknown, timeoutMs = 30_000): Promise<any> {
    const id = this.nextId++;
    this.proc.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${method} got no answer in ${timeoutMs} ms; stderr: ${this.stderr}`)), timeoutMs);
      this.waiting.set(id, (msg) => {
        clearTimeout(timer);
        resolve(msg);
      });
    });
  }

  async initialize(): Promise<void> {
    await this.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } });
    this.proc.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  }

  /** Calls a gdb tool and returns the envelope's content (throws on an error envelope). */
  async tool(name: string, args: Record<string, unknown>): Promise<any> {
    const msg = await this.request('tools/call', { name, arguments: args });
    const body = msg.result?.structuredContent;
    if (body?.type !== 'ok') throw new Error(`${name} failed: ${JSON.stringify(msg)}`);
    return body.content;
  }

  exited(timeoutMs = 15_000): Promise<number | null> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return Promise.resolve(this.proc.exitCode);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not exit in ${timeoutMs} ms`)), timeoutMs);
      this.proc.once('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
  }
}
