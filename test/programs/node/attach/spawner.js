// Starts the ticker under `node --inspect` on the port it is given, and waits for it.
const path = require('node:path');
const { spawn } = require('node:child_process');

const child = spawn(process.execPath, [`--inspect=127.0.0.1:${process.argv[2]}`, path.join(__dirname, 'ticker.js')], { stdio: 'inherit' });
child.on('exit', (code) => console.log(`ticker ended ${code}`));
