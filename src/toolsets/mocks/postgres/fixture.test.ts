import fs from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMockSet } from '../keploy/parse.js';
import { decodeRowValue } from '../keploy/postgres.js';
import { SQL_FILE } from '../keploy/testkit.js';
import type { PostgresMock } from '../keploy/types.js';
import { ReplayIndex } from './matcher.js';
import { replayingListener } from './testing.js';

/**
 * Keploy's own recording (mux-sql: a Go app on pgx, MD5 auth, Parse/Describe/Sync then
 * Bind/Execute/Sync, an int4 column in binary) replayed to node-postgres, which authenticates
 * differently, sends Parse/Bind/Describe/Execute/Sync at once and wants text results.
 */

const mocks = parseMockSet(fs.readFileSync(SQL_FILE, 'utf8'), SQL_FILE) as PostgresMock[];
const row = (mock: number, i = 0) => mocks[mock]!.spec.postgresresponses[0]!.data_row![i]!.row_values!.map(decodeRowValue);
const int4 = (v: unknown) => Buffer.from(v as Uint8Array).readInt32BE(0);
const params = (mock: number) => mocks[mock]!.spec.postgresrequests[0]!.bind![0]!.parameters!.map((p) => Buffer.from(p as number[]).toString());

describe('replaying the Keploy mux-sql fixture to node-postgres', () => {
  let server: Awaited<ReturnType<typeof replayingListener>>;
  let client: pg.Client;

  beforeAll(async () => {
    server = await replayingListener(mocks);
    // The password is whatever: replay answers AuthenticationOk without asking for one.
    client = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', password: 'not-the-recorded-one', database: 'postgres' });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await server?.close();
  });

  it('indexes every query mock and takes the startup answer from the config mocks', () => {
    const index = new ReplayIndex(mocks);
    expect(index.problems).toEqual([]);
    expect(index.startup.backendKey).toEqual({ processId: 85, secretKey: 2100181801 });
    expect(new Map(index.startup.parameterStatus).get('server_version')).toBe('10.5 (Debian 10.5-2.pgdg90+1)');
  });

  it('reports the recorded server parameters', async () => {
    const res = await client.query('SHOW server_version').catch((e: Error) => e);
    // SHOW was never recorded: a miss, while the connection stays usable.
    expect(res).toBeInstanceOf(Error);
    expect((client as unknown as { processID: number }).processID).toBe(85);
  });

  it('answers the INSERT the Go app made with the id the fixture recorded (binary int4 → text)', async () => {
    expect(params(3)).toEqual(['Bubbles', '123']);
    const res = await client.query('INSERT INTO products(name, price) VALUES($1, $2) RETURNING id', ['Bubbles', 123]);
    expect(res.rows).toEqual([{ id: int4(row(3)[0]) }]);
    expect(res.rows).toEqual([{ id: 2 }]);
    expect(res.command).toBe('INSERT');
    expect(res.rowCount).toBe(1);
  });

  it('answers the list query with both recorded rows', async () => {
    expect(params(5)).toEqual(['10', '0']);
    const res = await client.query('SELECT id, name,  price FROM products LIMIT $1 OFFSET $2', [10, 0]);
    const expected = [0, 1].map((i) => {
      const [id, name, price] = row(5, i);
      return { id: int4(id), name, price };
    });
    expect(res.rows).toEqual(expected);
    expect(res.rows).toEqual([
      { id: 1, name: 'Bubbles', price: '123.00' },
      { id: 2, name: 'Bubbles', price: '123.00' },
    ]);
    expect(res.fields.map((f) => [f.name, f.dataTypeID])).toEqual([
      ['id', 23],
      ['name', 25],
      ['price', 1700],
    ]);
  });

  it('matches query text with whitespace runs collapsed (the typed field and the payload of mock-4 differ in one space)', async () => {
    expect(mocks[4]!.spec.postgresrequests[0]!.parse![0]!.query).toBe('SELECT id, name, price FROM products LIMIT $1 OFFSET $2');
    const res = await client.query('SELECT id, name, price\n  FROM products LIMIT $1 OFFSET $2', [10, 0]);
    expect(res.rows).toHaveLength(2);
  });

  it('answers the lookup by id', async () => {
    const res = await client.query('SELECT name, price FROM products WHERE id=$1', [1]);
    expect(res.rows).toEqual([{ name: row(7)[0], price: row(7)[1] }]);
  });

  it('names the closest mock and the differing parameter on a miss', async () => {
    const err = (await client.query('SELECT name, price FROM products WHERE id=$1', [7]).catch((e: unknown) => e)) as pg.DatabaseError;
    expect(err.code).toBe('XX000');
    expect(err.message).toBe("debugkit: no recorded mock for query: SELECT name, price FROM products WHERE id=$1 (closest: mock-7: parameter $1 is '7' here, '1' recorded)");
    const changed = (await client.query('SELECT name, price FROM products WHERE id>$1', [1]).catch((e: unknown) => e)) as pg.DatabaseError;
    expect(changed.message).toMatch(/^debugkit: no recorded mock for query: SELECT name, price FROM products WHERE id>\$1 \(closest: mock-6: query text differs at character 42: /);
    expect(server.misses.slice(-2).map((m) => m.closest?.mock)).toEqual(['mock-7', 'mock-6']);
    // Still in sync afterwards.
    expect((await client.query('SELECT name, price FROM products WHERE id=$1', [1])).rows).toHaveLength(1);
  });
});
