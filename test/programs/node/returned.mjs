// An async function's try does not catch what it returns without awaiting it.
async function fail() {
  await null;
  throw new Error('not caught by the try');
}
async function wrapper() {
  try {
    return fail();
  } catch {
    return 'never';
  }
}
console.log(await wrapper());
