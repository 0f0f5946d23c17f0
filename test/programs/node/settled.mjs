// A rejection Promise.allSettled handles: the program goes on and ends well.
async function fail() {
  await null;
  throw new Error('handled by allSettled');
}
const results = await Promise.allSettled([fail()]);
console.log(results[0].status);
