import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MockStore } from './keploy/store.js';
import { requirePsycopg2, startPostgres } from './postgres/testing.js';
import { MAX_MOCK_EXCHANGE_BYTES } from './protocol.js';
import { recordMocks } from './record.js';
import { startRedis } from './redis/testing.js';
import { loadCa } from './session.js';

/**
 * Attack 18k-A F2: keploy_mock_record kept every call it captured (60,000 Redis SETs, 300 uploads
 * of 1 MB: a 307 MB set written and reported a success, though no replay takes a set over 32 MiB).
 * A recording now keeps what a set may hold, as replay's `onMiss: record` does; the program's
 * calls past it still go through, and the outcome counts them.
 */

const PROGRAM = `
const [port, count] = process.argv.slice(2);
const lines = [];
for (let i = 0; i < Number(count); i++) {
  const res = await fetch('http://127.0.0.1:' + port + '/n/' + i);
  lines.push(res.status + ' ' + (await res.text()));
}
(await import('node:fs')).writeFileSync('out.txt', lines.join('\\n') + '\\n');
`;

let server: http.Server;
let port = 0;
let served = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    served++;
    res.end(`answer ${req.url}`);
  });
  port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
});
afterAll(() => server?.close());

/** Records `command` in a fresh workspace holding the program `file` (its text `program`); the set goes to keploy/. */
async function recordIn(file: string, program: string, command: string, caps: { maxMocks?: number } = {}) {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'debugkit-record-')));
  writeFileSync(path.join(dir, file), program);
  const { ca, env } = await loadCa(() => undefined);
  const outcome = await recordMocks({ command, dir: path.join(dir, 'keploy'), cwd: dir, ca, caEnv: env, timeoutMs: 60_000, ownPorts: [], warn: () => undefined, ...caps });
  return { dir, outcome };
}

describe('recordMocks keeps at most what a set may hold', () => {
  it('past the cap, keeps the first calls, counts the rest, and the program gets every answer', async () => {
    const { dir, outcome } = await recordIn('prog.mjs', PROGRAM, `node prog.mjs ${port} 8`, { maxMocks: 3 });
    expect(outcome.run.exitCode).toBe(0);
    // Every call was answered by the real server, those past the cap too.
    expect(served).toBe(8);
    expect(readFileSync(path.join(dir, 'out.txt'), 'utf8')).toBe(Array.from({ length: 8 }, (_, i) => `200 answer /n/${i}\n`).join(''));
    expect({ mockCount: outcome.mockCount, dropped: outcome.dropped }).toEqual({ mockCount: 3, dropped: 5 });
    const mocks = await new MockStore(path.join(dir, 'keploy')).read(outcome.name);
    expect(mocks.map((m) => (m.kind === 'Http' ? m.spec.req.url : m.kind))).toEqual([0, 1, 2].map((i) => `http://127.0.0.1:${port}/n/${i}`));
  }, 60_000);
});

/**
 * Attack 18o F1: a PostgreSQL request group up to 64 MiB (a result set of 60 MB) was kept and
 * encoded into a mock on the event loop, only to be dropped after as too big for a set: 3 such
 * queries held other clients 8-11 s, 8 connections of them at once exhausted the heap. Redis
 * replies likewise (6 connections reading a 56 MB list: 3 s). Past MAX_MOCK_EXCHANGE_BYTES an
 * exchange is relayed, counted and never built into a mock.
 */
const OVER_BOUND_PROGRAM = `
import socket, sys, psycopg2
pg_port, pg_password, redis_port, redis_password = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4].encode()
conn = psycopg2.connect(host="127.0.0.1", port=pg_port, user="postgres", password=pg_password, dbname="postgres", sslmode="disable")
cur = conn.cursor()
cur.execute("SELECT 41 + 1")
small = cur.fetchone()[0]
cur.execute("SELECT repeat('x', 1000) FROM generate_series(1, 3000)")
big = len(cur.fetchall())
conn.close()
s = socket.create_connection(("127.0.0.1", redis_port))
f = s.makefile("rb")
def call(*args):
    s.sendall(b"*%d\\r\\n" % len(args) + b"".join(b"$%d\\r\\n%s\\r\\n" % (len(a), a) for a in args))
    line = f.readline()
    if line.startswith(b"$"): line += f.read(int(line[1:]) + 2)
    return line
call(b"AUTH", redis_password)
call(b"SET", b"big", b"y" * (3 << 20))
got = len(call(b"GET", b"big"))
open("out.txt", "w").write("%d %d %d\\n" % (small, big, got))
`;

describe('recordMocks relays an exchange over the one bound of every recorder, counts it, and builds no mock of it', () => {
  it('a PostgreSQL result of 3 MB and a Redis value of 3 MiB: the program gets them whole; the small query is recorded', async () => {
    await requirePsycopg2();
    const pg = await startPostgres();
    const redis = await startRedis();
    try {
      const { dir, outcome } = await recordIn('prog.py', OVER_BOUND_PROGRAM, `/usr/bin/python3 prog.py ${pg.port} ${pg.password} ${redis.port} ${redis.password}`);
      expect(outcome.run.exitCode, JSON.stringify(outcome.run)).toBe(0);
      expect(readFileSync(path.join(dir, 'out.txt'), 'utf8')).toBe(`42 3000 ${(3 << 20) + String(3 << 20).length + 5}\n`);
      expect(outcome.droppedWhy).toEqual(
        expect.arrayContaining([
          { why: `a PostgreSQL request and its answer over ${MAX_MOCK_EXCHANGE_BYTES} bytes (relayed, not recorded)`, count: 1 },
          { why: expect.stringMatching(new RegExp(`^a Redis (command|reply) over ${MAX_MOCK_EXCHANGE_BYTES} bytes: it and the rest of its connection were relayed, not recorded$`)), count: 1 },
        ]),
      );
      const mocks = await new MockStore(path.join(dir, 'keploy')).read(outcome.name);
      const text = JSON.stringify(mocks);
      expect(text).toContain('41 + 1');
      expect(text).not.toContain('generate_series');
      expect(text).not.toContain('y'.repeat(1000));
    } finally {
      await redis.stop();
      await pg.stop();
    }
  }, 90_000);
});
