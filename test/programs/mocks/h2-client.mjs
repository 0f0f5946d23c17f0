// An HTTP/2 client over TLS (node:http2, ALPN h2 only): a GET and a POST, output to h2-out.txt.
// argv: <port> <item>
import http2 from 'node:http2';
import { writeFileSync } from 'node:fs';

const [port, item] = process.argv.slice(2);
const session = http2.connect(`https://localhost:${port}`);
session.on('error', (err) => {
  writeFileSync('h2-out.txt', `error: ${err.message}\n`);
  process.exit(2);
});
function request(headers, body) {
  return new Promise((resolve, reject) => {
    const req = session.request(headers);
    let status = 0;
    let text = '';
    req.on('response', (h) => (status = h[':status']));
    req.on('data', (d) => (text += d));
    req.on('end', () => resolve(`${status} ${text}`));
    req.on('error', reject);
    req.end(body);
  });
}
const lines = [`protocol: ${await new Promise((r) => session.once('connect', () => r(session.alpnProtocol)))}`];
lines.push(await request({ ':method': 'GET', ':path': `/stock/${item}` }));
lines.push(await request({ ':method': 'POST', ':path': '/orders', 'content-type': 'application/json' }, JSON.stringify({ item, qty: 2 })));
session.close();
writeFileSync('h2-out.txt', lines.join('\n') + '\n');
