'use strict';
// Prices two orders; the bulk discount is meant to start at BULK_FROM items.
const { lineTotal } = require('./lib/pricing');

const orders = [
  {
    id: 'a-1',
    lines: [
      { sku: 'pen', qty: 2, cents: 150 },
      { sku: 'pad', qty: 1, cents: 400 },
    ],
  },
  {
    id: 'b-2',
    lines: [
      { sku: 'ink', qty: 5, cents: 900 },
      { sku: 'pen', qty: 3, cents: 150 },
    ],
  },
];

let grand = 0;
for (const order of orders) {
  let total = 0;
  for (const line of order.lines) total += lineTotal(line);
  console.log(`order ${order.id}: ${total}`);
  grand += total;
}
console.log(`grand total ${grand}`);
console.error(`priced ${orders.length} orders in ${process.env.PRICING_REGION || 'us'}`);
