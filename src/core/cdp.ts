import WebSocket from 'ws';
import { DebugkitError } from './errors.js';
import { boundPromise, waitBounded } from './wait.js';

/**
 * A client of the Chrome DevTools Protocol (the V8 inspector Node serves with `--inspect`): JSON
 * messages over a WebSocket, requests answered by id, events by method name.
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

export class CdpConnection {
  private nextId = 1;
  private readonly pending = new Map<number, { method: string; resolve: (result: unknown) => void; reject: (err: Error) => void }>();
  private readonly handlers = new Map<string, Set<Handler>>();
  private closeReason: Error | undefined;
  /** Settles when the socket has closed (the inspector went, or close() was called). */
  readonly closed: Promise<Error>;

  private constructor(private readonly ws: WebSocket) {
    this.closed = new Promise((resolve) => {
      ws.on('close', () => {
        this.fail(new DebugkitError('ENGINE_FAILED', 'the inspector closed its connection'));
        resolve(this.closeReason!);
      });
    });
    ws.on('error', (err) => this.fail(new DebugkitError('ENGINE_FAILED', `the inspector's connection failed: ${err.message}`)));
    ws.on('message', (data: Buffer) => this.receive(data));
  }

  /** Connects to an inspector's WebSocket URL (`ws://127.0.0.1:PORT/UUID`), within `timeoutMs`. */
  static async connect(url: string, timeoutMs: number): Promise<CdpConnection> {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: MAX_MESSAGE_BYTES, handshakeTimeout: timeoutMs });
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
    return new CdpConnection(ws);
  }

  get isClosed(): boolean {
    return this.closeReason !== undefined;
  }

  /** Sends a request; its result, or a CdpError, or a timeout. */
  async send<T = Record<string, unknown>>(method: string, params: Record<string, unknown> = {}, timeoutMs = DEFAULT_CDP_TIMEOUT_MS): Promise<T> {
    if (this.closeReason) throw this.closeReason;
    const id = this.nextId++;
    const answer = new Promise<unknown>((resolve, reject) => this.pending.set(id, { method, resolve, reject }));
    this.ws.send(JSON.stringify({ id, method, params }));
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

  close(): void {
    this.fail(new DebugkitError('SESSION_CLOSED', 'the inspector connection was closed'));
    this.ws.terminate();
  }

  private receive(data: Buffer): void {
    let msg: { id?: number; method?: string; params?: Record<string, unknown>; result?: unknown; error?: { message?: string } };
    try {
      msg = JSON.parse(data.toString('utf8')) as typeof msg;
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

  private fail(reason: Error): void {
    if (this.closeReason) return;
    this.closeReason = reason;
    for (const waiting of this.pending.values()) waiting.reject(reason);
    this.pending.clear();
  }
}
