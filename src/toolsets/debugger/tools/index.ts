import { attachTool } from './attach.js';
import { setBreakpointTool } from './set-breakpoint.js';
import { continueTool } from './continue.js';
import { stepForwardTool } from './step-forward.js';
import { stepBackwardTool } from './step-backward.js';
import { stackTraceTool } from './get-stack-trace.js';
import { variablesTool } from './get-variables.js';
import { findSimilarBugsTool } from './find-similar-bugs.js';
import { exportTraceTool } from './export-trace.js';
import { quotaStatusTool } from './quota-status.js';
import { licenseInfoTool } from './license-info.js';
import { auditTool } from './get-comprehensive-audit.js';
import { launchTool } from './launch.js';
import { detachTool } from './detach.js';
import { interruptTool } from './interrupt.js';
import { lastChangeTool } from './last-change.js';
import { bookmarkTool } from './bookmark.js';
import { evaluateTool } from './evaluate.js';
import { breakpointsTool } from './breakpoints.js';
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
  evaluateTool,
  breakpointsTool,
];
