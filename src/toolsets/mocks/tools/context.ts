import type { Config } from '../../../config.js';
import type { Logger } from '../../../mcp/log.js';
import type { CallContext } from '../../../mcp/tools.js';

/** What the mocks tools share. */
export interface MocksContext {
  config: Config;
  log: Logger;
}

/** A call's warnings (a CA that could not be trusted, a protocol not recorded): to the server's log and to the calling client. */
export function warnFor(ctx: MocksContext, call: CallContext): (message: string) => void {
  return (message) => {
    ctx.log.warn(`mocks: ${message}`);
    call.client.notify('warning', message);
  };
}
