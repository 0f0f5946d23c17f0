import { EventEmitter } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import { DebugkitError } from '../errors.js';
import { LineSplitter } from '../lines.js';
import { PendingTable } from '../pending.js';
import { parseMiLine, type MiRecord } from './parser.js';

export type ResultRecord = Extract<MiRecord, { kind: 'result' }>;
export type AsyncRecord = Extract<MiRecord, { kind: 'exec' | 'status' | 'notify' }>;

/**
 * The longest line of gdb's read as MI: an answer holds about 100,000 characters, and parsing a
 * 16 MB record (`-data-read-memory-bytes` of 8 MB) held every other client about 0.5 s (bench
 * liveness). A longer result record is answered as an error that says so; a longer stream record
 * is kept cut, with a note; any other is dropped, with a note.
 */
export const MAX_MI_LINE = 1024 * 1024;
/** What of a cut stream record is kept. */
const CUT_STREAM_HEAD = 4096;

/**
 * Owns the MI channel of one gdb: splits stdout into lines, parses them, matches result records to
 * commands by token and emits every other record. Knows nothing about sessions or tools.
 */
export class MiConnection extends EventEmitter<{ record: [MiRecord]; close: [Error] }> {
  private readonly pending = new PendingTable<number, ResultRecord>();
  private nextToken = 1;
  private readonly lines = new LineSplitter(MAX_MI_LINE);
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
    this.lines.push(chunk, (line, total) => this.onLine(total > line.length ? cutRecord(line, total) : line));
  }

  private onLine(line: string): void {
    if (line.length === 0) return;
    const record = parseMiLine(line);
    if (record.kind === 'result' && record.token !== undefined && this.pending.resolve(record.token, record)) return;
    this.emit('record', record);
  }
}

/**
 * An MI line for one gdb cut at MAX_MI_LINE (`total` characters long): a result record becomes an
 * error of its command, saying why and what to do; a stream record keeps its head, closed, with a
 * note; any other record becomes a note on gdb's log stream.
 */
function cutRecord(head: string, total: number): string {
  const said = `gdb's answer was one line of ${total} characters, over the ${MAX_MI_LINE} debugkit reads`;
  const result = /^(\d*)\^/.exec(head);
  if (result) return `${result[1]}^error,msg=${quoteMiString(`${said}: ask for less (fewer bytes, elements or frames)`)}`;
  if (/^[~@&]"/.test(head)) {
    let kept = head.slice(0, CUT_STREAM_HEAD);
    // Not inside an escape: an odd run of backslashes at the end would escape the closing quote.
    let slashes = 0;
    while (kept[kept.length - 1 - slashes] === '\\') slashes++;
    if (slashes % 2 === 1) kept = kept.slice(0, -1);
    return `${kept}...${quoteMiString(`[cut: ${said}]`).slice(1, -1)}\\n"`;
  }
  return `&${quoteMiString(`debugkit: a record dropped: ${said}`).slice(0, -1)}\\n"`;
}

/** Quotes text as an MI c-string, for `-interpreter-exec console "..."`. */
export function quoteMiString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}
