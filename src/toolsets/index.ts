import type { ToolsetFactory } from '../server/toolset.js';
import { gdbToolset } from './gdb/index.js';

/** The one list of toolsets. Order is the order tools are listed in. */
export const toolsetFactories: ToolsetFactory[] = [gdbToolset];
