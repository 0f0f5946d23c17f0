import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMockSet } from '../keploy/parse.js';
import { queriesOf } from '../keploy/postgres.js';
import { numberMocks, serializeMockSet } from '../keploy/serialize.js';
import type { PostgresMock } from '../keploy/types.js';
import { REDACTED } from './grouping.js';
import { recordingListener, replayingListener, requirePsycopg2, runPython, startPostgres, type RunningPostgres } from './testing.js';

/**
 * Record against a real PostgreSQL 15 (SCRAM-SHA-256 over TCP), stop it, replay the Keploy YAML
 * the recording became, and compare what the same client code gets. Missing server binaries or
 * psycopg2 fail the suite with the apt package to install; nothing is skipped.
 */

type Outcome = { rows?: unknown[]; rowCount?: number | null; command?: string; fields?: unknown[] } | { error?: string; message?: string };

async function nodeWorkload(port: number, password: string): Promise<Outcome[]> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  await client.connect();
  const out: Outcome[] = [];
  const q = async (text: string | pg.QueryConfig, values?: unknown[]) => {
    try {
      const r = await client.query(text as string, values);
      out.push({ rows: r.rows, rowCount: r.rowCount, command: r.command, fields: r.fields.map((f) => [f.name, f.dataTypeID]) });
    } catch (err) {
      out.push({ error: (err as pg.DatabaseError).code, message: (err as Error).message });
    }
  };
  await q('SELECT 1 AS one, NULL::text AS nothing');
  await q('DROP TABLE IF EXISTS dk_items');
  await q('CREATE TABLE dk_items (id serial PRIMARY KEY, name text UNIQUE NOT NULL, price numeric(10,2), note text, data bytea, made date)');
  const insert = 'INSERT INTO dk_items (name, price, note, data, made) VALUES ($1, $2, $3, $4, $5) RETURNING id';
  await q(insert, ['apple', 1.5, null, Buffer.from([0, 1, 2, 255]), '2024-01-02']);
  await q('BEGIN');
  await q(insert, ['pear', 2, 'ripe', null, null]);
  await q('UPDATE dk_items SET price = price + $1 WHERE name = $2', [1, 'pear']);
  await q('COMMIT');
  await q(insert, ['apple', 9, null, null, null]); // unique violation
  await q('BEGIN');
  await q(insert, ['pear', 1, null, null, null]); // fails the transaction...
  await q('SELECT 1'); // ...so this is refused
  await q('ROLLBACK');
  await q('SELECT count(*) AS n FROM dk_items');
  await q(insert, ['plum', null, null, Buffer.alloc(0), null]);
  await q('SELECT count(*) AS n FROM dk_items'); // same query, new answer: replayed in order
  await q({ name: 'by-name', text: 'SELECT id, price, data FROM dk_items WHERE name = $1' }, ['apple']);
  await q({ name: 'by-name', text: 'SELECT id, price, data FROM dk_items WHERE name = $1' }, ['plum']);
  await q('SELECT id, name, price, note, data, made FROM dk_items ORDER BY id');
  await client.end();
  return out;
}

const PSYCOPG2_WORKLOAD = `
import io, json, sys
from decimal import Decimal
import psycopg2
conn = psycopg2.connect(host='127.0.0.1', port=int(sys.argv[1]), user='postgres', password=sys.argv[2], dbname='postgres')
cur = conn.cursor()
out = []
def q(sql, params=None):
    try:
        cur.execute(sql, params)
        out.append({'rows': cur.fetchall() if cur.description else None, 'rowcount': cur.rowcount, 'status': cur.statusmessage})
        conn.commit()
    except psycopg2.Error as e:
        out.append({'error': e.pgcode, 'message': str(e).strip()})
        conn.rollback()
q(sys.argv[3] if len(sys.argv) > 3 else 'SELECT 1')
q('DROP TABLE IF EXISTS dk_py')
q('CREATE TABLE dk_py (id serial PRIMARY KEY, name text UNIQUE, qty int, price numeric(8,2), blob bytea, note text)')
q('INSERT INTO dk_py (name, qty, price, blob, note) VALUES (%s, %s, %s, %s, %s) RETURNING id', ('a', 1, Decimal('2.50'), psycopg2.Binary(b'\\x00\\xff'), None))
q('INSERT INTO dk_py (name, qty, price, blob, note) VALUES (%s, %s, %s, %s, %s) RETURNING id', ('a', 2, None, None, 'dup'))
q('SELECT name, qty, price, blob, note FROM dk_py ORDER BY id')
try:
    cur.copy_from(io.StringIO('x\\t7\\ny\\t8\\n'), 'dk_py', columns=('name', 'qty'))
    conn.commit()
    copied = io.StringIO()
    cur.copy_to(copied, 'dk_py', columns=('name', 'qty'))
    out.append({'copied': copied.getvalue()})
    conn.commit()
except psycopg2.Error as e:
    out.append({'error': e.pgcode, 'message': str(e).strip()})
conn.close()
print(json.dumps(out, default=lambda o: o.hex() if isinstance(o, (bytes, memoryview)) else str(o)))
`;

describe('record against PostgreSQL 15, then replay without it', () => {
  let server: RunningPostgres | undefined;
  let nodeMocks: PostgresMock[] = [];
  let pyMocks: PostgresMock[] = [];
  let recordedNode: Outcome[] = [];
  let recordedPy: unknown;

  beforeAll(async () => {
    await requirePsycopg2();
    server = await startPostgres();
    const recorder = await recordingListener(server.port);
    recordedNode = await nodeWorkload(recorder.port, server.password);
    await recorder.close();
    expect(recorder.errors).toEqual([]);
    nodeMocks = roundTrip(recorder.mocks);

    const pyRecorder = await recordingListener(server.port);
    recordedPy = JSON.parse(await runPython(PSYCOPG2_WORKLOAD, [String(pyRecorder.port), server.password]));
    await pyRecorder.close();
    expect(pyRecorder.errors).toEqual([]);
    pyMocks = roundTrip(pyRecorder.mocks);
    // From here on there is no database.
    await server.stop();
    server = undefined;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('recorded what the server really answered', () => {
    expect(recordedNode[0]).toMatchObject({ rows: [{ one: 1, nothing: null }] });
    expect(recordedNode[3]).toMatchObject({ rows: [{ id: 1 }] });
    expect(recordedNode[8]).toMatchObject({ error: '23505' });
    expect(recordedNode[11]).toMatchObject({ error: '25P02' });
    expect(recordedNode.at(-1)).toMatchObject({
      rows: [
        { name: 'apple', data: Buffer.from([0, 1, 2, 255]), note: null },
        { name: 'pear', price: '3.00' },
        { name: 'plum', data: Buffer.alloc(0) },
      ],
    });
  });

  it('wrote Keploy-shaped mocks: config mocks for the SCRAM exchange, one mock per request group', () => {
    const config = nodeMocks.filter((m) => m.spec.metadata.type === 'config');
    expect(config.map((m) => m.spec.postgresrequests[0]!.identifier)).toEqual(['StartupRequest', 'ClientRequest', 'ClientRequest']);
    expect(config.map((m) => m.spec.postgresresponses[0]!.auth_type)).toEqual([10, 11, 0]);
    expect(config[2]!.spec.postgresresponses[0]!.header).toEqual(expect.arrayContaining(['R', 'S', 'K', 'Z']));
    // The SCRAM client proof is not kept, neither in the payload nor in the typed field.
    const proof = config[2]!.spec.postgresrequests[0]!;
    expect(Buffer.from(proof.payload!, 'base64').subarray(5).toString()).toBe(REDACTED);
    expect(proof.extra?.sasl_response).toEqual({ data: [...Buffer.from(REDACTED)] });
    const insert = nodeMocks.find((m) => m.spec.postgresrequests[0]!.header?.join('') === 'PBDE')!;
    expect(insert.spec.postgresrequests[0]!.parse![0]!.query).toContain('INSERT INTO dk_items');
    expect(insert.spec.postgresresponses[0]!.header).toEqual(['1', '2', 'T', 'D', 'C', 'Z']);
    expect(insert.spec.postgresresponses[0]!.data_row).toEqual([{ row_values: ['1'] }]);
    expect(insert.connectionId).toBe('conn-1');
  });

  it('replays the node-postgres workload with identical results', async () => {
    const replay = await replayingListener(nodeMocks);
    const replayed = await nodeWorkload(replay.port, 'any password');
    await replay.close();
    expect(replayed).toEqual(recordedNode);
    expect(replay.misses).toEqual([]);
  });

  it('answers a changed query with an error naming the closest mock, and counts the miss', async () => {
    const replay = await replayingListener(nodeMocks);
    const client = new pg.Client({ host: '127.0.0.1', port: replay.port, user: 'postgres', database: 'postgres' });
    await client.connect();
    const err = (await client.query('SELECT id, name, price, note, data, made FROM dk_items ORDER BY id DESC').catch((e: unknown) => e)) as pg.DatabaseError;
    const byParam = (await client.query({ name: 'by-name', text: 'SELECT id, price, data FROM dk_items WHERE name = $1' }, ['kiwi']).catch((e: unknown) => e)) as pg.DatabaseError;
    const ok = await client.query('SELECT count(*) AS n FROM dk_items');
    await client.end();
    await replay.close();

    const listing = nodeMocks.find((m) => queriesOf(m).includes('SELECT id, name, price, note, data, made FROM dk_items ORDER BY id'))!;
    expect(err.code).toBe('XX000');
    expect(err.message).toBe(
      `debugkit: no recorded mock for query: SELECT id, name, price, note, data, made FROM dk_items ORDER BY id DESC (closest: ${listing.name}: query text differs at character 67: "ER BY id DESC" here, "ER BY id" recorded)`,
    );
    expect(byParam.message).toMatch(/\(closest: mock-\d+: parameter \$1 is 'kiwi' here, '(apple|plum)' recorded\)$/);
    expect(replay.misses).toHaveLength(2);
    expect(replay.misses[0]!.closest?.mock).toBe(listing.name);
    expect(ok.rows).toEqual([{ n: '2' }]);
  });

  it('records and replays psycopg2 (SSLRequest answered N, simple queries, client-side parameters, COPY both ways)', async () => {
    expect(recordedPy).toMatchObject([
      { rows: [[1]] },
      {},
      {},
      { rows: [[1]] },
      { error: '23505' },
      { rows: [['a', 1, '2.50', '00ff', null]] },
      { copied: 'a\t1\nx\t7\ny\t8\n' }, // COPY FROM STDIN then COPY TO STDOUT
    ]);
    const replay = await replayingListener(pyMocks);
    const replayed = JSON.parse(await runPython(PSYCOPG2_WORKLOAD, [String(replay.port), 'whatever']));
    const changed = JSON.parse(await runPython(PSYCOPG2_WORKLOAD, [String(replay.port), 'whatever', 'SELECT 2']));
    await replay.close();
    expect(replayed).toEqual(recordedPy);
    expect(changed[0]).toMatchObject({ error: 'XX000' });
    expect(changed[0].message).toMatch(/^debugkit: no recorded mock for query: SELECT 2 \(closest: mock-\d+: query text differs at character 8: "SELECT 2" here, "SELECT 1" recorded\)/);
    expect(replay.misses).toHaveLength(1);
  });
});

/** What a mock set goes through on disk: numbered, written as Keploy YAML, read back. */
function roundTrip(mocks: PostgresMock[]): PostgresMock[] {
  const yaml = serializeMockSet(numberMocks(mocks));
  return parseMockSet(yaml, 'recorded.yaml') as PostgresMock[];
}
