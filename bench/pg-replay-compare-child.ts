// Child of pg-replay-compare.ts: one replay listener per variant over the same set (argv: set.json, variants...).
import path from 'node:path';
import { readFileSync } from 'node:fs';
import net from 'node:net';
const [setFile, ...variants] = process.argv.slice(2);
const mocks = JSON.parse(readFileSync(setFile!, 'utf8'));
const ports: Record<string, number> = {};
const resets: Array<() => unknown> = [];
for (const v of variants) {
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
