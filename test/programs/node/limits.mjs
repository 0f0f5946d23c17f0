// Adds up each region's daily limit through a chain of async calls; one region has no limits.
const regions = { eu: { limits: { daily: 5 } }, us: { limits: { daily: 7 } }, apac: {} };

async function fetchRegion(name) {
  await new Promise((resolve) => setTimeout(resolve, 1));
  return regions[name];
}

async function dailyLimit(name) {
  const region = await fetchRegion(name);
  return region.limits.daily;
}

async function summarize(names) {
  let sum = 0;
  for (const name of names) sum += await dailyLimit(name);
  return sum;
}

const total = await summarize(['eu', 'us', 'apac']);
console.log('total', total);
