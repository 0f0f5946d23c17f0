// The main thread waits on a worker that never answers: the work is all in the worker.
const { Worker } = require('node:worker_threads');

const worker = new Worker(
  `
  let spins = 0;
  while (true) spins++;
  `,
  { eval: true },
);
worker.on('exit', () => console.log('worker gone'));
