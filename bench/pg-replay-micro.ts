/**
 * The replayer's own work per PostgreSQL query, in-process (not part of `npm run bench`): the
 * client bytes node-postgres sends for the bench's workload (Parse/Bind/Describe/Execute/Sync,
 * unnamed statement) fed to replayPostgres over a fake socket, over the set pg-replay-compare.ts
 * recorded (.bench-tmp/pg-replay-compare-set.json). Prints µs per query group (wall and process CPU),
 * best of ROUNDS (5) runs of GROUPS (2000) groups, and a digest of the answers' bytes.
 * Each group is sent once the previous one is answered, as the bench's client does: the replayer
 * answers in slices of the event loop's turn (core/wait.ts), so a group may be answered a turn later.
 *   node --import tsx bench/pg-replay-micro.ts
 * VARIANT=<name> measures the tree extracted under .bench-tmp/<name> instead (see pg-replay-compare.ts).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Duplex } from 'node:stream';
import { serialize } from 'pg-protocol';

// VARIANT=<name> measures the tree extracted under .bench-tmp/<name> (as pg-replay-compare.ts), else this one.
const variant = process.env.VARIANT;
const root = variant ? path.resolve(import.meta.dirname, '../.bench-tmp', variant, 'src') : path.resolve(import.meta.dirname, '../src');
const { ReplayIndex } = await import(`${root}/toolsets/mocks/postgres/matcher.ts`);
const { replayPostgres } = await import(`${root}/toolsets/mocks/postgres/replayer.ts`);
const mocks = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../.bench-tmp/pg-replay-compare-set.json'), 'utf8'));

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}
function cstr(s: string): Buffer {
  return Buffer.concat([Buffer.from(s), Buffer.from([0])]);
}
/** The bytes node-postgres writes for `client.query(text, [id])` (Query.prepare, unnamed statement), made by its serializer. */
function group(id: number): Buffer {
  return Buffer.concat([
    serialize.parse({ text: 'SELECT id, name, price FROM items WHERE id = $1', name: '', types: [] }),
    serialize.bind({ portal: '', statement: '', values: [String(id)], binary: false }),
    serialize.describe({ type: 'P', name: '' }),
    serialize.execute({ portal: '', rows: 0 }),
    serialize.sync(),
  ]);
}
const startup = (() => {
  const body = Buffer.concat([int32(196608), cstr('user'), cstr('postgres'), cstr('database'), cstr('postgres'), Buffer.from([0])]);
  return Buffer.concat([int32(body.length + 4), body]);
})();

const N = Number(process.env.GROUPS ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const groups = Array.from({ length: N }, (_, i) => group(((i * 37) % 1000) + 1));
let best = Infinity;
let bestCpu = Infinity;
/** The answers' bytes (after the start-up), the same in every round: variants compare it to show they answer alike. */
let digest = '';
for (let round = 0; round < ROUNDS; round++) {
  let answers = 0;
  let answered: (() => void) | undefined;
  const hash = createHash('sha256');
  const socket = new Duplex({
    read() {},
    write(chunk: Buffer, _e, cb) {
      if (answers++ > 0) hash.update(chunk);
      answered?.();
      cb();
    },
  });
  const index = new ReplayIndex(mocks);
  const done = replayPostgres({ id: 'c', target: { host: '127.0.0.1', port: 1 }, client: socket as never }, index, {});
  socket.push(startup);
  // The index is built in slices before the start-up is answered.
  while (answers === 0) await new Promise((r) => setImmediate(r));
  const t = performance.now();
  const cpu = process.cpuUsage();
  for (const g of groups) {
    const want = answers + 1;
    socket.emit('data', g);
    if (answers < want) await new Promise<void>((r) => (answered = () => answers >= want && r()));
  }
  const { user, system } = process.cpuUsage(cpu);
  best = Math.min(best, ((performance.now() - t) * 1000) / N);
  bestCpu = Math.min(bestCpu, (user + system) / N);
  if (answers !== N + 1) throw new Error(`${answers} answers`);
  const d = hash.digest('hex').slice(0, 16);
  if (digest && d !== digest) throw new Error(`round ${round} answered other bytes (${d}, then ${digest})`);
  digest = d;
  socket.push(null);
  socket.destroy();
  await done;
}
console.log(`${(variant ?? 'this tree').padEnd(9)} replay JS work per query group: ${best.toFixed(2)} µs wall, ${bestCpu.toFixed(2)} µs CPU (best of ${ROUNDS}, ${N} groups); answers ${digest}`);
