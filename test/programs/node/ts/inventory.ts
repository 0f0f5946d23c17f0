export interface Item {
  name: string;
  onHand: number;
  reorderAt: number;
}

export function restock(item: Item): number {
  const short: number = item.reorderAt - item.onHand;
  const order = short > 0 ? short * 2 : 0;
  return order;
}
