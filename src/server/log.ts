import type { Config } from '../config.js';

const ORDER = { error: 0, warn: 1, info: 2, debug: 3 } as const;
export type LogLevel = keyof typeof ORDER;

/** Logs go to stderr only: on stdio, stdout carries JSON-RPC and nothing else. */
export interface Logger {
  error(msg: string): void;
  warn(msg: string): void;
  info(msg: string): void;
  debug(msg: string): void;
}

export function createLogger(level: Config['logLevel']): Logger {
  const write = (at: LogLevel) => (msg: string) => {
    if (ORDER[at] <= ORDER[level]) process.stderr.write(`debugkit ${at}: ${msg}\n`);
  };
  return { error: write('error'), warn: write('warn'), info: write('info'), debug: write('debug') };
}
