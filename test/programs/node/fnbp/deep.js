// Loads a module too deep for a recursive walk, then calls a function a function breakpoint names.
require('./deep-chain');
const { tail } = require('./tail');

console.log(`tail ${tail(2)}`);
