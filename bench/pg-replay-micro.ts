/**
 * The replayer's own work per PostgreSQL query, in-process (not part of `npm run bench`): the
 * client bytes node-postgres sends for the bench's workload (Parse/Bind/Describe/Execute/Sync,
 * unnamed statement) fed to replayPostgres over a fake socket, over the set pg-replay-compare.ts
 * recorded (.bench-tmp/pg-replay-compare-set.json). Prints µs per query group, best of 5.
 *   node --import tsx bench/pg-replay-micro.ts
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Duplex } from 'node:stream';
import { ReplayIndex } from '../src/toolsets/mocks/postgres/matcher.js';
import { replayPostgres } from '../src/toolsets/mocks/postgres/replayer.js';

const mocks = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../.bench-tmp/pg-replay-compare-set.json'), 'utf8'));

function cstr(s: string): Buffer {
  return Buffer.concat([Buffer.from(s), Buffer.from([0])]);
}
function msg(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}
function int16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
}
function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}
function group(id: number): Buffer {
  const v = Buffer.from(String(id));
  return Buffer.concat([
    msg('P', Buffer.concat([cstr(''), cstr('SELECT id, name, price FROM items WHERE id = $1'), int16(0)])),
    msg('B', Buffer.concat([cstr(''), cstr(''), int16(0), int16(1), int32(v.length), v, int16(0)])),
    msg('D', Buffer.concat([Buffer.from('P'), cstr('')])),
    msg('E', Buffer.concat([cstr(''), int32(0)])),
    msg('S', Buffer.alloc(0)),
  ]);
}
const startup = (() => {
  const body = Buffer.concat([int32(196608), cstr('user'), cstr('postgres'), cstr('database'), cstr('postgres'), Buffer.from([0])]);
  return Buffer.concat([int32(body.length + 4), body]);
})();

const N = 2000;
const groups = Array.from({ length: N }, (_, i) => group(((i * 37) % 1000) + 1));
let best = Infinity;
for (let round = 0; round < 5; round++) {
  let answers = 0;
  const socket = new Duplex({
    read() {},
    write(_c, _e, cb) {
      answers++;
      cb();
    },
  });
  const index = new ReplayIndex(mocks);
  const done = replayPostgres({ id: 'c', target: { host: '127.0.0.1', port: 1 }, client: socket as never }, index, {});
  socket.push(startup);
  await new Promise((r) => setImmediate(r));
  const t = performance.now();
  for (const g of groups) socket.emit('data', g);
  const us = ((performance.now() - t) * 1000) / N;
  best = Math.min(best, us);
  if (answers !== N + 1) throw new Error(`${answers} answers`);
  socket.push(null);
  socket.destroy();
  await done;
}
console.log(`replay JS work per query group: ${best.toFixed(2)} µs (best of 5, ${N} groups)`);
