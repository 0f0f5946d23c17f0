import type { DebugProtocol } from '@vscode/debugprotocol';
import { TimeoutError, describeError } from '../errors.js';
import { boundPromise } from '../wait.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each reverse request has its own arguments
export type ReverseHandler = (args: any, request: DebugProtocol.Request) => unknown;

/** The response to a reverse request, minus the `seq` the connection assigns when it sends it. */
export type ReverseReply = Omit<DebugProtocol.Response, 'seq' | 'type'>;

/**
 * Produces the answer to a request the adapter sent us. Never rejects and always settles within
 * `timeoutMs`: an adapter waiting for an answer that never comes would stall (debugpy, for one,
 * waits for the launcher that `runInTerminal` should have started).
 */
export async function answerReverseRequest(request: DebugProtocol.Request, handler: ReverseHandler | undefined, timeoutMs: number): Promise<ReverseReply> {
  const base = { request_seq: request.seq, command: request.command };
  if (!handler) {
    return { ...base, success: false, message: `debugkit does not support the "${request.command}" request` };
  }
  try {
    // Promise.resolve().then: a handler that throws synchronously is handled like one that rejects.
    const outcome = await boundPromise(
      Promise.resolve().then(() => handler(request.arguments, request)),
      { timeoutMs },
    );
    if (outcome.kind !== 'value') throw new TimeoutError(`debugkit's "${request.command}" handler did not finish within ${timeoutMs} ms`);
    const body = outcome.value;
    return body === undefined ? { ...base, success: true } : { ...base, success: true, body };
  } catch (err) {
    return { ...base, success: false, message: describeError(err) };
  }
}
