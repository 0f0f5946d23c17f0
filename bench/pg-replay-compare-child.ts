// Child of pg-replay-compare.ts: one replay listener per variant over the same set (argv: set.json, variants...).
import path from 'node:path';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { Duplex } from 'node:stream';
const [setFile, ...variants] = process.argv.slice(2);
const mocks = JSON.parse(readFileSync(setFile!, 'utf8'));
const ports: Record<string, number> = {};
const resets: Array<() => unknown> = [];
/**
 * Variant `floor`: the least a Node server answering this client costs, as a bound for any replayer.
 * Each chunk the client sends is answered by replayPostgres the first time it is seen (a replayer
 * per connection over a stand-in socket, fed the start-up and the chunks not seen before: the
 * workload's groups each stand alone), and from then on with the bytes it answered then, from a
 * Map, in one write: what is left per query is Node's and the kernel's.
 */
function floorServer(ReplayIndex: any, replayPostgres: any): net.Server {
  const answers = new Map<string, Buffer>();
  const index = new ReplayIndex(mocks);
  return net.createServer({ pauseOnConnect: true, allowHalfOpen: true, noDelay: true }, (socket) => {
    let last: Buffer | undefined;
    let answered: (() => void) | undefined;
    const shadow = new Duplex({
      read() {},
      write(c: Buffer, _e, cb) {
        last = c;
        answered?.();
        cb();
      },
    });
    void replayPostgres({ id: 'f', target: { host: '127.0.0.1', port: 1 }, client: shadow }, index, {});
    let first = true;
    let chain = Promise.resolve();
    socket.on('data', (chunk: Buffer) => {
      const key = chunk.toString('latin1');
      const cached = answers.get(key);
      if (cached && !first) return void socket.write(cached);
      chain = chain.then(async () => {
        const got = new Promise<void>((r) => (answered = r));
        if (first) shadow.push(chunk);
        else shadow.emit('data', chunk);
        first = false;
        await got;
        answers.set(key, last!);
        socket.write(last!);
      });
    });
    socket.on('end', () => {
      shadow.destroy();
      socket.end();
    });
    socket.resume();
  });
}

for (const v of variants) {
  if (v === 'floor') {
    const root = path.resolve(import.meta.dirname, '../src');
    const { replayPostgres } = await import(`${root}/toolsets/mocks/postgres/replayer.ts`);
    const { ReplayIndex } = await import(`${root}/toolsets/mocks/postgres/matcher.ts`);
    const server = floorServer(ReplayIndex, replayPostgres);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    ports[v] = (server.address() as net.AddressInfo).port;
    continue;
  }
  const root = v === 'new' ? path.resolve(import.meta.dirname, '../src') : path.resolve(import.meta.dirname, '../.bench-tmp', v, 'src');
  const { replayPostgres } = await import(`${root}/toolsets/mocks/postgres/replayer.ts`);
  const { ReplayIndex } = await import(`${root}/toolsets/mocks/postgres/matcher.ts`).catch(() => import(`${root}/toolsets/mocks/postgres/catalog.ts`)); // catalog.ts before the move
  let index = new ReplayIndex(mocks);
  resets.push(() => (index = new ReplayIndex(mocks)));
  const server = net.createServer({ pauseOnConnect: true, allowHalfOpen: true }, (socket) => {
    void replayPostgres({ id: 'c', target: { host: '127.0.0.1', port: 1 }, client: socket }, index, {
      onMiss: (m: { message: string }) => process.stderr.write(`MISS ${v}: ${m.message}\n`),
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  ports[v] = (server.address() as net.AddressInfo).port;
}
process.send!({ ports });
process.on('message', (m: string) => {
  if (m === 'exit') process.exit(0);
  if (m === 'reset') {
    resets.forEach((r) => r());
    process.send!({ reset: true });
    return;
  }
  if (m === 'cpu') {
    const u = process.cpuUsage();
    process.send!({ cpu: u.user + u.system });
  }
});
