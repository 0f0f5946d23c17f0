import * as generic from './generic/index.js';
import * as h2 from './h2/index.js';
import * as http from './http/index.js';
import * as postgres from './postgres/index.js';
import type { Protocol } from './protocol.js';
import * as redis from './redis/index.js';

/**
 * The protocols the mocks toolset records and replays: the one list that sniffing
 * (proxy/sniff.ts), recording (record.ts) and replay (replayers.ts, replay.ts) loop over.
 *
 * The order is replay's: a connection goes to the first replayer that accepts it. HTTP/2 comes
 * before HTTP (HTTP hands it TLS connections that negotiated h2); Generic before Redis (a Redis
 * connection to a target with Generic mocks, from a set recorded before Redis was modeled, is
 * answered by those). Detection and recording do not depend on the order.
 *
 * A new protocol is a folder copied from redis/ and filled in:
 *   1. wire.ts: the framing (where a message ends, its parts) and `detect(buf, final)` for a
 *      connection's first bytes ('maybe' while they are only a prefix). A protocol whose client
 *      waits for the server to speak has none: generic/ takes it (as MySQL, whose framing is in
 *      mysql/wire.ts). Name it in `SniffedProtocol` (proxy/sniff.ts).
 *   2. keploy.ts: its mocks to and from Keploy's YAML; its kind in keploy/types.ts (a schema, or
 *      one of PASS_THROUGH_KINDS kept as read).
 *   3. recorder.ts: forwards the connection to the real server (pipeBoth in proxy/pipe.ts) and
 *      emits one mock per exchange.
 *   4. matcher.ts (an index of the set's mocks, built in TimeSlice slices) and replayer.ts
 *      (answers a connection from it; a miss reaches the real server through dial() in dial.ts).
 *   5. index.ts: `detect`, `recorder` (a ProtocolRecorder) and `replayer` (a ReplayerFactory, its
 *      kind added to ProtocolReplayer's), as redis/index.ts does.
 *   6. One line in PROTOCOLS below; unit tests beside the files (redis/wire.test.ts, redis.test.ts).
 */
export const PROTOCOLS: readonly Protocol[] = [h2, http, postgres, generic, redis];
