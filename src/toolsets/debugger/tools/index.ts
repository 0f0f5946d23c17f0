import { setBreakpointTool, continueTool, stepForwardTool, stepBackwardTool, interruptTool } from './execution.js';
import { attachTool, detachTool, launchTool } from './process.js';
import { stackTraceTool, variablesTool } from './inspect.js';
import { bookmarkTool, exportTraceTool, lastChangeTool } from './history.js';
import { findSimilarBugsTool } from './bugs.js';
import { auditTool, licenseInfoTool, quotaStatusTool } from './control.js';
import type { DebuggerTool } from './common.js';

/** kindly-debugger's twelve tools first (in its order), then debugkit's additions. */
export const debuggerTools: DebuggerTool[] = [
  attachTool,
  setBreakpointTool,
  continueTool,
  stepForwardTool,
  stepBackwardTool,
  stackTraceTool,
  variablesTool,
  findSimilarBugsTool,
  exportTraceTool,
  quotaStatusTool,
  licenseInfoTool,
  auditTool,
  launchTool,
  detachTool,
  interruptTool,
  lastChangeTool,
  bookmarkTool,
];
