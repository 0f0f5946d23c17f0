// Sums each shard's positive values in a worker thread of its own; the main thread prints the sums.
const path = require('node:path');
const { Worker } = require('node:worker_threads');

const shards = [
  [3, 1, 2],
  [10, -4, 7],
];
const sums = [];
let done = 0;
for (const [index, values] of shards.entries()) {
  const worker = new Worker(path.join(__dirname, 'shard.js'), { workerData: { index, values } });
  worker.on('message', (sum) => {
    sums[index] = sum;
    if (++done === shards.length) console.log(`sums ${sums.join(',')}`);
  });
}
