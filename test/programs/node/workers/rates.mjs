// Converts amounts in an ES-module worker thread; one currency has no rate.
import { Worker } from 'node:worker_threads';

const worker = new Worker(new URL('./convert.mjs', import.meta.url), {
  workerData: [
    { amount: 5, currency: 'eur' },
    { amount: 2, currency: 'chf' },
  ],
});
worker.on('message', (total) => console.log(`total ${total}`));
worker.on('error', (err) => {
  console.error(`worker failed: ${err.message}`);
  process.exitCode = 1;
});
