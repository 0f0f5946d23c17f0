import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { openFilesLimit } from '../core/fd-budget.js';

// Kept importable from here: the connection bound is derived from it.
export { openFilesLimit };

/**
 * A bound on the connections `debugkit serve` holds open, so that no one (with a key or without)
 * can take every file descriptor by opening connections and sending nothing whole: with the
 * server at its descriptor limit, other clients' connections are refused and nothing can be
 * opened, spawned or read.
 *
 * At the bound, a new connection makes room by closing the connection that has waited longest
 * without a request in progress: first one that never had a request answered (its headers never
 * came whole), and only when there is none, one idle between keep-alive requests (so a flood of
 * half-open connections never takes a working client's kept-alive connection). A connection
 * answering a request (an SSE stream, a long tool call) is never closed for room; when every one
 * is, the new connection is closed at once. So a client that connects and sends a request at once
 * is answered however many half-open connections someone holds, and those are the ones that go.
 */

interface Tracked {
  /** Requests on it not yet answered. */
  requests: number;
  /** A request on it was answered (a client that speaks HTTP, between keep-alive requests when idle). */
  served: boolean;
}

/** The default bound: half the descriptor limit (the rest for sessions' processes, files and pipes), at least 64, at most 16,384. */
export function defaultMaxConnections(): number {
  const limit = openFilesLimit() ?? 4096;
  return Math.max(64, Math.min(16_384, Math.floor(limit / 2)));
}

/** The TCP socket under a request's socket (under TLS, the socket the TLS one wraps). */
const rawSocket = (s: Socket): Socket => (s as Socket & { _parent?: Socket })._parent ?? s;

export interface ConnectionLimit {
  /** Counts a request in progress on its connection until answered (call it first thing for each request). */
  admit(req: IncomingMessage, res: ServerResponse): void;
  /** Connections open now. */
  readonly open: number;
  /** Connections closed to make room, and connections refused, since the start. */
  readonly evicted: number;
  readonly refused: number;
}

/** Holds `server` to at most `max` open connections (see above); its request handler calls `admit` for each request. */
export function limitConnections(server: Server, max: number): ConnectionLimit {
  // In order of when each was last busy: the first idle one has waited longest.
  const open = new Map<Socket, Tracked>();
  const counts = { evicted: 0, refused: 0 };
  const touch = (socket: Socket, t: Tracked) => {
    open.delete(socket);
    open.set(socket, t);
  };
  server.on('connection', (socket: Socket) => {
    if (open.size >= max) {
      // First the one waiting longest that never had a request answered (its headers never came
      // whole); only when there is none, the keep-alive connection idle longest.
      let victim: Socket | undefined;
      let idle: Socket | undefined;
      for (const [s, t] of open) {
        if (t.requests > 0) continue;
        if (!t.served) {
          victim = s;
          break;
        }
        idle ??= s;
      }
      victim ??= idle;
      if (!victim) {
        counts.refused++;
        return void socket.destroy();
      }
      counts.evicted++;
      open.delete(victim);
      victim.destroy();
    }
    const t: Tracked = { requests: 0, served: false };
    open.set(socket, t);
    socket.once('close', () => {
      if (open.get(socket) === t) open.delete(socket);
    });
  });
  return {
    admit(req, res) {
      const socket = rawSocket(req.socket);
      const t = open.get(socket);
      if (!t) return;
      t.requests++;
      touch(socket, t);
      res.once('close', () => {
        t.requests--;
        t.served = true;
        if (open.get(socket) === t) touch(socket, t);
      });
    },
    get open() {
      return open.size;
    },
    get evicted() {
      return counts.evicted;
    },
    get refused() {
      return counts.refused;
    },
  };
}
