import net from 'node:net';
import { onceBounded } from '../../core/wait.js';
import { HOP_CONNECT_OPTIONS } from './proxy/pipe.js';

export interface DialTarget {
  host: string;
  port: number;
}

/** The one way to reach a real destination over TCP: connected within `timeoutMs`, or rejected with the socket destroyed. */
export async function dial(target: DialTarget, timeoutMs: number): Promise<net.Socket> {
  const socket = net.connect({ host: target.host, port: target.port, ...HOP_CONNECT_OPTIONS });
  socket.setNoDelay(true); // request/response traffic: Nagle + delayed ACK would add 40 ms stalls
  const connected = await onceBounded(socket, 'connect', { timeoutMs, keepAlive: true });
  if (connected.kind === 'value') return socket;
  socket.destroy();
  if (connected.kind === 'error') throw connected.error;
  throw new Error(`connecting to ${target.host}:${target.port} ${connected.kind === 'closed' ? 'closed before it connected' : `took over ${timeoutMs} ms`}`);
}

/** Upstream connections are given this long to connect. */
export const DIAL_TIMEOUT_MS = 10_000;

/** The real destination of an intercepted connection; the program's socket is closed if it cannot be reached, not left hanging. */
export async function dialFor(conn: { target: DialTarget; client: { destroy(): void } }): Promise<net.Socket> {
  try {
    return await dial(conn.target, DIAL_TIMEOUT_MS);
  } catch (err) {
    conn.client.destroy();
    throw err;
  }
}
