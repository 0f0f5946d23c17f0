// `helper` is never called; `other` is.
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- never called, as the test needs
function helper() {
  return 1;
}

function other() {
  return 2;
}

console.log(`other ${other()}`);
