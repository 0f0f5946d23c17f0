const { parentPort, workerData } = require('node:worker_threads');

function sumPositive(values) {
  let total = 0;
  for (const v of values) {
    if (v > 0) total += v;
  }
  return total;
}

parentPort.postMessage(sumPositive(workerData.values));
