import { EventEmitter } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import { DebugkitError } from '../errors.js';
import { LineSplitter } from '../lines.js';
import { PendingTable } from '../pending.js';
import { parseMiLine, type MiRecord } from './parser.js';

export type ResultRecord = Extract<MiRecord, { kind: 'result' }>;
export type AsyncRecord = Extract<MiRecord, { kind: 'exec' | 'status' | 'notify' }>;

/** The longest line kept from gdb; beyond it the line is cut (a runaway value print, not MI). */
const MAX_LINE = 16 * 1024 * 1024;

/**
 * Owns the MI channel of one gdb: splits stdout into lines, parses them, matches result records to
 * commands by token and emits every other record. Knows nothing about sessions or tools.
 */
export class MiConnection extends EventEmitter<{ record: [MiRecord]; close: [Error] }> {
  private readonly pending = new PendingTable<number, ResultRecord>();
  private nextToken = 1;
  private readonly lines = new LineSplitter(MAX_LINE);
  private closed = false;

  constructor(
    private readonly input: Writable,
    output: Readable,
  ) {
    super();
    output.setEncoding('utf8');
    output.on('data', (chunk: string) => this.onData(chunk));
    output.on('close', () => this.close(new DebugkitError('ENGINE_FAILED', 'gdb closed its output')));
    input.on('error', (err) => this.close(new DebugkitError('ENGINE_FAILED', `cannot write to gdb: ${err.message}`)));
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Sends one MI command (without token) and resolves with its result record. `timeoutMs` bounds
   * the wait; records that arrive meanwhile are emitted as usual.
   */
  send(command: string, timeoutMs: number): Promise<ResultRecord> {
    if (this.closed) return Promise.reject(new DebugkitError('ENGINE_FAILED', 'gdb is no longer running'));
    const token = this.nextToken++;
    const reply = this.pending.add(token, timeoutMs, `gdb command "${command.slice(0, 80)}"`);
    this.input.write(`${token}${command}\n`);
    return reply;
  }

  /** Ends the channel: every waiting command fails with `reason`. */
  close(reason: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.pending.rejectAll(reason, true);
    this.emit('close', reason);
  }

  private onData(chunk: string): void {
    this.lines.push(chunk, (line) => this.onLine(line));
  }

  private onLine(line: string): void {
    if (line.length === 0) return;
    const record = parseMiLine(line);
    if (record.kind === 'result' && record.token !== undefined && this.pending.resolve(record.token, record)) return;
    this.emit('record', record);
  }
}

/** Quotes text as an MI c-string, for `-interpreter-exec console "..."`. */
export function quoteMiString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}
