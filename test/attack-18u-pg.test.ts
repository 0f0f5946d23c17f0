import { execFile } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { KeptBytes } from '../src/toolsets/mocks/kept.js';
import type { PostgresMock } from '../src/toolsets/mocks/keploy/types.js';
import { MESSAGES_PER_TURN } from '../src/toolsets/mocks/postgres/grouping.js';
import { MAX_STRUCTURED_VALUES } from '../src/toolsets/mocks/postgres/keploy.js';
import { recordPostgres } from '../src/toolsets/mocks/postgres/recorder.js';
import { listen, replayingListener, startPostgres } from '../src/toolsets/mocks/postgres/testing.js';
import { BackendSplitter, codeOf } from '../src/toolsets/mocks/postgres/wire.js';
import { promisify } from 'node:util';
import { mocksFixture } from './helpers/mocks-fixture.js';
import { turnsMarked } from './helpers/stall.js';

/**
 * Attack 18u P9: recording ordinary psql answers of many small rows built one object per row on
 * the loop (ten answers of 90,000 rows: 3.7 s held, 1 GB, the set never written). An answer of
 * more values than MAX_STRUCTURED_VALUES is kept as its bytes; the rows of one within it are read
 * as they arrive, a chunk a turn.
 */

const BIG = 'select i from generate_series(1,60000) i';
// 100,000 rows of no column: 7 bytes each, the most rows one answer within the 1 MiB a mock holds can have.
const EMPTY = 'select from generate_series(1,100000)';
const SMALL = "select 'small', 2";

/** Runs psql against `port` with `queries`; resolves with its output. */
async function psql(port: number, password: string, queries: readonly string[]): Promise<string> {
  const args = ['-X', '-A', '-t', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', ...queries.flatMap((q) => ['-c', q])];
  const env = { ...process.env, PGPASSWORD: password, PGSSLMODE: 'disable' };
  return (await promisify(execFile)('psql', args, { env, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 })).stdout;
}

/** A relay to `port` keeping the bytes the server side sent down: what psql was given. */
async function relay(port: number): Promise<{ port: number; down: Buffer[]; close(): Promise<void> }> {
  const down: Buffer[] = [];
  const server = net.createServer((client) => {
    const up = net.connect({ host: '127.0.0.1', port });
    up.on('data', (d: Buffer) => down.push(d));
    client.pipe(up).pipe(client);
    const end = () => (client.destroy(), up.destroy());
    client.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, down, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** The server's messages after the startup's first ReadyForQuery (authentication differs on replay; the answers must not). */
function answers(down: readonly Buffer[]): Buffer {
  const messages = new BackendSplitter().push(Buffer.concat(down));
  return Buffer.concat(messages.slice(messages.findIndex((m) => codeOf(m) === 'Z') + 1));
}

const f = mocksFixture('debugkit-attack-18u-pg-', () => startPostgres(), {
  prepare: (root) => {
    writeFileSync(path.join(root, 'rows.sh'), `#!/bin/sh\nexec psql -X -A -t -h 127.0.0.1 -p "$1" -U postgres -d postgres -c "${BIG}" -c "${EMPTY}" -c "${SMALL}" > rows-out.txt\n`);
    chmodSync(path.join(root, 'rows.sh'), 0o755);
  },
});

describe('attack 18u P9: PostgreSQL answers of many rows (a real PostgreSQL)', () => {
  it('reads the rows of a 60,000-row answer in several turns and stops at the bound; keeps it and a 100,000-row answer as bytes, and replays the same bytes', async () => {
    const mocks: PostgresMock[] = [];
    const listener = await listen(async (conn) => {
      conn.target.port = f.db.port;
      const upstream = net.connect({ host: '127.0.0.1', port: f.db.port, allowHalfOpen: true });
      await recordPostgres(conn, upstream, { onMock: (m) => mocks.push(m), kept: new KeptBytes() });
    });
    const recorded = await relay(listener.port);
    // A row's cell is read with readInt32BE (its length): the turns in which cells were read, and how many.
    const read = turnsMarked();
    let cells = 0;
    const readInt32BE = Buffer.prototype.readInt32BE;
    vi.spyOn(Buffer.prototype, 'readInt32BE').mockImplementation(function (this: Buffer, ...args: unknown[]) {
      cells++;
      read.mark();
      return readInt32BE.call(this, args[0] as number | undefined);
    });
    let output: string;
    try {
      output = await psql(recorded.port, f.db.password, [BIG, EMPTY]);
    } finally {
      vi.restoreAllMocks();
    }
    await recorded.close();
    await listener.close();
    expect(output.split('\n').slice(-3)).toEqual(['59999', '60000', '']);
    for (const query of [BIG, EMPTY]) {
      const answer = mocks.find((m) => m.spec.postgresrequests[0]!.query?.string === query)!.spec.postgresresponses[0]!;
      // Kept as its bytes: no row objects, no header letters (before: one of each a row, built in the turn the answer ended).
      expect(answer.data_row).toBeUndefined();
      expect(answer.header).toBeUndefined();
    }
    // Reading stopped at the bound (a row is two values: the message and its cell), in turns of at most MESSAGES_PER_TURN
    // rows, twice that when a turn had reads of its own and then a slice (before: all 60,000 in the one turn the answer ended in).
    expect(cells).toBeLessThanOrEqual(MAX_STRUCTURED_VALUES / 2 + 100);
    expect(read.count()).toBeGreaterThanOrEqual(Math.floor(cells / (2 * MESSAGES_PER_TURN)));

    const replayer = await replayingListener(mocks);
    const replayed = await relay(replayer.port);
    expect(await psql(replayed.port, 'any password', [BIG, EMPTY])).toBe(output);
    await replayed.close();
    await replayer.close();
    expect(replayer.misses).toEqual([]);
    expect(answers(replayed.down).equals(answers(recorded.down))).toBe(true);
  }, 120_000);

  it('records a 100,000-row answer and a 60,000-row one into a written set, which replays the same output with the server stopped', async () => {
    const port = f.db.port;
    const rec = await f.dk.structured('keploy_mock_record', { command: `./rows.sh ${port}`, env: [`PGPASSWORD=${f.db.password}`, 'PGSSLMODE=disable'], path: 'keploy-rows' });
    expect(rec).toMatchObject({ success: true, mockCount: 6 });
    const recorded = readFileSync(path.join(f.root, 'rows-out.txt'), 'utf8');
    // psql -A -t prints nothing for a row of no column: the 60,000 numbers, then the small answer.
    expect(recorded.split('\n').slice(-4)).toEqual(['59999', '60000', 'small|2', '']);
    const written = readFileSync(path.resolve(f.root, rec.mockFilePath), 'utf8');
    // Before: 160,000 row entries and as many header letters; now the one small answer's row only.
    expect(written.match(/row_values/g)).toHaveLength(1);
    await f.db.stop();

    writeFileSync(path.join(f.root, 'rows-out.txt'), '');
    const replay = await f.dk.structured('keploy_mock_test', { command: `./rows.sh ${port}`, env: ['PGPASSWORD=other', 'PGSSLMODE=disable'], path: 'keploy-rows' });
    expect(replay).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(f.root, 'rows-out.txt'), 'utf8')).toBe(recorded);
  }, 180_000);
});
