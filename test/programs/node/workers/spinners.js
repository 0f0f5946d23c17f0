// Three workers that only compute; the main thread waits for them.
const { Worker } = require('node:worker_threads');

for (let i = 0; i < 3; i++) {
  new Worker('let spins = 0; for (;;) spins++;', { eval: true });
}
