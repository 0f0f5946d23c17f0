const { execFileSync } = require('node:child_process');
const { parentPort } = require('node:worker_threads');

execFileSync('sleep', ['4']);
const woke = 'awake';
parentPort.postMessage(woke);
