'use strict';
// Parses three records; the program skips the one that is not JSON, on purpose.
function parse(text) {
  return JSON.parse(text);
}

let ok = 0;
for (const text of ['{"a":1}', '{bad', '[2]']) {
  try {
    parse(text);
    ok++;
  } catch {
    console.log('skipped', text);
  }
}
console.log('parsed', ok);
