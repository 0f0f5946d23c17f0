import WebSocket from 'ws';
import { DebugkitError } from './errors.js';
import { boundPromise, waitBounded } from './wait.js';

/**
 * A client of the Chrome DevTools Protocol (the V8 inspector Node serves with `--inspect`): JSON
 * messages over a WebSocket, requests answered by id, events by method name. A worker thread's
 * inspector is reached through its parent's session (node's NodeWorker domain): the same
 * requests and events, carried inside the parent's messages.
 */

export const DEFAULT_CDP_TIMEOUT_MS = 30_000;
/** The largest message taken from the inspector (a paused stack, a property list, a long string value). */
const MAX_MESSAGE_BYTES = 128 * 1024 * 1024;

/** A CDP error answer: the method and the inspector's message. */
export class CdpError extends DebugkitError {
  override name = 'CdpError';
  constructor(
    readonly method: string,
    message: string,
  ) {
    super('ENGINE_FAILED', `${method}: ${message}`);
  }
}

type Handler = (params: Record<string, unknown>) => void;

/** One inspector session: the main thread's (a WebSocket) or a worker thread's (inside its parent's session). */
export abstract class CdpSession {
  private nextId = 1;
  private readonly pending = new Map<number, { method: string; resolve: (result: unknown) => void; reject: (err: Error) => void }>();
  private readonly handlers = new Map<string, Set<Handler>>();
  private closeReason: Error | undefined;
  private onClosed!: (reason: Error) => void;
  /** Settles when the session has ended (the inspector went, the worker ended, or close() was called). */
  readonly closed: Promise<Error> = new Promise((resolve) => (this.onClosed = resolve));

  /** Carries one request's text to the inspector. */
  protected abstract transmit(text: string): void;

  get isClosed(): boolean {
    return this.closeReason !== undefined;
  }

  /** Sends a request; its result, or a CdpError, or a timeout. */
  async send<T = Record<string, unknown>>(method: string, params: Record<string, unknown> = {}, timeoutMs = DEFAULT_CDP_TIMEOUT_MS): Promise<T> {
    if (this.closeReason) throw this.closeReason;
    const id = this.nextId++;
    const answer = new Promise<unknown>((resolve, reject) => this.pending.set(id, { method, resolve, reject }));
    this.transmit(JSON.stringify({ id, method, params }));
    const outcome = await boundPromise(answer, { timeoutMs });
    if (outcome.kind === 'value') return outcome.value as T;
    this.pending.delete(id);
    throw new DebugkitError('TIMEOUT', `the Node.js inspector did not answer ${method} within ${timeoutMs / 1000} s`);
  }

  /** Calls `handler` on each event `method`; returns its removal. */
  on(method: string, handler: Handler): () => void {
    let set = this.handlers.get(method);
    if (!set) this.handlers.set(method, (set = new Set()));
    set.add(handler);
    return () => set.delete(handler);
  }

  abstract close(): void;

  /** A message from the inspector: an answer, or an event. */
  protected receive(text: string): void {
    let msg: { id?: number; method?: string; params?: Record<string, unknown>; result?: unknown; error?: { message?: string } };
    try {
      msg = JSON.parse(text) as typeof msg;
    } catch {
      return;
    }
    if (typeof msg.id === 'number') {
      const waiting = this.pending.get(msg.id);
      if (!waiting) return;
      this.pending.delete(msg.id);
      if (msg.error) waiting.reject(new CdpError(waiting.method, msg.error.message ?? 'failed'));
      else waiting.resolve(msg.result ?? {});
      return;
    }
    if (typeof msg.method !== 'string') return;
    for (const handler of [...(this.handlers.get(msg.method) ?? [])]) handler(msg.params ?? {});
  }

  /** Ends the session: every request waiting is answered with `reason`. */
  protected fail(reason: Error): void {
    if (this.closeReason) return;
    this.closeReason = reason;
    for (const waiting of this.pending.values()) waiting.reject(reason);
    this.pending.clear();
    this.onClosed(reason);
  }
}

/** The main thread's session, over the inspector's WebSocket. */
export class CdpConnection extends CdpSession {
  private constructor(
    private readonly ws: WebSocket,
    /** The connection's local port (what tells the process at its other end: core/sockets connectionPeers). */
    readonly localPort: number,
  ) {
    super();
    ws.on('close', () => this.fail(new DebugkitError('ENGINE_FAILED', 'the inspector closed its connection')));
    ws.on('error', (err) => this.fail(new DebugkitError('ENGINE_FAILED', `the inspector's connection failed: ${err.message}`)));
    ws.on('message', (data: Buffer) => this.receive(data.toString('utf8')));
  }

  /** Connects to an inspector's WebSocket URL (`ws://127.0.0.1:PORT/UUID`), within `timeoutMs`. */
  static async connect(url: string, timeoutMs: number): Promise<CdpConnection> {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: MAX_MESSAGE_BYTES, handshakeTimeout: timeoutMs });
    let localPort = 0;
    ws.once('upgrade', (response) => (localPort = response.socket.localPort ?? 0));
    const opened = await waitBounded<Error | null>(
      (settle) => {
        ws.once('open', () => settle(null));
        ws.once('error', (err) => settle(err));
      },
      { timeoutMs },
    );
    if (opened.kind !== 'value' || opened.value) {
      ws.terminate();
      const why = opened.kind === 'value' ? opened.value!.message : `no answer within ${timeoutMs / 1000} s`;
      throw new DebugkitError('ENGINE_FAILED', `could not connect to the Node.js inspector at ${url}: ${why}`);
    }
    return new CdpConnection(ws, localPort);
  }

  protected transmit(text: string): void {
    this.ws.send(text);
  }

  close(): void {
    this.fail(new DebugkitError('SESSION_CLOSED', 'the inspector connection was closed'));
    this.ws.terminate();
  }
}

/**
 * A worker thread's session, inside its parent's (node's NodeWorker domain: the parent announces
 * it with `NodeWorker.attachedToWorker` once `NodeWorker.enable` was sent; requests go in
 * `NodeWorker.sendMessageToWorker`, answers and events come back in `receivedMessageFromWorker`).
 * It ends when the worker does, or its parent's session.
 */
export class CdpWorkerSession extends CdpSession {
  private readonly unsubscribe: Array<() => void>;

  constructor(
    private readonly parent: CdpSession,
    readonly sessionId: string,
  ) {
    super();
    this.unsubscribe = [
      parent.on('NodeWorker.receivedMessageFromWorker', (p) => {
        if (p.sessionId === sessionId && typeof p.message === 'string') this.receive(p.message);
      }),
      parent.on('NodeWorker.detachedFromWorker', (p) => {
        if (p.sessionId === sessionId) this.fail(new DebugkitError('SESSION_CLOSED', 'the worker thread ended'));
      }),
    ];
    void parent.closed.then((reason) => this.fail(reason));
    void this.closed.then(() => this.unsubscribe.forEach((off) => off()));
  }

  protected transmit(text: string): void {
    this.parent.send('NodeWorker.sendMessageToWorker', { sessionId: this.sessionId, message: text }).catch(() => undefined);
  }

  close(): void {
    this.fail(new DebugkitError('SESSION_CLOSED', 'the worker thread session was closed'));
    this.parent.send('NodeWorker.detach', { sessionId: this.sessionId }).catch(() => undefined);
  }
}
