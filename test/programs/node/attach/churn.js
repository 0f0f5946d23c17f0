// A program that runs until it is stopped, starting a short-lived worker thread every 100 ms.
const { Worker } = require('node:worker_threads');

let ticks = 0;
function tick() {
  ticks++;
  return ticks;
}

setInterval(() => {
  tick();
  new Worker('setTimeout(() => {}, 200)', { eval: true });
}, 100);
