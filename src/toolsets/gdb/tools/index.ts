import type { Config } from '../../../config.js';
import type { SessionRegistry } from '../../../core/sessions.js';
import type { Logger } from '../../../mcp/log.js';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { GdbSession } from '../session.js';
import { callTool } from './call.js';
import { closeTool } from './close.js';
import { listSessionsTool } from './list-sessions.js';
import { openTool } from './open.js';
import { programOutputTool } from './program-output.js';
import { waitTool } from './wait.js';

/** What every gdb tool can reach. */
export interface GdbContext {
  registry: SessionRegistry<GdbSession>;
  config: Config;
  execWrapper: string;
  log: Logger;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const gdbTools: Array<(ctx: GdbContext) => ToolSpec<any, any>> = [openTool, callTool, closeTool, listSessionsTool, waitTool, programOutputTool];
