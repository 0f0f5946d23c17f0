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
 *   1. wire.ts: the framing (where a message ends, its parts), and `detect(buf, final)` for the
 *      connection's first bytes ('maybe' while a prefix; none when the server speaks first, as
 *      MySQL, which generic/ then takes). Add its name to `SniffedProtocol` (proxy/sniff.ts).
 *   2. keploy.ts: its mocks to and from Keploy's YAML (a `kind` in keploy/types.ts).
 *   3. recorder.ts: forwards a connection to the real server (pipeBoth) and emits one mock per exchange.
 *   4. matcher.ts (when lookups need an index) and replayer.ts: answer a connection from the mocks.
 *   5. index.ts: `detect`, `recorder` (a ProtocolRecorder) and `replayer` (a ReplayerFactory), as
 *      redis/index.ts does; reach real servers with dial() (dial.ts).
 *   6. One line here, and its unit tests beside its files (redis/redis.test.ts is the model).
 */
export const PROTOCOLS: readonly Protocol[] = [h2, http, postgres, generic, redis];
