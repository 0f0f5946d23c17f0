import { statSync } from 'node:fs';

/** Which running processes a session may attach to (--allow-attach): debugkit's own user's, any, or none. */
export type AttachRule = 'same-user' | 'any' | 'none';

/** Why attaching to `pid` is refused: it does not exist, or the rule does not allow it. */
export interface AttachRefusal {
  reason: 'not-found' | 'denied';
  message: string;
}

/**
 * The one check of whether a session may attach to a process it did not start (the debugger
 * toolset's attach and the python toolset's Node.js attach): the process exists, is not debugkit,
 * and the operator's rule allows it. `instead` says what to do when attaching is off.
 */
export function attachRefusal(pid: number, rule: AttachRule, instead: string): AttachRefusal | undefined {
  let uid: number;
  try {
    uid = statSync(`/proc/${pid}`).uid;
  } catch {
    return { reason: 'not-found', message: `no process with pid ${pid} exists` };
  }
  if (pid === process.pid) return { reason: 'denied', message: `pid ${pid} is debugkit itself` };
  if (rule === 'none') return { reason: 'denied', message: `attaching is disabled on this server (the operator did not give --allow-attach); ${instead}` };
  const me = process.getuid?.() ?? -1;
  if (rule === 'same-user' && uid !== me) {
    return { reason: 'denied', message: `process ${pid} belongs to uid ${uid}, not to debugkit's user (uid ${me}); only processes of debugkit's own user can be attached` };
  }
  return undefined;
}
