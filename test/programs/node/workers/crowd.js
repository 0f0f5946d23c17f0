// More workers at once than debugkit debugs: every one still runs, and the program ends.
const { Worker } = require('node:worker_threads');

const count = Number(process.argv[2] ?? 70);
let answered = 0;
for (let i = 0; i < count; i++) {
  const worker = new Worker('require("node:worker_threads").parentPort.postMessage(1)', { eval: true });
  worker.on('message', () => {
    if (++answered === count) console.log(`all ${answered} answered`);
  });
}
