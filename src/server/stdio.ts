import type { Readable, Writable } from 'node:stream';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/core';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { serveStdio as sdkServeStdio } from '@modelcontextprotocol/server/stdio';
import type { Debugkit } from './createServer.js';
import { LOCAL_PRINCIPAL } from './createServer.js';
import { deniedCall } from './gate.js';
import { jsonShapeProblem } from './rest.js';

/** The SDK's stdio limit for one message; a longer line is answered with an error and skipped. */
export const STDIO_MAX_LINE_BYTES = 10 * 1024 * 1024;

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

type Reply = (message: JSONRPCMessage) => void;

/**
 * Newline-delimited JSON-RPC over a pair of streams, robust where the SDK's transport is not:
 * a line over the limit is answered with -32600 and skipped (the server goes on), a line that is
 * not JSON gets -32700, one that is not JSON-RPC gets -32600, and a broken stdout (EPIPE) ends
 * the connection instead of throwing. `gate` may answer a request itself (authorization).
 */
export class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Set while skipping the rest of an over-long line; holds its first bytes (to find its id). */
  private skipping: string | undefined;
  private closed = false;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly options: {
      maxLineBytes?: number;
      gate?: (message: JSONRPCMessage, reply: Reply) => boolean;
      /** Called once when the input ends or the output breaks (the SDK owns `onclose`). */
      onEnd?: (reason: string) => void;
    } = {},
  ) {}

  async start(): Promise<void> {
    this.input.on('data', this.onData);
    this.input.on('error', this.onInputEnd);
    this.input.on('end', this.onInputEnd);
    this.input.on('close', this.onInputEnd);
    this.output.on('error', this.onOutputError);
  }

  private readonly onData = (chunk: Buffer): void => {
    const max = this.options.maxLineBytes ?? STDIO_MAX_LINE_BYTES;
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      if (this.skipping !== undefined) {
        this.tooLong(this.skipping, max);
        this.skipping = undefined;
        continue;
      }
      if (this.buffered + piece.length > max) {
        this.tooLong(this.head(piece), max);
        this.reset();
        continue;
      }
      const line = this.buffered === 0 ? piece.toString('utf8') : Buffer.concat([...this.chunks, piece]).toString('utf8');
      this.reset();
      this.handleLine(line);
      if (this.closed) return;
    }
    const rest = chunk.subarray(start);
    if (rest.length === 0) return;
    if (this.skipping !== undefined) return;
    if (this.buffered + rest.length > max) {
      this.skipping = this.head(rest);
      this.reset();
      return;
    }
    this.chunks.push(Buffer.from(rest));
    this.buffered += rest.length;
  };

  private head(piece: Buffer): string {
    const first = this.chunks[0] ?? piece;
    return first.subarray(0, 256).toString('utf8');
  }

  private reset(): void {
    this.chunks = [];
    this.buffered = 0;
  }

  private tooLong(head: string, max: number): void {
    this.reply({
      jsonrpc: '2.0',
      id: idInHead(head),
      error: { code: INVALID_REQUEST, message: `Invalid Request: message over the ${max}-byte limit for one stdio line; it was skipped` },
    } as unknown as JSONRPCMessage);
  }

  private handleLine(line: string): void {
    if (line.trim() === '') return;
    // Judged before JSON.parse, as an HTTP body is (rest.ts jsonShapeProblem): depth, members, values.
    const shape = jsonShapeProblem(line);
    if (shape) return this.reply(errorReply(idInHead(line.slice(0, 256)), INVALID_REQUEST, `Invalid Request: message refused: ${shape}`));
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      return this.reply(errorReply(null, PARSE_ERROR, `Parse error: ${err instanceof Error ? err.message : 'invalid JSON'}`));
    }
    if (Array.isArray(value)) {
      return this.reply(errorReply(null, INVALID_REQUEST, 'Invalid Request: JSON-RPC batches are not supported; send one message per line'));
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      const id = requestId(value);
      return this.reply(errorReply(id, INVALID_REQUEST, `Invalid Request: not a JSON-RPC 2.0 message (${describeShape(value)})`));
    }
    const message = parsed.data as JSONRPCMessage;
    if (this.options.gate?.(message, (m) => this.reply(m))) return;
    try {
      this.onmessage?.(message);
    } catch (err) {
      this.onerror?.(err instanceof Error ? err : new Error(String(err)));
    }
  }

  private reply(message: JSONRPCMessage): void {
    void this.send(message);
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || this.output.destroyed || !this.output.writable) return Promise.resolve();
    return new Promise((resolve) => {
      let ok: boolean;
      try {
        ok = this.output.write(`${JSON.stringify(message)}\n`);
      } catch {
        return resolve();
      }
      if (ok) resolve();
      else {
        const done = () => {
          this.output.off('drain', done);
          this.output.off('close', done);
          resolve();
        };
        this.output.once('drain', done);
        this.output.once('close', done);
      }
    });
  }

  private readonly onInputEnd = (): void => {
    this.options.onEnd?.('stdin closed');
    void this.close();
  };

  private readonly onOutputError = (): void => {
    // The client went away (EPIPE): nobody can read an answer any more.
    this.options.onEnd?.('stdout closed');
    void this.close();
  };

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.input.off('data', this.onData);
    this.input.off('error', this.onInputEnd);
    this.input.off('end', this.onInputEnd);
    this.input.off('close', this.onInputEnd);
    this.onclose?.();
  }
}

function errorReply(id: unknown, code: number, message: string): JSONRPCMessage {
  return { jsonrpc: '2.0', id: id ?? null, error: { code, message } } as unknown as JSONRPCMessage;
}

function requestId(value: unknown): string | number | null {
  const id = (value as { id?: unknown } | null)?.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

function describeShape(value: unknown): string {
  if (value === null || typeof value !== 'object') return `got ${value === null ? 'null' : typeof value}`;
  const v = value as Record<string, unknown>;
  if (v.jsonrpc !== '2.0') return '"jsonrpc" must be "2.0"';
  if ('method' in v && typeof v.method !== 'string') return '"method" must be a string';
  if ('id' in v && requestId(v) === null) return '"id" must be a string or a number';
  if ('params' in v && (typeof v.params !== 'object' || v.params === null)) return '"params" must be an object';
  return 'expected a request, a notification or a response';
}

/** Serves one client over stdin/stdout (any protocol version); the client closing stdin ends the server. */
export async function serveStdio(dk: Debugkit, onEnd: (reason: string) => void): Promise<void> {
  const transport = new LineTransport(process.stdin, process.stdout, {
    gate: (message, reply) => {
      const denied = deniedCall(dk, LOCAL_PRINCIPAL, message);
      if (denied) reply(denied);
      return denied !== undefined;
    },
    onEnd,
  });
  sdkServeStdio(() => dk.connect('stdio'), {
    transport,
    onerror: (err) => dk.log.debug(`stdio: ${err.message}`),
  });
}

/** The id a message's first characters give, when it can be read there (the message itself is not parsed), else null. */
function idInHead(head: string): string | number | null {
  const id = /"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")/.exec(head)?.[1];
  return id === undefined ? null : (JSON.parse(id) as string | number);
}
