import { AsyncLocalStorage } from 'node:async_hooks';
import type { ServerContext } from '@modelcontextprotocol/server';
import type { ClientContext } from './toolset.js';

type Level = Parameters<ClientContext['notify']>[0];

interface CallLog {
  client: ClientContext;
  live: boolean;
  send(level: Level, message: string): void;
}

const current = new AsyncLocalStorage<CallLog>();

/**
 * Runs one tool call so that the log messages sent while it runs (`ClientContext.notify`, from the
 * tool or anything it calls, e.g. a toolset's warning callback) can be sent as messages of this
 * request: through the SDK's `mcpReq.log`, which on a 2026-07-28 request sends nothing unless the
 * request's `_meta` carries `io.modelcontextprotocol/logLevel` (and then only at or above it), on
 * that request's own response stream (SEP-2575: "If absent, the server MUST NOT send any
 * notifications/message notifications for this request").
 */
export async function withCallLog<T>(client: ClientContext, extra: ServerContext, run: () => Promise<T>): Promise<T> {
  const log: CallLog = {
    client,
    live: true,
    send: (level, message) => void extra.mcpReq.log(level, message, 'debugkit').catch(() => undefined),
  };
  try {
    return await current.run(log, run);
  } finally {
    // A callback made during the call that fires after it (a gdb that dies later) runs in this
    // context too: the request's stream is gone by then.
    log.live = false;
  }
}

/** The request log of `client`'s tool call running in this async context, while it runs; else undefined. */
export function callLogOf(client: ClientContext): ((level: Level, message: string) => void) | undefined {
  const log = current.getStore();
  return log && log.live && log.client === client ? log.send : undefined;
}
