import net from 'node:net';
import { dial } from '../dial.js';
import { pollUntil } from '../../../core/wait.js';
import { closeServer, interceptingListener, listen, pattern, type Closable } from '../http/test-support.js';
import type { GenericMock } from '../keploy/types.js';
import type { GenericIndex } from './matcher.js';
import { recordGeneric, type RecordGenericOptions, type RecordGenericResult } from './recorder.js';
import { replayGeneric, type ReplayGenericOptions, type ReplayGenericResult } from './replayer.js';

/** Test helpers: two small line-protocol servers, recording and replaying listeners, a client. */

export interface LineServer extends Closable {
  connections: number;
}

function lineServer(onConnect: (socket: net.Socket) => void, onLine: (line: string, socket: net.Socket) => void): Promise<LineServer> {
  const state = { connections: 0 };
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    state.connections++;
    socket.on('error', () => {});
    let buffered = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      for (let eol = buffered.indexOf('\n'); eol >= 0 && !socket.writableEnded; eol = buffered.indexOf('\n')) {
        const line = buffered.slice(0, eol);
        buffered = buffered.slice(eol + 1);
        onLine(line, socket);
      }
    });
    // The client half-closed: answer what it sent (done above), then close our side too.
    socket.on('end', () => socket.end());
    onConnect(socket);
  });
  return listen(server).then((port) => Object.assign(state, { port, close: () => closeServer(server) }));
}

/**
 * A key-value server speaking when spoken to: `GET k` -> `VALUE v` / `NOTFOUND`, `SET k v` -> `OK`,
 * `INCR k` -> `VALUE n`, `BIG n` -> n pattern bytes, `BIN` -> 3 non-ASCII bytes and \n, `QUIT` -> `BYE`
 * and the server closes. Each connection starts from `x = 1`.
 */
export function startKvServer(): Promise<LineServer> {
  return lineServer(
    () => {},
    (line, socket) => {
      const store = ((socket as net.Socket & { store?: Map<string, string> }).store ??= new Map([['x', '1']]));
      const [cmd, key = '', value = ''] = line.split(' ');
      switch (cmd) {
        case 'GET':
          return void socket.write(store.has(key) ? `VALUE ${store.get(key)}\n` : 'NOTFOUND\n');
        case 'SET':
          store.set(key, value);
          return void socket.write('OK\n');
        case 'INCR':
          store.set(key, String(Number(store.get(key) ?? 0) + 1));
          return void socket.write(`VALUE ${store.get(key)}\n`);
        case 'BIG':
          return void socket.write(pattern(0, Number(key)));
        case 'BIN':
          return void socket.write(Buffer.from([0xff, 0x00, 0x80, 0x0a]));
        case 'QUIT':
          return void socket.end('BYE\n');
        default:
          socket.write('ERR\n');
      }
    },
  );
}

/** A server that speaks first: `220 hello` on connect, then each line upper-cased; `QUIT` -> `221 bye`, closed. */
export function startGreeterServer(): Promise<LineServer> {
  return lineServer(
    (socket) => socket.write('220 hello\n'),
    (line, socket) => (line === 'QUIT' ? socket.end('221 bye\n') : socket.write(`${line.toUpperCase()}\n`)),
  );
}

/** Plays the capture proxy while recording: each connection goes to the real server at `target`. */
export function recordingListener(target: { host: string; port: number }, options: Omit<RecordGenericOptions, 'onMock'>): Promise<Closable & { mocks: GenericMock[]; results: RecordGenericResult[] }> {
  const mocks: GenericMock[] = [];
  const results: RecordGenericResult[] = [];
  return interceptingListener(target, async (conn) => {
    const upstream = await dial(conn.target, 5000);
    results.push(await recordGeneric(conn, upstream, { ...options, onMock: (m) => mocks.push(m) }));
  }).then((l) => Object.assign(l, { mocks, results }));
}

/** Plays the capture proxy while replaying: each connection, intercepted for `target`, is answered from `index`. */
export function replayingListener(target: { host: string; port: number }, index: GenericIndex, options: ReplayGenericOptions = {}): Promise<Closable & { results: ReplayGenericResult[] }> {
  const results: ReplayGenericResult[] = [];
  return interceptingListener(target, async (conn) => void results.push(await replayGeneric(conn, index, options))).then((l) => Object.assign(l, { results }));
}

/** A client reading lines or byte counts from one connection. */
export class Client {
  private buffer = Buffer.alloc(0);
  private waiter: (() => void) | undefined;
  ended = false;
  readonly socket: net.Socket;

  constructor(port: number) {
    // Not half-open: like most clients, it closes once the server has.
    this.socket = net.connect({ host: '127.0.0.1', port });
    this.socket.on('error', () => {});
    this.socket.on('data', (c: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, c]);
      this.waiter?.();
    });
    this.socket.on('end', () => {
      this.ended = true;
      this.waiter?.();
    });
    this.socket.on('close', () => {
      this.ended = true;
      this.waiter?.();
    });
  }

  send(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** The next `n` bytes, or fewer if the peer closed first. */
  readBytes(n: number): Promise<Buffer> {
    return this.until(() => (this.buffer.length >= n ? n : this.ended ? this.buffer.length : -1));
  }

  /** The next line with its `\n` ('' when the peer closed instead). */
  async readLine(): Promise<string> {
    const b = await this.until(() => {
      const eol = this.buffer.indexOf(0x0a);
      return eol >= 0 ? eol + 1 : this.ended ? this.buffer.length : -1;
    });
    return b.toString('latin1');
  }

  /** Sends a line, reads one back. */
  async ask(line: string): Promise<string> {
    this.send(`${line}\n`);
    return this.readLine();
  }

  /** Resolves once the peer has closed (EOF), with the bytes it sent meanwhile. */
  async closed(): Promise<Buffer> {
    return this.until(() => (this.ended ? this.buffer.length : -1));
  }

  end(): void {
    this.socket.end();
  }

  private until(ready: () => number): Promise<Buffer> {
    return new Promise((resolve) => {
      const check = () => {
        const n = ready();
        if (n < 0) return;
        this.waiter = undefined;
        const out = this.buffer.subarray(0, n);
        this.buffer = this.buffer.subarray(n);
        resolve(out);
      };
      this.waiter = check;
      check();
    });
  }
}

/** Polls `cond` every 10 ms, for 3 s at most (the one poll loop, core/wait). */
export async function eventually(cond: () => boolean): Promise<void> {
  await pollUntil(cond, { timeoutMs: 3000, intervalMs: 10 });
}
