// Prices quotes in a TypeScript worker thread started with its own loader (as tsx's docs show for workers).
import path from 'node:path';
import { Worker } from 'node:worker_threads';

const worker = new Worker(path.join(__dirname, 'quote-worker.ts'), { execArgv: ['--require', 'tsx/cjs'] });
let answered = 0;
worker.on('message', (cents: number) => {
  console.log(`quote ${cents}`);
  if (++answered === 2) void worker.terminate();
});
worker.postMessage({ qty: '3', unitCents: 250 });
worker.postMessage({ qty: '1,200', unitCents: 5 });
