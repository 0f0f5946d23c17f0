import { EventEmitter } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { CancelledError, DebugkitError, TimeoutError, describeError } from '../errors.js';
import { PendingTable } from '../pending.js';
import { waitBounded } from '../wait.js';
import { DapDecoder, DapProtocolError, encodeMessage } from './codec.js';
import { DapRequestError } from './request-error.js';
import { answerReverseRequest, type ReverseHandler } from './reverse.js';
import { checkTimeout, onAbort } from './bounds.js';
import type { DapArgs, DapConnectionOptions, DapBody, DapCommand, DapEventMap, DapEventName, DapReverseRequestMap, Untyped, WaitForEventOptions, WaitOptions } from './types.js';

export const DEFAULT_DAP_TIMEOUT_MS = 30_000;

type ArgsAndOptions<C extends DapCommand> = undefined extends DapArgs<C> ? [args?: DapArgs<C>, options?: WaitOptions] : [args: DapArgs<C>, options?: WaitOptions];
type EventHandler = (event: DebugProtocol.Event) => void;
type ReverseArgs<C extends keyof DapReverseRequestMap> = DapReverseRequestMap[C]['args'];
type ReverseBody<C extends keyof DapReverseRequestMap> = DapReverseRequestMap[C]['body'];

/**
 * One client-side DAP channel over a byte stream pair (an adapter's stdout/stdin, or a socket).
 * Owns the client's `seq` counter, the requests waiting for responses (one PendingTable), event
 * subscriptions and reverse-request handlers. Adapter-neutral: it knows no launch sequence.
 * It never ends or destroys the streams; whoever started the adapter does that.
 */
export class DapConnection extends EventEmitter<{ event: [DebugProtocol.Event]; close: [Error] }> {
  readonly name: string;
  /** Settles (never rejects) with the reason once the connection is closed. */
  readonly closed: Promise<Error>;
  private readonly timeoutMs: number;
  private readonly decoder: DapDecoder;
  private readonly pending = new PendingTable<number, DebugProtocol.Response>();
  private readonly eventHandlers = new Map<string, Set<EventHandler>>();
  private readonly reverseHandlers = new Map<string, ReverseHandler>();
  /** Event waits to fail when the connection closes; a Set so ended waits leave nothing behind. */
  private readonly closeHooks = new Set<(reason: Error) => void>();
  private readonly onListenerError: (err: unknown, event: DebugProtocol.Event) => void;
  private readonly stopReading: () => void;
  private resolveClosed: (reason: Error) => void = () => {};
  private closeReason: Error | undefined;
  private nextSeq = 1;

  constructor(
    from: Readable,
    private readonly to: Writable,
    options: DapConnectionOptions = {},
  ) {
    super();
    this.name = options.name ?? 'debug adapter';
    this.timeoutMs = checkTimeout(options.timeoutMs ?? DEFAULT_DAP_TIMEOUT_MS, 'timeoutMs');
    this.decoder = new DapDecoder({ maxBodyBytes: options.maxBodyBytes });
    this.onListenerError = options.onListenerError ?? ((err) => warnListenerError(this.name, err));
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    this.stopReading = this.listen(from);
  }

  get isClosed(): boolean {
    return this.closeReason !== undefined;
  }

  /** Why the connection closed, once it has. */
  get closedBecause(): Error | undefined {
    return this.closeReason;
  }

  /**
   * Sends a request and resolves with its response body. Rejects with DapRequestError when the
   * adapter answers `success: false`, TimeoutError after `timeoutMs`, CancelledError on abort,
   * and the close reason if the connection ends first. A late response is dropped.
   */
  request<C extends DapCommand>(command: C, ...rest: ArgsAndOptions<C>): Promise<DapBody<C>>;
  request<S extends string>(command: Untyped<S, DapCommand>, args?: unknown, options?: WaitOptions): Promise<unknown>;
  request(command: string, args?: unknown, options: WaitOptions = {}): Promise<unknown> {
    const label = `${this.name} request "${command}"`;
    const started = this.checkStart(label, options);
    if (started) return started;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const seq = this.nextSeq++;
    const reply = this.pending.add(seq, timeoutMs, `${label} (seq ${seq})`);
    const stopAbort = onAbort(options.signal, () => this.pending.reject(seq, new CancelledError(`${label} was cancelled`)));
    // JSON.stringify drops `arguments: undefined`, which is how DAP spells "no arguments".
    const message: DebugProtocol.Request = { seq, type: 'request', command, arguments: args };
    this.write(message);
    return reply.then(
      (response) => {
        stopAbort();
        return response.body as unknown;
      },
      (err: unknown) => {
        stopAbort();
        throw err;
      },
    );
  }

  /** Calls `handler` for every event named `name`; returns the unsubscribe function. */
  onEvent<E extends DapEventName>(name: E, handler: (event: DapEventMap[E]) => void): () => void;
  onEvent<S extends string>(name: Untyped<S, DapEventName>, handler: (event: DebugProtocol.Event) => void): () => void;
  onEvent(name: string, handler: EventHandler): () => void {
    let handlers = this.eventHandlers.get(name);
    if (!handlers) this.eventHandlers.set(name, (handlers = new Set()));
    // Wrapped, so subscribing one function twice gives two independent subscriptions.
    const subscription: EventHandler = (event) => handler(event);
    handlers.add(subscription);
    return () => {
      handlers.delete(subscription);
      if (handlers.size === 0 && this.eventHandlers.get(name) === handlers) this.eventHandlers.delete(name);
    };
  }

  /**
   * Resolves with the next event named `name` (that passes `predicate`). Start waiting before
   * sending the request that triggers the event: events are delivered as they arrive, not kept.
   */
  waitForEvent<E extends DapEventName>(name: E, options?: WaitForEventOptions<DapEventMap[E]>): Promise<DapEventMap[E]>;
  waitForEvent<S extends string>(name: Untyped<S, DapEventName>, options?: WaitForEventOptions<DebugProtocol.Event>): Promise<DebugProtocol.Event>;
  async waitForEvent(name: string, options: WaitForEventOptions<DebugProtocol.Event> = {}): Promise<DebugProtocol.Event> {
    const label = `waiting for the "${name}" event from ${this.name}`;
    const started = this.checkStart(label, options);
    if (started) return started;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    type Settled = { event: DebugProtocol.Event } | { error: unknown };
    const outcome = await waitBounded<Settled>(
      (settle) => {
        const onClose = (reason: Error) => settle({ error: reason });
        this.closeHooks.add(onClose);
        const unsubscribe = this.onEvent(name as Untyped<string, DapEventName>, (event) => {
          const { predicate } = options;
          try {
            if (!predicate || predicate(event)) settle({ event });
          } catch (err) {
            settle({ error: err });
          }
        });
        return () => {
          this.closeHooks.delete(onClose);
          unsubscribe();
        };
      },
      { timeoutMs, signal: options.signal },
    );
    if (outcome.kind === 'timeout') throw new TimeoutError(`no "${name}" event from ${this.name} within ${timeoutMs} ms`);
    if (outcome.kind === 'aborted') throw new CancelledError(`${label} was cancelled`);
    if ('error' in outcome.value) throw outcome.value.error;
    return outcome.value.event;
  }

  /**
   * Answers the adapter's `command` requests (e.g. runInTerminal) with what `handler` returns;
   * a throw or a timeout becomes `success: false`. Requests without a handler are refused at once.
   */
  onReverseRequest<C extends keyof DapReverseRequestMap>(command: C, handler: (args: ReverseArgs<C>, request: DebugProtocol.Request) => ReverseBody<C> | Promise<ReverseBody<C>>): () => void;
  onReverseRequest<S extends string>(command: Untyped<S, keyof DapReverseRequestMap>, handler: (args: unknown, request: DebugProtocol.Request) => unknown): () => void;
  onReverseRequest(command: string, handler: ReverseHandler): () => void {
    if (this.reverseHandlers.has(command)) {
      throw new DebugkitError('INTERNAL', `a handler for the "${command}" reverse request is already registered`);
    }
    this.reverseHandlers.set(command, handler);
    return () => {
      if (this.reverseHandlers.get(command) === handler) this.reverseHandlers.delete(command);
    };
  }

  /** Ends the connection: everything still waiting fails with `reason`; later calls fail with it at once. */
  close(reason: Error): void {
    if (this.closeReason) return;
    this.closeReason = reason;
    this.stopReading();
    this.pending.rejectAll(reason, true);
    const hooks = [...this.closeHooks];
    this.closeHooks.clear();
    for (const hook of hooks) hook(reason);
    this.eventHandlers.clear();
    this.reverseHandlers.clear();
    this.resolveClosed(reason);
    this.emit('close', reason);
  }

  /** Returns a rejected promise when an operation must not start; undefined when it may. */
  private checkStart(label: string, options: WaitOptions): Promise<never> | undefined {
    if (this.closeReason) return Promise.reject(this.closeReason);
    if (options.signal?.aborted) return Promise.reject(new CancelledError(`${label} was cancelled`));
    try {
      checkTimeout(options.timeoutMs ?? this.timeoutMs, 'timeoutMs');
    } catch (err) {
      return Promise.reject(err);
    }
    return undefined;
  }

  /** Subscribes to the adapter's output; returns how to stop (error listeners stay: see below). */
  private listen(from: Readable): () => void {
    const onData = (chunk: Buffer | string) => this.onData(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    const onEnd = () => {
      const midway = this.decoder.hasPartialMessage ? ' in the middle of a message' : '';
      this.close(new DebugkitError('ENGINE_FAILED', `${this.name} closed its output${midway}`));
    };
    from.on('data', onData);
    from.on('end', onEnd);
    from.on('close', onEnd);
    // Error listeners are never removed: a stream 'error' nobody listens to crashes the process.
    from.on('error', (err) => this.close(new DebugkitError('ENGINE_FAILED', `cannot read from ${this.name}: ${err.message}`)));
    this.to.on('error', (err) => this.close(new DebugkitError('ENGINE_FAILED', `cannot write to ${this.name}: ${err.message}`)));
    if (from.readableEnded || from.destroyed) queueMicrotask(onEnd);
    return () => {
      from.off('data', onData);
      from.off('end', onEnd);
      from.off('close', onEnd);
    };
  }

  private onData(chunk: Buffer): void {
    if (this.closeReason) return;
    let messages: DebugProtocol.ProtocolMessage[];
    try {
      messages = this.decoder.push(chunk);
    } catch (err) {
      this.close(new DapProtocolError(`${this.name} broke the DAP framing: ${describeError(err)}`, { cause: err }));
      return;
    }
    for (const message of messages) {
      if (this.closeReason) return;
      this.dispatch(message);
    }
  }

  private dispatch(message: DebugProtocol.ProtocolMessage): void {
    if (message.type === 'response') {
      const response = message as DebugProtocol.Response;
      // Not found: the request timed out or was cancelled; its late answer has no one to go to.
      if (response.success) this.pending.resolve(response.request_seq, response);
      else this.pending.reject(response.request_seq, new DapRequestError(this.name, response));
    } else if (message.type === 'event') {
      this.deliverEvent(message as DebugProtocol.Event);
    } else if (message.type === 'request') {
      const request = message as DebugProtocol.Request;
      const handler = this.reverseHandlers.get(request.command);
      void answerReverseRequest(request, handler, this.timeoutMs).then((reply) => {
        if (!this.closeReason) this.write({ seq: this.nextSeq++, type: 'response', ...reply } satisfies DebugProtocol.Response);
      });
    }
    // Other message types may come with future protocol versions; they carry nothing we use.
  }

  private deliverEvent(event: DebugProtocol.Event): void {
    // Each listener is isolated: a throwing one must neither starve the others nor break decoding.
    // rawListeners: calling a once() wrapper is what removes it.
    for (const listener of this.rawListeners('event')) {
      this.callListener(() => (listener as EventHandler)(event), event);
    }
    for (const handler of [...(this.eventHandlers.get(event.event) ?? [])]) {
      this.callListener(() => handler(event), event);
    }
  }

  private callListener(call: () => void, event: DebugProtocol.Event): void {
    try {
      call();
    } catch (err) {
      this.onListenerError(err, event);
    }
  }

  private write(message: DebugProtocol.ProtocolMessage): void {
    const fail = (why: string) => this.close(new DebugkitError('ENGINE_FAILED', `cannot write to ${this.name}: ${why}`));
    // A destroyed stream may report nothing at all; without this a request would wait for its timeout.
    if (this.to.destroyed || this.to.writableEnded) return fail('its input is closed');
    this.to.write(encodeMessage(message), (err) => err && fail(err.message));
  }
}

function warnListenerError(name: string, err: unknown): void {
  process.emitWarning(`a listener for ${name} DAP events threw: ${describeError(err)}`, 'DapListenerWarning');
}
