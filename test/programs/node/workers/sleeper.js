// A worker blocked in a synchronous call (a child it waits for) while the main thread is stopped.
const path = require('node:path');
const { Worker } = require('node:worker_threads');

const worker = new Worker(path.join(__dirname, 'sleeper-worker.js'));
worker.on('message', (m) => console.log(`worker says ${m}`));
setTimeout(() => {
  const waiting = 'main';
  console.log(`${waiting} waits`);
}, 300);
