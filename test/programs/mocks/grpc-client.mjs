// A gRPC client (@grpc/grpc-js): one unary call and one server-streaming call, output to grpc-out.txt.
// argv: <node_modules dir> <port> <name> [tls]  (tls: to localhost, trusting the default CAs and NODE_EXTRA_CA_CERTS)
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const [modules, port, name, secure] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'noop.js'));
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');
const def = loader.loadSync(path.join(import.meta.dirname, 'greeter.proto'));
const { Greeter } = grpc.loadPackageDefinition(def).shop;
const client = secure === 'tls' ? new Greeter(`localhost:${port}`, grpc.credentials.createSsl()) : new Greeter(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
const lines = [];
const deadline = () => new Date(Date.now() + 20_000);
try {
  const reply = await new Promise((resolve, reject) => client.Hello({ name }, { deadline: deadline() }, (err, r) => (err ? reject(err) : resolve(r))));
  lines.push(`hello: ${reply.message}`);
  await new Promise((resolve, reject) => {
    const call = client.Count({ name, n: 3 }, { deadline: deadline() });
    call.on('data', (r) => lines.push(`count ${r.seq}: ${r.message}`));
    call.on('error', reject);
    call.on('end', resolve);
  });
} catch (err) {
  lines.push(`error: ${err.code} ${err.details}`);
  process.exitCode = 2;
} finally {
  client.close();
}
writeFileSync('grpc-out.txt', lines.join('\n') + '\n');
console.log(lines.join('\n'));
