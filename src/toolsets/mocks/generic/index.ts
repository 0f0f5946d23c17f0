import type { TimeSlice } from '../../../core/wait.js';
import type { GenericMock, Mock } from '../keploy/types.js';
import { mysqlAsGenerics, mysqlConnectionMocks, mysqlSetBudget } from '../mysql/keploy.js';
import { counts, type ProtocolRecorder, type ProtocolReplayer, type ReplayerFactory, type ReplayersOptions } from '../protocol.js';
import type { InterceptedConnection } from '../proxy/proxy.js';
import { GenericIndex } from './matcher.js';
import { recordGeneric } from './recorder.js';
import { replayGeneric } from './replayer.js';

/**
 * Generic (unparsed protocol) mocks: a connection's byte exchanges, recorded and replayed by
 * bytes. No `detect`: what no other protocol claims is generic, server-speaks-first protocols
 * too. MySQL/MariaDB rides here (its framing in mysql/wire.ts, its Keploy form in mysql/keploy.ts):
 * recorded as MySQL mocks, replayed as the bytes they hold.
 */
export const recorder: ProtocolRecorder = {
  accepts: (conn) => conn.protocol === 'generic',
  async record(conn, o) {
    const upstream = await o.dial(conn);
    const tls = { ca: o.ca, upstream: { insecure: o.insecureUpstream, ...(o.upstreamCa ? { ca: o.upstreamCa } : {}) } };
    // One value budget for all of the recording's connections (their options are the one object).
    const mysqlMockOf = mysqlConnectionMocks(o);
    const result = await recordGeneric(conn, upstream, {
      onMock: (mock) => o.onMock(mock, 'Generic'),
      ...(o.kept ? { kept: o.kept } : {}),
      tls,
      onMysqlMock: (m) => {
        const mock = mysqlMockOf(m);
        o.onMock(mock, mock.kind);
      },
    });
    if (result.error) o.warn(`recording ${conn.target.host}:${conn.target.port}: ${result.error.message}`);
    if (result.stoppedRecording) o.warn(`recording ${conn.target.host}:${conn.target.port}: ${result.stoppedRecording}`);
  },
};

export const replayer: ReplayerFactory = async (mocks, o, { slice }) => genericReplayer(await GenericIndex.build(await genericAndMysql(mocks, slice, o.warn), slice), o);

/**
 * Generic mocks and MySQL mocks as the bytes they hold, in file order: MySQL is served by the
 * MySQL-aware byte replayer (Keploy's connection-phase mock as one mock per step). MySQL mocks
 * with messages that cannot be turned back into bytes (or that stand for more than one exchange
 * may hold) are left out: a connection needing them misses. Converted in the index build's slices:
 * a set of many MySQL mocks is work on the loop the server's other callers wait behind.
 */
export async function genericAndMysql(mocks: readonly Mock[], slice: TimeSlice, warn?: (message: string) => void): Promise<GenericMock[]> {
  const out: GenericMock[] = [];
  const unusable: string[] = [];
  const set = mysqlSetBudget();
  for (const m of mocks) {
    if (m.kind === 'Generic') out.push(m);
    else if (m.kind === 'MySQL') {
      await slice.pause();
      const g = mysqlAsGenerics(m, set);
      if (typeof g !== 'string') out.push(...g);
      else unusable.push(g);
    }
  }
  if (unusable.length > 0) warn?.(`${unusable.length} MySQL mock(s) cannot be replayed and were left out; the first: ${unusable[0]}`);
  return out;
}

function genericReplayer(index: GenericIndex, o: ReplayersOptions): ProtocolReplayer {
  const c = counts();
  // Sets recorded before Redis was modeled hold Generic mocks for it: those answer Redis too.
  const known = (conn: InterceptedConnection) => index.forTarget(conn.target) !== undefined;
  return {
    kind: 'Generic',
    greets: (target) => index.forTarget(target) !== undefined,
    accepts: (conn) => (conn.protocol === 'generic' && (known(conn) || o.onMiss === 'fail')) || (conn.protocol === 'redis' && known(conn)),
    serve: async (conn) => {
      await replayGeneric(conn, index, {
        ca: o.ca,
        onMatch: (m) => void (c.replayed++, o.served?.(m.mock)),
        onMiss: (m) => (c.missed++, o.missed(m.message)),
        ...(o.kept ? { kept: o.kept } : {}),
      });
    },
    counts: c,
  };
}
