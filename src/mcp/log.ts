import { writeSync } from 'node:fs';
import { pino, type Logger as Pino } from 'pino';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

/** Fields a structured log line may carry beside its message. */
export interface LogFields {
  requestId?: string | number;
  keyId?: string;
  tool?: string;
  durationMs?: number;
  [key: string]: unknown;
}

/**
 * Logs go to stderr only (on stdio, stdout carries JSON-RPC and nothing else), as JSON lines
 * from pino. A failing stderr (closed pipe: EPIPE) is never fatal: the line is dropped and logging
 * stops, so the server never spins on its own error reports.
 */
export interface Logger {
  error(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
  /** A logger whose every line carries `fields` (e.g. a request id and key id). */
  child(fields: LogFields): Logger;
}

/** Synchronous writes to fd 2; the first failure switches the sink off for good. */
export class StderrSink {
  broken = false;
  constructor(private readonly fd = 2) {}
  write(line: string): void {
    if (this.broken) return;
    try {
      writeSync(this.fd, line);
    } catch {
      this.broken = true;
    }
  }
}

/** One sink per process: a closed stderr stays closed for every logger. */
const stderrSink = new StderrSink();

export function createLogger(level: LogLevel, sink: { write(line: string): void } = stderrSink): Logger {
  return wrap(pino({ level, base: { name: 'debugkit' }, timestamp: pino.stdTimeFunctions.isoTime }, sink));
}

function wrap(p: Pino): Logger {
  const at =
    (lvl: LogLevel) =>
    (msg: string, fields?: LogFields): void => {
      try {
        if (fields) p[lvl](fields, msg);
        else p[lvl](msg);
      } catch {
        // A logger must never throw into the code that logs.
      }
    };
  return {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    child: (fields) => wrap(p.child(fields)),
  };
}

/**
 * Makes the process survive a closed stderr/stdout: write errors (EPIPE) on either stream are
 * swallowed instead of becoming uncaught exceptions that would be logged to the broken stream again.
 */
export function guardStdStreams(): void {
  process.stderr.on('error', () => {
    stderrSink.broken = true;
  });
  process.stdout.on('error', () => undefined);
}
