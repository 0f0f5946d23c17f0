import net from 'node:net';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../../core/wait.js';
import { parseMockSet } from '../keploy/parse.js';
import { numberMocks, serializeMockSet } from '../keploy/serialize.js';
import type { PostgresMock } from '../keploy/types.js';
import { ReplayIndex } from './matcher.js';
import { replayPostgres, type ReplayPostgresResult, type UpstreamOptions } from './replayer.js';
import type { ReplayMiss } from './session.js';
import { BackendSplitter, codeOf } from './wire.js';
import { listen, recordingListener, requirePsycopg2, runPython, startPostgres, type RunningPostgres } from './testing.js';

/**
 * A query no mock answers inside a replayed session, with `onMiss` passthrough / record: the real
 * PostgreSQL 15 (SCRAM-SHA-256 over TCP) answers it, on a connection replay opens with the
 * client's startup and the password it asks the client for; record captures the exchange.
 */

const connect = (port: number, password = 'x') => new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
const BY_NAME = { name: 'by-name', text: 'SELECT name, qty FROM pt_fruit WHERE name = $1' };

/** A replaying listener whose misses go to `dbPort` (undefined: fail mode). */
async function passthroughListener(mocks: PostgresMock[] | ReplayIndex, dbPort: number | undefined, record?: PostgresMock[]) {
  const misses: ReplayMiss[] = [];
  const results: ReplayPostgresResult[] = [];
  const forwarded: string[] = [];
  const listener = await listen(async (conn) => {
    const upstream: UpstreamOptions | undefined =
      dbPort === undefined
        ? undefined
        : {
            connect: () =>
              new Promise((resolve, reject) => {
                const s = net.connect({ host: '127.0.0.1', port: dbPort }, () => resolve(s));
                s.once('error', reject);
              }),
            where: `127.0.0.1:${dbPort}`,
            connectionId: `${conn.id}-on-miss`,
            onForwarded: (f) => forwarded.push(f.query),
            ...(record ? { record: (m: PostgresMock) => record.push(m) } : {}),
          };
    results.push(await replayPostgres(conn, mocks, { onMiss: (m) => misses.push(m), ...(upstream ? { upstream } : {}) }));
  });
  return { ...listener, misses, results, forwarded };
}

describe('misses inside a replayed PostgreSQL session: fail, passthrough, record', () => {
  let db: RunningPostgres | undefined;
  let mocks: PostgresMock[] = [];

  beforeAll(async () => {
    await requirePsycopg2();
    db = await startPostgres();
    const recorder = await recordingListener(db.port);
    const client = connect(recorder.port, db.password);
    await client.connect();
    await client.query('CREATE TABLE pt_fruit (name text PRIMARY KEY, qty int NOT NULL)');
    await client.query("INSERT INTO pt_fruit VALUES ('apple', 1)");
    await client.query('BEGIN');
    await client.query(BY_NAME, ['apple']);
    await client.query('COMMIT');
    await client.query("SELECT name FROM pt_fruit WHERE name = 'apple'");
    await client.end();
    await recorder.close();
    expect(recorder.errors).toEqual([]);
    mocks = parseMockSet(serializeMockSet(numberMocks(recorder.mocks)), 'set.yaml') as PostgresMock[];
    // Rows only the real server has from here on: a passed-through answer is told apart from a mock's.
    const direct = connect(db.port, db.password);
    await direct.connect();
    await direct.query("INSERT INTO pt_fruit VALUES ('kiwi', 7), ('fig', 3)");
    await direct.end();
  });
  afterAll(async () => {
    await db?.stop();
  });

  it('fail: the miss is an ErrorResponse naming the closest mock and the difference', async () => {
    const replay = await passthroughListener(mocks, undefined);
    const client = connect(replay.port);
    await client.connect();
    const err = (await client.query(BY_NAME, ['kiwi']).catch((e: unknown) => e)) as pg.DatabaseError;
    await client.end();
    await replay.close();
    expect(err.code).toBe('XX000');
    expect(err.message).toMatch(/^debugkit: no recorded mock for query: SELECT name, qty FROM pt_fruit WHERE name = \$1 \(closest: mock-\d+: parameter \$1 is 'kiwi' here, 'apple' recorded\)$/);
    expect(replay.misses).toHaveLength(1);
  });

  it('passthrough (node-postgres): misses are answered by the real server, hits by mocks, in one session and transaction', async () => {
    const replay = await passthroughListener(mocks, db!.port);
    // The recording authenticated with SCRAM: replay asks for the password, the real server checks it.
    const client = connect(replay.port, db!.password);
    await client.connect();
    await client.query('BEGIN');
    const hit = await client.query(BY_NAME, ['apple']);
    // The named statement was prepared among mocks: the real server gets its Parse first.
    const kiwi = await client.query(BY_NAME, ['kiwi']);
    const count = await client.query('SELECT count(*)::int AS n FROM pt_fruit');
    const bad = (await client.query('SELECT no_such_column FROM pt_fruit').catch((e: unknown) => e)) as pg.DatabaseError;
    await client.query('COMMIT');
    const again = await client.query("SELECT name FROM pt_fruit WHERE name = 'apple'");
    const fig = await client.query(BY_NAME, ['fig']);
    // Unnamed, the same text: Parse is answered by a mock, Bind misses; the real server answers the whole group once.
    const unnamed = await client.query(BY_NAME.text, ['kiwi']);
    await client.end();
    await replay.close();
    expect(hit.rows).toEqual([{ name: 'apple', qty: 1 }]);
    expect(kiwi.rows).toEqual([{ name: 'kiwi', qty: 7 }]);
    expect(count.rows).toEqual([{ n: 3 }]);
    expect(bad.code).toBe('42703'); // the real server's own error, passed on
    expect(again.rows).toEqual([{ name: 'apple' }]);
    expect(fig.rows).toEqual([{ name: 'fig', qty: 3 }]);
    expect(unnamed.rows).toEqual([{ name: 'kiwi', qty: 7 }]);
    expect(replay.misses).toEqual([]);
    expect(replay.forwarded).toEqual([BY_NAME.text, 'SELECT count(*)::int AS n FROM pt_fruit', 'SELECT no_such_column FROM pt_fruit', BY_NAME.text, BY_NAME.text]);
    expect(replay.results[0]).toMatchObject({ forwarded: 5, matched: 4 });
  });

  it('passthrough (psycopg2): simple queries inside its transaction', async () => {
    const replay = await passthroughListener(mocks, db!.port);
    const script = `
import sys, psycopg2
conn = psycopg2.connect(host='127.0.0.1', port=int(sys.argv[1]), user='postgres', password=sys.argv[2], dbname='postgres', sslmode='disable')
cur = conn.cursor()
cur.execute("SELECT name FROM pt_fruit WHERE name = 'apple'")
print(cur.fetchall())
cur.execute("SELECT name, qty FROM pt_fruit WHERE name = %s", ('kiwi',))
print(cur.fetchall())
conn.commit()
conn.close()
`;
    const out = await runPython(script, [String(replay.port), db!.password]);
    await replay.close();
    expect(out).toBe("[('apple',)]\n[('kiwi', 7)]\n");
    // BEGIN and COMMIT (psycopg2's transaction) were never recorded alone: they pass through too.
    expect(replay.forwarded).toContain("SELECT name, qty FROM pt_fruit WHERE name = 'kiwi'");
    expect(replay.misses).toEqual([]);
  });

  it('passthrough refuses a COPY FROM STDIN that missed, with an error saying so, and the session goes on', async () => {
    const replay = await passthroughListener(mocks, db!.port);
    const script = `
import io, sys, psycopg2
conn = psycopg2.connect(host='127.0.0.1', port=int(sys.argv[1]), user='postgres', password=sys.argv[2], dbname='postgres', sslmode='disable')
conn.autocommit = True
cur = conn.cursor()
try:
    cur.copy_from(io.StringIO('plum\\t5\\n'), 'pt_fruit', columns=('name', 'qty'))
    print('copied')
except psycopg2.Error as e:
    print('error', e.pgcode, str(e).strip().splitlines()[0])
cur.execute("SELECT name FROM pt_fruit WHERE name = 'apple'")
print(cur.fetchall())
conn.close()
`;
    const out = await runPython(script, [String(replay.port), db!.password]);
    await replay.close();
    expect(out).toBe("error 57014 COPY from stdin failed: debugkit: a COPY FROM STDIN that missed the mocks cannot be passed through\n[('apple',)]\n");
  });

  it('passthrough on the wire: a miss before a Flush is an error saying why; a forwarded group is answered once, nothing twice', async () => {
    const replay = await passthroughListener(mocks, db!.port);
    const socket = net.connect({ host: '127.0.0.1', port: replay.port });
    const received: Buffer[] = [];
    socket.on('data', (d) => received.push(d));
    const until = async (code: string) => {
      await pollUntil(() => Buffer.concat(received).includes(code), { timeoutMs: 2000, intervalMs: 10 });
    };
    socket.write(serialize.startup({ user: 'postgres', database: 'postgres' }));
    await until('R'); // the password request
    socket.write(serialize.password(db!.password));
    await until('Z');
    received.length = 0;
    socket.write(Buffer.concat([serialize.parse({ name: '', text: 'SELECT 42', types: [] }), serialize.describe({ type: 'S', name: '' }), serialize.flush()]));
    await until('debugkit');
    const text = Buffer.concat(received).toString('latin1');
    expect(text).toContain('debugkit: no recorded mock for query: SELECT 42, and it cannot be passed through: the client asked for answers (Flush) before the end of the request group (Sync)');
    received.length = 0;
    socket.write(serialize.sync());
    await until('Z');
    expect(Buffer.concat(received).subarray(0, 1).toString()).toBe('Z');
    // Parse answered by a mock, Bind missing: the client gets the real server's answers to the group once, nothing twice.
    received.length = 0;
    socket.write(
      Buffer.concat([
        serialize.parse({ name: '', text: BY_NAME.text, types: [] }),
        serialize.bind({ statement: '', portal: '', values: ['kiwi'] }),
        serialize.execute({ portal: '' }),
        serialize.sync(),
      ]),
    );
    await until('Z');
    expect(new BackendSplitter().push(Buffer.concat(received)).map(codeOf)).toEqual(['1', '2', 'D', 'C', 'Z']);
    socket.end(serialize.end());
    await replay.close();
    expect(replay.misses).toHaveLength(1);
  });

  it('passthrough says plainly what cannot work: no password to give, a wrong one, no server', async () => {
    // A set without its startup mocks: replay does not know a password is needed, so it never asks.
    const noStartup = mocks.filter((m) => m.spec.metadata.type !== 'config');
    const replay = await passthroughListener(noStartup, db!.port);
    const client = connect(replay.port, db!.password);
    await client.connect();
    const err = (await client.query(BY_NAME, ['kiwi']).catch((e: unknown) => e)) as pg.DatabaseError;
    const again = (await client.query('SELECT 42').catch((e: unknown) => e)) as pg.DatabaseError;
    const hit = await client.query(BY_NAME, ['apple']);
    await client.end();
    await replay.close();
    expect(err.message).toBe(
      `debugkit: no recorded mock for query: ${BY_NAME.text}, and the real server could not answer it: the real server 127.0.0.1:${db!.port} asks for a password, and this replayed session has none (the recording needed no password, so replay did not ask the program for one)`,
    );
    expect(again.message).toMatch(/SELECT 42, and the real server could not answer it: the real server .* asks for a password/);
    expect(hit.rows).toEqual([{ name: 'apple', qty: 1 }]);
    expect(replay.misses).toHaveLength(2);

    const wrong = await passthroughListener(mocks, db!.port);
    const c2 = connect(wrong.port, 'not-the-password');
    await c2.connect();
    const refused = (await c2.query('SELECT 42').catch((e: unknown) => e)) as pg.DatabaseError;
    await c2.end();
    await wrong.close();
    expect(refused.message).toMatch(/the real server 127\.0\.0\.1:\d+ refused the session: password authentication failed for user "postgres"/);

    const closed = await new Promise<number>((r) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as net.AddressInfo).port;
        s.close(() => r(port));
      });
    });
    const gone = await passthroughListener(mocks, closed);
    const c3 = connect(gone.port, db!.password);
    await c3.connect();
    const unreachable = (await c3.query('SELECT 42').catch((e: unknown) => e)) as pg.DatabaseError;
    await c3.end();
    await gone.close();
    expect(unreachable.message).toMatch(/could not reach the real server 127\.0\.0\.1:\d+: .*ECONNREFUSED/);
  });

  it('record: the missed exchanges become Keploy mocks that replay with the server gone', async () => {
    const captured: PostgresMock[] = [];
    const index = new ReplayIndex(mocks);
    const replay = await passthroughListener(index, db!.port, captured);
    const password = db!.password;
    const run = async (port: number) => {
      const client = connect(port, password);
      await client.connect();
      const rows = [];
      rows.push((await client.query(BY_NAME, ['apple'])).rows);
      rows.push((await client.query(BY_NAME, ['kiwi'])).rows);
      rows.push((await client.query('SELECT count(*)::int AS n FROM pt_fruit')).rows);
      rows.push((await client.query(BY_NAME, ['kiwi'])).rows);
      await client.end();
      return rows;
    };
    const first = await run(replay.port);
    await replay.close();
    expect(first).toEqual([[{ name: 'apple', qty: 1 }], [{ name: 'kiwi', qty: 7 }], [{ n: 3 }], [{ name: 'kiwi', qty: 7 }]]);
    // The second kiwi was answered by the mock recorded a moment before.
    expect(replay.forwarded).toHaveLength(2);
    expect(captured).toHaveLength(2);
    expect(captured[0]).toMatchObject({ kind: 'Postgres', connectionId: 'conn-1-on-miss', spec: { metadata: { host: `127.0.0.1:${db!.port}` } } });
    expect(captured[0]!.spec.postgresrequests[0]!.header).toEqual(['P', 'B', 'D', 'E']);
    expect(JSON.stringify(captured)).not.toContain(db!.password);

    await db!.stop();
    db = undefined;
    const completed = parseMockSet(serializeMockSet(numberMocks([...mocks, ...captured])), 'set.yaml') as PostgresMock[];
    const offline = await passthroughListener(completed, undefined);
    const second = await run(offline.port);
    await offline.close();
    expect(offline.misses).toEqual([]);
    expect(second).toEqual(first);
  });
});
