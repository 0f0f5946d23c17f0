import type { DebuggerControl } from '../control.js';
import type { DebugSession } from '../session.js';
import { makeSignature } from './signature.js';

/** Stores the signature of the crash `session` just stopped at. */
export async function recordCrash(control: DebuggerControl, session: DebugSession): Promise<void> {
  const crash = session.lastCrash;
  if (!crash) return;
  const sig = makeSignature(
    crash.signal,
    crash.frames.map((f) => f.function),
    `session ${session.id}`,
    session.program,
  );
  await control.signatures.add(session.options.key, sig);
  session.lastCrashSignatureId = sig.id;
}
