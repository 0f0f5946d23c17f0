'use strict';
// Forks itself once; the child reports the flags it was started with.
const { fork } = require('node:child_process');

if (process.argv[2] === 'child') {
  process.send(`child ran with ${JSON.stringify(process.execArgv)}`, () => process.exit(0));
} else {
  const child = fork(__filename, ['child']);
  child.on('message', (message) => console.log(message));
  child.on('exit', (code) => console.log(`child exited ${code}`));
}
