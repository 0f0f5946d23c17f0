// Calls the same APIs with Node's fetch and writes what it got to out-node.txt.
import { writeFileSync } from 'node:fs';

const [httpPort, httpsPort, item] = process.argv.slice(2);
const a = await fetch(`http://127.0.0.1:${httpPort}/items/${item}?verbose=1`);
const b = await fetch(`https://localhost:${httpsPort}/orders`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ item, qty: 2 }),
});
writeFileSync('out-node.txt', `GET ${a.status} ${await a.text()}\nPOST ${b.status} ${await b.text()}\n`);
