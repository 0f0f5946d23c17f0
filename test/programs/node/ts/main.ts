import { restock, type Item } from './inventory';

const items: Item[] = [
  { name: 'bolt', onHand: 3, reorderAt: 5 },
  { name: 'nut', onHand: 12, reorderAt: 10 },
];
const orders: number[] = items.map(restock);
console.log(JSON.stringify(orders));
