import { serialize } from 'pg-protocol';
import { describe, expect, it } from 'vitest';
import type { PostgresMock } from '../keploy/types.js';
import { FrontendParser, type StartupMessage, type TypedMessage } from './frontend.js';
import { KeptBytes } from '../kept.js';
import { REDACTED, RequestGrouper } from './grouping.js';
import { backend, splitBackendBytes } from './wire.js';

/** Drives a grouper with client bytes and server messages in a chosen interleaving. */
function harness(options: { maxMockBytes?: number; kept?: KeptBytes; onDropped?: (why: string) => void } = {}) {
  const mocks: PostgresMock[] = [];
  const errors: unknown[] = [];
  const grouper = new RequestGrouper({ onMock: (m) => mocks.push(m), onError: (e) => errors.push(e), connectionId: 'c1', host: 'db:5432', utcOffsetMinutes: 0, ...options });
  const parser = new FrontendParser();
  const client = (...bytes: Buffer[]) => {
    for (const m of parser.push(Buffer.concat(bytes))) {
      if (m.type === 'startup') grouper.startup(m as StartupMessage);
      else grouper.frontend(m as TypedMessage);
    }
  };
  const server = (...messages: Buffer[]) => messages.forEach((raw) => grouper.backend(raw));
  const headers = () => mocks.map((m) => [m.spec.postgresrequests[0]!.header ?? ['startup'], m.spec.postgresresponses[0]!.header]);
  return { mocks, errors, client, server, headers };
}

const ready = (s = 'I') => backend.readyForQuery(s);
const startupBytes = serialize.startup({ user: 'u', database: 'd' });

describe('RequestGrouper', () => {
  it('makes one config mock of a trust startup', () => {
    const h = harness();
    h.client(startupBytes);
    h.server(backend.authenticationOk(), backend.parameterStatus('server_version', '15.2'), backend.backendKeyData(7, 9), ready());
    expect(h.headers()).toEqual([[['startup'], ['R', 'S', 'K', 'Z']]]);
    const spec = h.mocks[0]!.spec;
    expect(spec.metadata).toEqual({ type: 'config', host: 'db:5432' });
    expect(spec.postgresrequests[0]).toMatchObject({ identifier: 'StartupRequest', length: startupBytes.length, startup_message: { protocolversion: 196608 } });
    expect(spec.postgresresponses[0]).toMatchObject({ auth_type: 0, backend_key_data: { process_id: 7, secret_key: 9 }, msg_type: 90 });
    expect(h.mocks[0]!.connectionId).toBe('c1');
    expect(spec.reqtimestampmock).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  });

  it('splits an MD5 exchange at the challenge, as Keploy does, and does not keep the password', () => {
    const h = harness();
    h.client(startupBytes);
    h.server(backend.authentication(5, Buffer.from([1, 2, 3, 4])));
    h.client(serialize.password('md5secrethash'));
    h.server(backend.authenticationOk(), backend.backendKeyData(1, 2), ready());
    expect(h.headers()).toEqual([
      [['startup'], ['R']],
      [['p'], ['R', 'K', 'Z']],
    ]);
    expect(h.mocks[0]!.spec.postgresresponses[0]).toMatchObject({ auth_type: 5, authentication_md5_password: { salt: [1, 2, 3, 4] } });
    const password = h.mocks[1]!.spec.postgresrequests[0]!;
    expect(password.password_message).toEqual({ password: REDACTED });
    expect(Buffer.from(password.payload!, 'base64').toString()).not.toContain('secret');
  });

  it('pairs pipelined groups with their answers in order, Sync by Sync', () => {
    const h = harness();
    h.client(startupBytes);
    h.server(backend.authenticationOk(), ready());
    const group = (text: string) => [serialize.parse({ text }), serialize.bind(), serialize.execute(), serialize.sync()];
    h.client(...group('SELECT 1'), ...group('SELECT 2'), serialize.query('SELECT 3'));
    h.server(backend.parseComplete(), backend.bindComplete(), backend.commandComplete('SELECT 1'), ready());
    h.server(backend.parseComplete(), backend.bindComplete(), backend.commandComplete('SELECT 2'), ready('T'));
    h.server(backend.commandComplete('SELECT 3'), ready('T'));
    const queries = h.mocks.slice(1);
    expect(queries.map((m) => [m.spec.postgresrequests[0]!.parse?.[0]?.query ?? m.spec.postgresrequests[0]!.query?.string, m.spec.postgresresponses[0]!.command_complete])).toEqual([
      ['SELECT 1', [{ command_tag_type: 'SELECT 1' }]],
      ['SELECT 2', [{ command_tag_type: 'SELECT 2' }]],
      ['SELECT 3', [{ command_tag_type: 'SELECT 3' }]],
    ]);
    expect(queries.map((m) => m.spec.metadata)).toEqual([{ host: 'db:5432' }, { host: 'db:5432' }, { host: 'db:5432' }]);
    expect(queries[0]!.spec.postgresrequests[0]!.header).toEqual(['P', 'B', 'E']); // Keploy leaves the Sync out
  });

  it('keeps answers that arrive after a Flush, before the Sync, in the same group', () => {
    const h = harness();
    h.client(startupBytes);
    h.server(backend.authenticationOk(), ready());
    h.client(serialize.parse({ name: 's', text: 'SELECT $1' }), serialize.describe({ type: 'S', name: 's' }), serialize.flush());
    h.server(backend.parseComplete(), backend.parameterDescription([23]), backend.noData());
    h.client(serialize.sync());
    h.server(ready());
    expect(h.headers()[1]).toEqual([
      ['P', 'D', 'H'],
      ['1', 't', 'n', 'Z'],
    ]);
  });

  it('puts COPY data in the group of its COPY, drops Terminate and messages outside any request', () => {
    const h = harness();
    h.client(startupBytes);
    h.server(backend.authenticationOk(), ready());
    h.server(backend.notice({ S: 'NOTICE', M: 'unsolicited' }));
    h.client(serialize.query('COPY t FROM STDIN'));
    h.server(Buffer.from([0x47, 0, 0, 0, 7, 0, 0, 0])); // CopyInResponse, text, no columns
    h.client(serialize.copyData(Buffer.from('a\n')), serialize.copyDone());
    h.server(backend.commandComplete('COPY 1'), ready());
    h.client(serialize.end());
    expect(h.headers()).toEqual([
      [['startup'], ['R', 'Z']],
      [
        ['Q', 'd', 'c'],
        ['G', 'C', 'Z'],
      ],
    ]);
  });

  it('drops a group whose answer never completed, and one over the size limit', () => {
    const h = harness({ maxMockBytes: 200 });
    h.client(startupBytes);
    h.server(backend.authenticationOk(), ready());
    h.client(serialize.query('SELECT big'));
    h.server(...Array.from({ length: 10 }, () => backend.dataRow([Buffer.alloc(30)])), backend.commandComplete('SELECT 10'), ready());
    h.client(serialize.query('SELECT never answered'));
    h.server(backend.dataRow([null]));
    expect(h.headers()).toEqual([[['startup'], ['R', 'Z']]]);
    expect(String(h.errors[0])).toMatch(/over 200 bytes \(relayed, not recorded\)/);
  });

  it('records a failed login as its own config mock', () => {
    const h = harness();
    h.client(startupBytes);
    h.server(backend.error({ S: 'FATAL', C: '28000', M: 'no pg_hba.conf entry' }));
    expect(h.headers()).toEqual([[['startup'], ['E']]]);
    expect(splitBackendBytes(Buffer.from(h.mocks[0]!.spec.postgresresponses[0]!.payload!, 'base64'))).toHaveLength(1);
  });

  it("stops recording a connection whose requests await answers past the recording's budget, and gives the budget back (attack 18q)", () => {
    // A server that answers the startup, then never again: 185 MB of small queries filled a 4 GB heap before.
    const kept = new KeptBytes(64 * 1024);
    const dropped: string[] = [];
    const h = harness({ kept, onDropped: (why) => dropped.push(why) });
    h.client(startupBytes);
    h.server(backend.authenticationOk(), ready());
    for (let i = 0; i < 2000; i++) h.client(serialize.query(`SELECT ${i}`));
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toMatch(/^\d+ PostgreSQL requests awaiting answers, past the \d+ bytes a recording keeps of calls not finished: the rest of the connection was relayed, not recorded$/);
    // The budget is whole again, and answers that come late make no mock.
    expect(kept.take(64 * 1024)).toBe(true);
    h.server(backend.commandComplete('SELECT 1'), ready());
    expect(h.mocks).toHaveLength(1);
  });
});
