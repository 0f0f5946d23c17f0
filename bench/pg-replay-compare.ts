/**
 * PostgreSQL replay before/after, side by side in one run (not part of `npm run bench`): a real
 * PostgreSQL 15 with the bench's items table, one recording of the bench's workload (2000 SELECTs
 * by key + 20 INSERTs), then rounds of the workload direct and against replay listeners serving
 * that set with the replayer of each variant, the order rotating; medians of queries/s and of the
 * replaying process's CPU per query (from after the connection's start-up, and its index built, to
 * the last answer). Variants: `new` is this tree; any other name is a tree
 * extracted under .bench-tmp/<name>, e.g. for the state before a change:
 *   mkdir -p .bench-tmp/base && git archive <rev> src | tar -x -C .bench-tmp/base
 *   VARIANTS=base,new ROUNDS=9 node --import tsx bench/pg-replay-compare.ts
 * VARIANTS may name `floor` too: each distinct request answered once by this tree's replayer, then
 * from a Map of those answers (see pg-replay-compare-child.ts), the bound on what any replayer can do.
 * PROF=1 writes the replaying process's CPU profile (node --cpu-prof) to .bench-tmp/prof.
 * STOPPED=1 then stops PostgreSQL and replays ROUNDS more times per variant (the bench's last row).
 */
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { recordingListener, startPostgres } from '../src/toolsets/mocks/postgres/testing.js';

const TMP = path.resolve(import.meta.dirname, '../.bench-tmp');
mkdirSync(TMP, { recursive: true });
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const variants = (process.env.VARIANTS ?? 'base,new').split(',');
const db = await startPostgres();
const admin = new pg.Client({ host: '127.0.0.1', port: db.port, user: 'postgres', password: db.password, database: 'postgres' });
await admin.connect();
await admin.query('CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10, 2) NOT NULL, tags text[] NOT NULL)');
await admin.query(`INSERT INTO items SELECT g, 'item-' || g, g * 1.25, ARRAY['bench'] FROM generate_series(1, 1000) g`);
await admin.query('CREATE TABLE events (id serial PRIMARY KEY, item int NOT NULL, note text NOT NULL)');
await admin.end();
/** One run; `connected` is awaited after connecting, before the first query (the replaying process's CPU is read there). */
async function workload(port: number, connected?: () => Promise<unknown>) {
  const c = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password: db.password, database: 'postgres' });
  await c.connect();
  await connected?.();
  const t = performance.now();
  let n = 0;
  for (let i = 0; i < 2000; i++) {
    const id = ((i * 37) % 1000) + 1;
    const r = await c.query('SELECT id, name, price FROM items WHERE id = $1', [id]);
    n++;
    if (r.rows[0]?.name !== `item-${id}`) throw new Error('bad row');
    if (i % 100 === 99) {
      await c.query('INSERT INTO events (item, note) VALUES ($1, $2)', [id, `n-${i}`]);
      n++;
    }
  }
  const ms = performance.now() - t;
  await c.end();
  return (n / ms) * 1000;
}
const rec = await recordingListener(db.port);
await workload(rec.port);
await rec.close();
const setFile = path.join(TMP, 'pg-replay-compare-set.json');
writeFileSync(setFile, JSON.stringify(rec.mocks));
const child = fork(path.join(import.meta.dirname, 'pg-replay-compare-child.ts'), [setFile, ...variants], {
  execArgv: ['--import', 'tsx', ...(process.env.PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.join(TMP, 'prof')}`] : [])],
  cwd: TMP,
});
const ports: Record<string, number> = await new Promise((r) => child.once('message', (m: any) => r(m.ports)));
const ways: Record<string, number> = { direct: db.port, ...ports };
const names = Object.keys(ways);
const qps: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
const cpu: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
const childCpu = () =>
  new Promise<number>((r) => {
    child.once('message', (m: any) => r(m.cpu));
    child.send('cpu');
  });
for (const n of names) await workload(ways[n]!);
for (let r = 0; r < ROUNDS; r++)
  for (let k = 0; k < names.length; k++) {
    const n = names[(r + k) % names.length]!;
    await new Promise((r) => {
      child.once('message', r);
      child.send('reset');
    });
    let c0 = 0;
    qps[n]!.push(await workload(ways[n]!, async () => (c0 = await childCpu())));
    cpu[n]!.push(((await childCpu()) - c0) / 2020);
  }
const med = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)]!;
};
for (const n of names)
  console.log(
    n.padEnd(8),
    'median q/s',
    med(qps[n]!).toFixed(0),
    (med(qps[n]!) / med(qps.direct!)).toFixed(2) + 'x',
    'child CPU us/query',
    med(cpu[n]!).toFixed(1),
    qps[n]!.map((x) => x.toFixed(0)).join(' '),
  );
if (process.env.STOPPED) {
  // The replays again with the server stopped (as `npm run bench` ends its PostgreSQL part).
  await db.stop();
  const after: Record<string, number[]> = {};
  const afterCpu: Record<string, number[]> = {};
  for (let r = 0; r < ROUNDS; r++)
    for (const n of names.filter((x) => x !== 'direct')) {
      await new Promise((r) => {
        child.once('message', r);
        child.send('reset');
      });
      let c0 = 0;
      (after[n] ??= []).push(await workload(ways[n]!, async () => (c0 = await childCpu())));
      (afterCpu[n] ??= []).push(((await childCpu()) - c0) / 2020);
    }
  for (const n of Object.keys(after))
    console.log(`${n} (server stopped)`.padEnd(8), 'median q/s', med(after[n]!).toFixed(0), 'child CPU us/query', med(afterCpu[n]!).toFixed(1), after[n]!.map((x) => x.toFixed(0)).join(' '));
}
child.send('exit');
await new Promise((r) => setTimeout(r, 500));
if (!process.env.STOPPED) await db.stop();
