import { writeSync } from 'node:fs';

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
 * Logs go to stderr only (on stdio, stdout carries JSON-RPC and nothing else), as JSON lines in
 * pino's layout: {"level":30,"time":"<ISO>","name":"debugkit",<fields>,"msg":"..."}. A failing stderr (closed pipe: EPIPE) is never fatal: the line is dropped and logging
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

/** pino's level numbers, which the lines carry. */
const LEVELS: Record<LogLevel, number> = { error: 50, warn: 40, info: 30, debug: 20 };

/**
 * The logger: a JSON line per message, written synchronously to `sink`, as pino wrote them
 * (pino itself, some twenty modules, was a measurable part of start-up: issue 19).
 */
export function createLogger(level: LogLevel, sink: { write(line: string): void } = stderrSink): Logger {
  return lineLogger(LEVELS[level], { name: 'debugkit' }, sink);
}

function lineLogger(threshold: number, bindings: LogFields, sink: { write(line: string): void }): Logger {
  const at =
    (lvl: LogLevel) =>
    (msg: string, fields?: LogFields): void => {
      if (LEVELS[lvl] < threshold) return;
      const head = { level: LEVELS[lvl], time: new Date().toISOString(), ...bindings };
      let line: string;
      try {
        line = JSON.stringify({ ...head, ...fields, msg });
      } catch {
        // Fields that do not serialise (a cycle, a BigInt) are left out; the message is kept.
        line = JSON.stringify({ ...head, msg });
      }
      try {
        sink.write(`${line}
`);
      } catch {
        // A logger must never throw into the code that logs.
      }
    };
  return {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    child: (fields) => lineLogger(threshold, { ...bindings, ...fields }, sink),
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
