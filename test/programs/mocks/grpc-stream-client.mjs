// A gRPC client (@grpc/grpc-js): a client-streaming call (Sum) and a bidirectional ping-pong
// (Chat: each word is sent only after the reply to the previous one came), output to
// grpc-stream-out.txt. argv: <node_modules dir> <port> <words, comma-separated> [sum|chat: only that call]
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const [modules, port, words, only] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'noop.js'));
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');
const def = loader.loadSync(path.join(import.meta.dirname, 'greeter.proto'));
const { Greeter } = grpc.loadPackageDefinition(def).shop;
const client = new Greeter(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
const names = words.split(',');
const lines = [];
const deadline = () => new Date(Date.now() + 20_000);
try {
  if (only !== 'chat') {
    const sum = await new Promise((resolve, reject) => {
      const call = client.Sum({ deadline: deadline() }, (err, r) => (err ? reject(err) : resolve(r)));
      for (const name of names) call.write({ name });
      call.end();
    });
    lines.push(`sum: ${sum.message} (${sum.seq})`);
  }
  if (only !== 'sum')
    await new Promise((resolve, reject) => {
      const call = client.Chat({ deadline: deadline() });
      let next = 0;
      const send = () => (next < names.length ? call.write({ name: names[next++] }) : call.end());
      call.on('data', (r) => {
        lines.push(`chat ${r.seq}: ${r.message}`);
        if (r.seq > 0) send();
      });
      call.on('error', reject);
      call.on('end', resolve);
      send();
    });
} catch (err) {
  lines.push(`error: ${err.code} ${err.details}`);
  process.exitCode = 2;
} finally {
  client.close();
}
writeFileSync('grpc-stream-out.txt', lines.join('\n') + '\n');
console.log(lines.join('\n'));
