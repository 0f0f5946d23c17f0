'use strict';
// A local far longer than any answer shows.
const big = 'x'.repeat(40 * 1024 * 1024);
const small = 'ok';
console.log(big.length, small);
