import type { Mock } from './keploy/types.js';
import type { ProtocolReplayer, ReplayersOptions } from './protocol.js';
import { PROTOCOLS } from './protocols.js';
import { TimeSlice } from '../../core/wait.js';

/** The replayers of a set, one per protocol, in the order they are asked (protocols.ts). */
export async function replayersFor(mocks: readonly Mock[], o: ReplayersOptions): Promise<ProtocolReplayer[]> {
  // A large set's indexes are built in slices: the server answers others meanwhile.
  const slice = new TimeSlice(SLICE_MS);
  const built: ProtocolReplayer[] = [];
  for (const p of PROTOCOLS) built.push(await p.replayer(mocks, o, { slice, built }));
  return built;
}

/** Index building runs for about this long at a time. */
const SLICE_MS = 10;
