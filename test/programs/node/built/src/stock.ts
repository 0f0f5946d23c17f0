// Compiled to ../out/stock.js with a source map (esbuild --sourcemap): debugged by its .ts lines.
type Bin = { sku: string; count: number };

function low(bins: Bin[], under: number): string[] {
  const found: string[] = [];
  for (const bin of bins) {
    if (bin.count < under) found.push(bin.sku);
  }
  return found;
}

console.log(
  low(
    [
      { sku: 'a', count: 1 },
      { sku: 'b', count: 9 },
    ],
    5,
  ).join(','),
);
