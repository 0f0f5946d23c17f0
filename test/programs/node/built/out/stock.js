"use strict";
function low(bins, under) {
  const found = [];
  for (const bin of bins) {
    if (bin.count < under) found.push(bin.sku);
  }
  return found;
}
console.log(low([{ sku: "a", count: 1 }, { sku: "b", count: 9 }], 5).join(","));
//# sourceMappingURL=stock.js.map
