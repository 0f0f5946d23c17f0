import { buildGenericMock } from '../generic/keploy.js';
import type { RedisMock } from '../keploy/types.js';

/**
 * Redis as Keploy's `Redis` kind: one mock per command and its reply (`redisrequests` holds the
 * command, `redisresponses` the reply), framed by RESP so pipelined commands are told apart.
 */
export function toRedisMock(request: Buffer, response: Buffer, startedAt: Date, endedAt: Date, host: string, connectionId?: string): RedisMock {
  const g = buildGenericMock({ request, response, startedAt, endedAt, host, ...(connectionId ? { connectionId } : {}) });
  const mock: RedisMock = {
    version: g.version,
    kind: 'Redis',
    name: g.name,
    spec: {
      metadata: g.spec.metadata,
      redisrequests: g.spec.genericrequests,
      redisresponses: g.spec.genericresponses,
      reqtimestampmock: g.spec.reqtimestampmock,
      restimestampmock: g.spec.restimestampmock,
    },
  };
  if (g.connectionId) mock.connectionId = g.connectionId;
  return mock;
}
