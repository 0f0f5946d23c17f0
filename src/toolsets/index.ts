import type { ToolsetFactory } from '../mcp/toolset.js';
import { bundlesToolset } from './bundles/index.js';
import { debuggerToolset } from './debugger/index.js';
import { gdbToolset } from './gdb/index.js';
import { mocksToolset } from './mocks/index.js';
import { pythonToolset } from './python/index.js';

/** The one list of toolsets. Order is the order tools are listed in. */
export const toolsetFactories: ToolsetFactory[] = [gdbToolset, pythonToolset, bundlesToolset, mocksToolset, debuggerToolset];
