import { dial, DIAL_TIMEOUT_MS } from '../dial.js';
import type { PostgresMock } from '../keploy/types.js';
import { counts, ofKind, type ProtocolRecorder, type ProtocolReplayer, type ReplayerFactory, type ReplayersOptions } from '../protocol.js';
import { ReplayIndex } from './matcher.js';
import { recordPostgres } from './recorder.js';
import { replayPostgres, type UpstreamOptions } from './replayer.js';

/** PostgreSQL: one `Postgres` mock per query group, recorded by the wire protocol and answered from an index of the set. */
export { detect } from './wire.js';

export const recorder: ProtocolRecorder = {
  accepts: (conn) => conn.protocol === 'postgres',
  async record(conn, o) {
    const upstream = await o.dial(conn);
    const result = await recordPostgres(conn, upstream, { onMock: (mock) => o.onMock(mock, 'Postgres'), onDropped: o.onDropped, ...(o.kept ? { kept: o.kept } : {}) });
    if (result.error) o.warn(`recording PostgreSQL at ${conn.target.host}:${conn.target.port}: ${result.error.message}`);
  },
};

export const replayer: ReplayerFactory = (mocks, o) => postgresReplayer(ofKind(mocks, 'Postgres'), o);

function postgresReplayer(mocks: PostgresMock[], o: ReplayersOptions): ProtocolReplayer {
  const index = new ReplayIndex(mocks);
  const c = counts();
  // The start-up answer is made of every start-up mock: each connection started uses them all.
  const startupMocks = mocks.filter((m) => m.spec.metadata?.type === 'config').map((m) => m.name);
  return {
    kind: 'Postgres',
    // Without PostgreSQL mocks a session passes through (or is recorded) unless misses fail.
    accepts: (conn) => conn.protocol === 'postgres' && (mocks.length > 0 || o.onMiss === 'fail'),
    serve: async (conn) => {
      // passthrough / record: a query group no mock answers goes to the real server on this session's own connection.
      const where = `${conn.target.host}:${conn.target.port}`;
      const upstream: UpstreamOptions | undefined =
        o.onMiss === 'fail'
          ? undefined
          : {
              connect: () => dial(conn.target, DIAL_TIMEOUT_MS),
              where,
              connectionId: `${conn.id}-on-miss`,
              ...(o.kept ? { kept: o.kept } : {}),
              ...(o.onMiss === 'record' ? { record: (mock: PostgresMock) => o.recorded(mock), ...(o.dropped ? { dropped: o.dropped } : {}) } : { onForwarded: () => void (c.fellBack++, c.missed++) }),
            };
      await replayPostgres(conn, index, {
        onMatch: (m) => void (c.replayed++, o.served?.(m.mock)),
        onStartup: () => startupMocks.forEach((name) => o.served?.(name)),
        onMiss: (m) => (c.missed++, o.missed(m.message)),
        ...(upstream ? { upstream } : {}),
        ...(o.kept ? { kept: o.kept } : {}),
      });
    },
    counts: c,
  };
}
