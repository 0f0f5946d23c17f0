import { dial, DIAL_TIMEOUT_MS } from '../dial.js';
import { counts, MAX_MOCK_EXCHANGE_BYTES, ofKind, type ProtocolRecorder, type ProtocolReplayer, type ReplayerFactory, type ReplayersOptions } from '../protocol.js';
import { toRedisMock } from './keploy.js';
import { RedisIndex } from './matcher.js';
import { recordRedis } from './recorder.js';
import { redisFetcher, replayRedis } from './replayer.js';
import { commandArgs, redactArgs } from './wire.js';

/** Redis: one `Redis` mock per command and its reply, framed by RESP (wire.ts). */

const OVER_BOUND = `a Redis command and its reply over ${MAX_MOCK_EXCHANGE_BYTES} bytes (relayed, not recorded)`;
export { detect } from './wire.js';

export const recorder: ProtocolRecorder = {
  accepts: (conn) => conn.protocol === 'redis',
  async record(conn, o) {
    const upstream = await o.dial(conn);
    const result = await recordRedis(conn, upstream, { onMock: (mock) => o.onMock(mock, 'Redis'), onDropped: o.onDropped, ...(o.kept ? { kept: o.kept } : {}) });
    if (result.error) o.warn(`recording Redis at ${conn.target.host}:${conn.target.port}: ${result.error.message}`);
    if (result.stoppedRecording) o.warn(`recording Redis at ${conn.target.host}:${conn.target.port}: ${result.stoppedRecording}`);
  },
};

export const replayer: ReplayerFactory = async (mocks, o, { slice }) => redisReplayer(await RedisIndex.build(ofKind(mocks, 'Redis'), slice), o);

function redisReplayer(index: RedisIndex, o: ReplayersOptions): ProtocolReplayer {
  const c = counts();
  return {
    kind: 'Redis',
    accepts: (conn) => conn.protocol === 'redis' && (index.size > 0 || o.onMiss === 'fail'),
    serve: async (conn) => {
      const host = `${conn.target.host}:${conn.target.port}`;
      // passthrough / record: a command no mock answers goes to the real server on this session's own connection.
      const upstream = o.onMiss === 'fail' ? undefined : redisFetcher(() => dial(conn.target, DIAL_TIMEOUT_MS), o.kept ? { kept: o.kept } : {});
      try {
        await replayRedis(conn, index, {
          onMatch: (m) => void (c.replayed++, o.served?.(m.mock)),
          onMiss: (m) => (c.missed++, o.missed(m.message)),
          ...(o.kept ? { kept: o.kept } : {}),
          ...(upstream
            ? {
                fetch: upstream.fetch,
                onFetched: (f) => {
                  if (o.onMiss === 'record') {
                    if (f.request.length + f.reply.length > MAX_MOCK_EXCHANGE_BYTES) return o.dropped?.(OVER_BOUND);
                    const mock = toRedisMock(f.request, f.reply, f.startedAt, new Date(), host, conn.id);
                    // Answers the next repeats only when kept (within what a set may hold).
                    if (o.recorded(mock) !== false) index.add({ name: `recorded ${f.command}`, args: redactArgs(commandArgs(f.request)).args, response: f.reply });
                  } else {
                    c.fellBack++;
                    c.missed++;
                  }
                },
              }
            : {}),
        });
      } finally {
        upstream?.close();
      }
    },
    counts: c,
  };
}
