import { parentPort } from 'node:worker_threads';

interface Quote {
  qty: string;
  unitCents: number;
}

function price(quote: Quote): number {
  const qty: number = parseInt(quote.qty, 10);
  return qty * quote.unitCents;
}

parentPort!.on('message', (quote: Quote) => parentPort!.postMessage(price(quote)));
