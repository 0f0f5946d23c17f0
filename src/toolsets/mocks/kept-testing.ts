import net from 'node:net';
import { Duplex } from 'node:stream';
import { afterEach } from 'vitest';
import { KeptBytes } from './kept.js';

/** Test helpers for what a replay keeps of calls not finished (kept.ts), and fake real servers that answer without end. */

/** A budget that remembers the most it ever lent. */
export class Watched extends KeptBytes {
  lent = 0;
  most = 0;
  override take(n: number): boolean {
    if (!super.take(n)) return false;
    this.lent += n;
    this.most = Math.max(this.most, this.lent);
    return true;
  }
  override give(n: number): void {
    super.give(n);
    this.lent = Math.max(0, this.lent - n);
  }
}

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

/** Closed after the test. */
export function afterTest(close: () => void): void {
  closers.push(close);
}

/** A loopback listener, closed after the test; resolves with its port. */
export async function loopback(handler: (socket: net.Socket) => void): Promise<number> {
  const server = net.createServer(handler);
  afterTest(() => server.close());
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));
}

/** What a fake server pours at most: past the bound of an answer relayed whole (RELAYED_MAX_BYTES), and more than its socket's buffers hold. */
export const FAKE_CAP = 96 * 1024 * 1024;

/**
 * A fake "real server": `answer` gets each connection and a `pour(chunk)` that writes `chunk` again
 * and again, as fast as it is taken, up to FAKE_CAP. `gone` resolves with the bytes a connection's
 * socket wrote once the other side closed it; `connections` counts them.
 */
export async function fakeServer(answer: (socket: net.Socket, pour: (chunk: Buffer) => void) => void) {
  let closed!: (written: number) => void;
  const gone = new Promise<number>((r) => (closed = r));
  let connections = 0;
  const port = await loopback((socket) => {
    connections++;
    socket.on('error', () => {});
    socket.once('close', () => closed(socket.bytesWritten));
    const pour = (chunk: Buffer) => {
      while (!socket.destroyed && socket.bytesWritten + socket.writableLength < FAKE_CAP) if (!socket.write(chunk)) return void socket.once('drain', () => pour(chunk));
    };
    answer(socket, pour);
  });
  return { port, gone, connections: () => connections };
}

/** Connects to 127.0.0.1:`port`, as a replay's fetch dials the real server. */
export function connectTo(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** The program's side of a replayed connection, in memory: what the replayer writes lands in `written`; `client.push` sends. */
export function programSide(): { client: Duplex; written: Buffer[] } {
  const written: Buffer[] = [];
  const client = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, done) {
      written.push(chunk);
      done();
    },
  });
  return { client, written };
}
