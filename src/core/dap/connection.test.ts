import { getEventListeners } from 'node:events';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { CancelledError, DebugkitError, TimeoutError } from '../errors.js';
import { sleep } from '../wait.js';
import { DapDecoder, DapProtocolError, encodeMessage } from './codec.js';
import { DapConnection } from './connection.js';
import { DapRequestError } from './request-error.js';
import type { DapConnectionOptions } from './types.js';

type Message = DebugProtocol.ProtocolMessage & Record<string, unknown>;

/**
 * An in-process stand-in for a debug adapter: it decodes what the client writes with the real
 * decoder and writes framed messages back, so tests script both sides of the protocol.
 */
class FakeAdapter {
  readonly toClient = new PassThrough();
  readonly fromClient = new PassThrough();
  private readonly decoder = new DapDecoder();
  private readonly inbox: Message[] = [];
  private readonly waiting: Array<(m: Message) => void> = [];
  private seq = 1000;

  constructor() {
    this.fromClient.on('data', (chunk: Buffer) => {
      for (const m of this.decoder.push(chunk) as Message[]) {
        const waiter = this.waiting.shift();
        if (waiter) waiter(m);
        else this.inbox.push(m);
      }
    });
  }

  /** The next message the client sent. */
  next(): Promise<Message> {
    const queued = this.inbox.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  get unread(): number {
    return this.inbox.length;
  }

  send(message: Record<string, unknown>): void {
    this.toClient.write(encodeMessage({ seq: this.seq++, ...message } as DebugProtocol.ProtocolMessage));
  }

  respond(request: Message, body?: unknown): void {
    this.send({ type: 'response', request_seq: request.seq, command: request['command'], success: true, body });
  }

  fail(request: Message, message?: string, body?: unknown): void {
    this.send({ type: 'response', request_seq: request.seq, command: request['command'], success: false, message, body });
  }

  event(event: string, body?: unknown): void {
    this.send({ type: 'event', event, body });
  }
}

const open: DapConnection[] = [];

function setup(options: DapConnectionOptions = {}): { adapter: FakeAdapter; conn: DapConnection } {
  const adapter = new FakeAdapter();
  const conn = new DapConnection(adapter.toClient, adapter.fromClient, { name: 'fake', timeoutMs: 2000, ...options });
  open.push(conn);
  return { adapter, conn };
}

afterEach(() => {
  for (const conn of open.splice(0)) conn.close(new Error('test over'));
});

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

/** Private state, read only to prove that nothing is left behind. */
interface Internals {
  eventHandlers: Map<string, unknown>;
  closeHooks: Set<unknown>;
  pending: { size: number };
}
function internals(conn: DapConnection): Internals {
  return conn as unknown as Internals;
}

describe('DapConnection requests', () => {
  it('sends a framed request and resolves with the response body', async () => {
    const { adapter, conn } = setup();
    const reply = conn.request('initialize', { adapterID: 'fake', clientID: 'debugkit', linesStartAt1: true });
    const sent = await adapter.next();
    expect(sent).toEqual({
      seq: 1,
      type: 'request',
      command: 'initialize',
      arguments: { adapterID: 'fake', clientID: 'debugkit', linesStartAt1: true },
    });
    adapter.respond(sent, { supportsConfigurationDoneRequest: true });
    const caps = await reply;
    expect(caps?.supportsConfigurationDoneRequest).toBe(true);
  });

  it('numbers requests 1, 2, 3... and matches responses that arrive out of order', async () => {
    const { adapter, conn } = setup();
    const threads = conn.request('threads');
    const scopes = conn.request('scopes', { frameId: 7 });
    const custom = conn.request('debugpySystemInfo', { x: 1 });
    const [a, b, c] = [await adapter.next(), await adapter.next(), await adapter.next()];
    expect([a.seq, b.seq, c.seq]).toEqual([1, 2, 3]);
    adapter.respond(c, { custom: true });
    adapter.respond(a, { threads: [{ id: 1, name: 'MainThread' }] });
    adapter.respond(b, { scopes: [{ name: 'Locals', variablesReference: 5, expensive: false }] });
    expect(await custom).toEqual({ custom: true });
    expect((await threads).threads[0]?.name).toBe('MainThread');
    expect((await scopes).scopes[0]?.variablesReference).toBe(5);
  });

  it('omits "arguments" when a request has none, and resolves bodyless responses with undefined', async () => {
    const { adapter, conn } = setup();
    const done = conn.request('configurationDone');
    const sent = await adapter.next();
    expect(sent).toEqual({ seq: 1, type: 'request', command: 'configurationDone' });
    adapter.respond(sent);
    await expect(done).resolves.toBeUndefined();
  });

  it('rejects a failed response with DapRequestError carrying the adapter message', async () => {
    const { adapter, conn } = setup();
    const reply = conn.request('next', { threadId: 1 });
    adapter.fail(await adapter.next(), 'notStopped');
    const err = await rejection(reply);
    expect(err).toBeInstanceOf(DapRequestError);
    expect(err).toBeInstanceOf(DebugkitError);
    expect(err).toMatchObject({ code: 'ENGINE_FAILED', command: 'next', reason: 'notStopped' });
    expect(err.message).toBe('fake failed the "next" request: notStopped');
  });

  it('formats body.error with its variables and keeps the short message when it adds to it', async () => {
    const { adapter, conn } = setup();
    const reply = conn.request('launch', { program: '/nope.py' });
    adapter.fail(await adapter.next(), 'launch failed', {
      error: { id: 2001, format: 'cannot find {path} ({_reason}); {missing} {constructor}', variables: { path: '/nope.py', _reason: 'ENOENT' } },
    });
    const err = (await rejection(reply)) as DapRequestError;
    expect(err.message).toBe('fake failed the "launch" request: cannot find /nope.py (ENOENT); {missing} {constructor} (launch failed)');
    expect(err.errorId).toBe(2001);
    expect(err.command).toBe('launch');
  });

  it('says so when a failed response gives no reason', async () => {
    const { adapter, conn } = setup();
    const reply = conn.request('pause', { threadId: 1 });
    adapter.fail(await adapter.next());
    expect((await rejection(reply)).message).toBe('fake failed the "pause" request: no reason given');
  });

  it('times out a request with TimeoutError naming it, drops the late response, and keeps working', async () => {
    const { adapter, conn } = setup();
    const slow = conn.request('evaluate', { expression: 'x' }, { timeoutMs: 30 });
    const sent = await adapter.next();
    const err = await rejection(slow);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.message).toBe('fake request "evaluate" (seq 1) got no reply within 30 ms');
    expect(internals(conn).pending.size).toBe(0);
    adapter.respond(sent, { result: 'late', variablesReference: 0 });
    const next = conn.request('threads');
    adapter.respond(await adapter.next(), { threads: [] });
    expect(await next).toEqual({ threads: [] });
    expect(conn.isClosed).toBe(false);
  });

  it('uses the constructor timeout by default', async () => {
    const { adapter, conn } = setup({ timeoutMs: 25 });
    const reply = conn.request('threads');
    await adapter.next();
    expect((await rejection(reply)).message).toMatch(/got no reply within 25 ms/);
  });

  it.each([0, -1, Number.POSITIVE_INFINITY, Number.NaN, 2 ** 31])('refuses an unbounded timeout (%s)', async (timeoutMs) => {
    const { adapter, conn } = setup();
    const err = await rejection(conn.request('threads', undefined, { timeoutMs }));
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(adapter.unread).toBe(0);
    expect(() => new DapConnection(new PassThrough(), new PassThrough(), { timeoutMs })).toThrow(/must be a number of milliseconds/);
  });

  it('cancels a request on abort and forgets it (no listener left on the signal)', async () => {
    const { adapter, conn } = setup();
    const controller = new AbortController();
    const reply = conn.request('continue', { threadId: 1 }, { signal: controller.signal });
    const sent = await adapter.next();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort();
    const err = await rejection(reply);
    expect(err).toBeInstanceOf(CancelledError);
    expect(err.message).toBe('fake request "continue" was cancelled');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(internals(conn).pending.size).toBe(0);
    adapter.respond(sent, { allThreadsContinued: true }); // late: silently dropped
    const ok = new AbortController();
    const next = conn.request('threads', undefined, { signal: ok.signal });
    adapter.respond(await adapter.next(), { threads: [] });
    await next;
    expect(getEventListeners(ok.signal, 'abort')).toHaveLength(0);
  });

  it('does not send a request whose signal is already aborted', async () => {
    const { adapter, conn } = setup();
    const err = await rejection(conn.request('threads', undefined, { signal: AbortSignal.abort() }));
    expect(err).toBeInstanceOf(CancelledError);
    await new Promise((r) => setImmediate(r));
    expect(adapter.unread).toBe(0);
  });

  it('is typed by command', () => {
    const { conn } = setup();
    // Compile-time checks only: the promises are rejected by afterEach's close.
    const typed = [
      // @ts-expect-error setBreakpoints needs a source
      conn.request('setBreakpoints', { lines: [1] }),
      // @ts-expect-error initialize needs arguments
      conn.request('initialize'),
      conn.request('setBreakpoints', { source: { path: '/a.py' }, breakpoints: [{ line: 3 }] }),
      conn.request('launch', { program: '/a.py', console: 'internalConsole', noDebug: false }),
      conn.request('anyOtherCommand', { whatever: true }),
      conn.request('disconnect'),
    ];
    for (const p of typed) p.catch(() => {});
  });
});

describe('DapConnection events', () => {
  it('delivers events to raw listeners and to typed per-name handlers until unsubscribed', async () => {
    const { adapter, conn } = setup();
    const raw: string[] = [];
    const outputs: string[] = [];
    conn.on('event', (e) => raw.push(e.event));
    const unsubscribe = conn.onEvent('output', (e) => outputs.push(`${e.body.category}:${e.body.output}`));
    const stopped = conn.waitForEvent('stopped');
    adapter.event('output', { category: 'stdout', output: 'hi\n' });
    adapter.event('stopped', { reason: 'breakpoint', threadId: 1 });
    await stopped;
    unsubscribe();
    const later = conn.waitForEvent('output');
    adapter.event('output', { category: 'stderr', output: 'later\n' });
    await later;
    expect(raw).toEqual(['output', 'stopped', 'output']);
    expect(outputs).toEqual(['stdout:hi\n']);
    expect(internals(conn).eventHandlers.size).toBe(0);
  });

  it('isolates a throwing listener: others still run and decoding continues', async () => {
    const errors: unknown[] = [];
    const { adapter, conn } = setup({ onListenerError: (err) => errors.push(err) });
    const seen: string[] = [];
    conn.on('event', () => {
      throw new Error('listener bug');
    });
    conn.onEvent('thread', () => {
      throw new Error('handler bug');
    });
    conn.onEvent('thread', (e) => seen.push(e.body.reason));
    const exited = conn.waitForEvent('thread', { predicate: (e) => e.body.reason === 'exited' });
    adapter.event('thread', { reason: 'started', threadId: 1 });
    adapter.event('thread', { reason: 'exited', threadId: 1 });
    await exited;
    expect(seen).toEqual(['started', 'exited']);
    expect(errors.map((e) => (e as Error).message)).toEqual(['listener bug', 'handler bug', 'listener bug', 'handler bug']);
  });

  it('waitForEvent resolves with the first matching event only', async () => {
    const { adapter, conn } = setup();
    const exited = conn.waitForEvent('thread', { predicate: (e) => e.body.reason === 'exited' });
    adapter.event('thread', { reason: 'started', threadId: 4 });
    adapter.event('thread', { reason: 'exited', threadId: 4 });
    expect((await exited).body).toEqual({ reason: 'exited', threadId: 4 });
    const custom = conn.waitForEvent('debugpyWaitingForServer');
    adapter.event('debugpyWaitingForServer', { host: '127.0.0.1', port: 5678 });
    expect((await custom).body).toEqual({ host: '127.0.0.1', port: 5678 });
  });

  it('waitForEvent times out with TimeoutError naming the event, leaving nothing behind', async () => {
    const { conn } = setup();
    const err = await rejection(conn.waitForEvent('initialized', { timeoutMs: 20 }));
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.message).toBe('no "initialized" event from fake within 20 ms');
    expect(internals(conn).eventHandlers.size).toBe(0);
    expect(internals(conn).closeHooks.size).toBe(0);
  });

  it('waitForEvent is cancelled by its signal and fails when the predicate throws', async () => {
    const { adapter, conn } = setup();
    const controller = new AbortController();
    const waiting = conn.waitForEvent('stopped', { signal: controller.signal });
    controller.abort();
    const err = await rejection(waiting);
    expect(err).toBeInstanceOf(CancelledError);
    expect(err.message).toBe('waiting for the "stopped" event from fake was cancelled');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    await expect(conn.waitForEvent('stopped', { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(CancelledError);
    const broken = conn.waitForEvent('stopped', {
      predicate: () => {
        throw new Error('predicate bug');
      },
    });
    adapter.event('stopped', { reason: 'pause' });
    await expect(broken).rejects.toThrow('predicate bug');
    expect(internals(conn).eventHandlers.size).toBe(0);
  });

  it('waitForEvent fails with the close reason when the adapter goes away', async () => {
    const { adapter, conn } = setup();
    const waiting = conn.waitForEvent('terminated');
    adapter.toClient.end();
    const err = await rejection(waiting);
    expect(err.message).toBe('fake closed its output');
    await expect(conn.waitForEvent('terminated')).rejects.toBe(err);
  });
});

describe('DapConnection reverse requests', () => {
  it('answers with the handler result, using the client seq counter', async () => {
    const { adapter, conn } = setup();
    const handler = vi.fn((args: DebugProtocol.RunInTerminalRequestArguments) => ({ processId: args.args.length }));
    conn.onReverseRequest('runInTerminal', handler);
    const first = conn.request('threads');
    await adapter.next();
    adapter.send({ type: 'request', command: 'runInTerminal', arguments: { cwd: '/', args: ['python3', 'x.py'] } });
    const response = await adapter.next();
    expect(response).toEqual({
      seq: 2,
      type: 'response',
      request_seq: 1000,
      command: 'runInTerminal',
      success: true,
      body: { processId: 2 },
    });
    expect(handler).toHaveBeenCalledOnce();
    first.catch(() => {});
  });

  it('awaits async handlers and reports a throwing one as success: false', async () => {
    const { adapter, conn } = setup();
    conn.onReverseRequest('startDebugging', async () => {
      await sleep(5); // a pause, not a wait: the handler takes a while
    });
    conn.onReverseRequest('custom', () => {
      throw new DebugkitError('INVALID_ARGUMENT', 'custom is refused here');
    });
    adapter.send({ type: 'request', command: 'startDebugging', arguments: { request: 'attach', configuration: {} } });
    adapter.send({ type: 'request', command: 'custom' });
    const answers = [await adapter.next(), await adapter.next()];
    const byCommand = Object.fromEntries(answers.map((a) => [a['command'], a]));
    expect(byCommand['startDebugging']).toMatchObject({ success: true });
    expect(byCommand['startDebugging']).not.toHaveProperty('body');
    expect(byCommand['custom']).toMatchObject({ success: false, message: 'custom is refused here' });
  });

  it.each(['runInTerminal', 'startDebugging', 'somethingNew'])('refuses %s when no handler is registered', async (command) => {
    const { adapter } = setup();
    adapter.send({ type: 'request', command, arguments: {} });
    expect(await adapter.next()).toMatchObject({
      type: 'response',
      request_seq: 1000,
      command,
      success: false,
      message: `debugkit does not support the "${command}" request`,
    });
  });

  it('answers success: false when a handler does not finish in time', async () => {
    const { adapter, conn } = setup({ timeoutMs: 20 });
    conn.onReverseRequest('runInTerminal', () => new Promise(() => {}));
    adapter.send({ type: 'request', command: 'runInTerminal', arguments: { cwd: '/', args: ['x'] } });
    expect(await adapter.next()).toMatchObject({
      success: false,
      message: `debugkit's "runInTerminal" handler did not finish within 20 ms`,
    });
  });

  it('allows one handler per command, and unregistering frees the slot', async () => {
    const { adapter, conn } = setup();
    const off = conn.onReverseRequest('runInTerminal', () => ({ processId: 1 }));
    expect(() => conn.onReverseRequest('runInTerminal', () => ({}))).toThrow(/already registered/);
    off();
    adapter.send({ type: 'request', command: 'runInTerminal', arguments: { cwd: '/', args: ['x'] } });
    expect(await adapter.next()).toMatchObject({ success: false });
    conn.onReverseRequest('runInTerminal', () => ({ shellProcessId: 9 }));
    adapter.send({ type: 'request', command: 'runInTerminal', arguments: { cwd: '/', args: ['x'] } });
    expect(await adapter.next()).toMatchObject({ success: true, body: { shellProcessId: 9 } });
  });
});

describe('DapConnection close', () => {
  it('close() rejects everything pending with the reason, and later calls fail at once', async () => {
    const { adapter, conn } = setup();
    const closeEvents: Error[] = [];
    conn.on('close', (reason) => closeEvents.push(reason));
    const a = conn.request('threads');
    const b = conn.request('stackTrace', { threadId: 1 });
    await adapter.next();
    const reason = new DebugkitError('SESSION_CLOSED', 'session closed by the agent');
    conn.close(reason);
    conn.close(new Error('second close is ignored'));
    await expect(a).rejects.toBe(reason);
    await expect(b).rejects.toBe(reason);
    await expect(conn.request('threads')).rejects.toBe(reason);
    expect(conn.isClosed).toBe(true);
    expect(conn.closedBecause).toBe(reason);
    expect(await conn.closed).toBe(reason);
    expect(closeEvents).toEqual([reason]);
  });

  it('stops listening after close: later adapter messages are ignored', async () => {
    const { adapter, conn } = setup();
    const seen: string[] = [];
    conn.on('event', (e) => seen.push(e.event));
    conn.close(new Error('bye'));
    adapter.event('output', { output: 'ignored' });
    adapter.send({ type: 'request', command: 'runInTerminal', arguments: {} });
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual([]);
    expect(adapter.unread).toBe(0);
  });

  it('closes when the adapter ends its output, saying so', async () => {
    const { adapter, conn } = setup();
    const pending = conn.request('threads');
    await adapter.next();
    adapter.toClient.end();
    const err = await rejection(pending);
    expect(err).toBeInstanceOf(DebugkitError);
    expect(err).toMatchObject({ code: 'ENGINE_FAILED', message: 'fake closed its output' });
    expect(await conn.closed).toBe(err);
  });

  it('says when the output ended in the middle of a message', async () => {
    const { adapter, conn } = setup();
    adapter.toClient.end(encodeMessage({ seq: 1, type: 'event', event: 'output' } as DebugProtocol.Event).subarray(0, 30));
    expect((await conn.closed).message).toBe('fake closed its output in the middle of a message');
  });

  it('closes on a read error or a write error', async () => {
    const first = setup();
    first.adapter.toClient.destroy(new Error('EIO'));
    expect((await first.conn.closed).message).toBe('cannot read from fake: EIO');
    const second = setup();
    const pending = second.conn.request('threads');
    second.adapter.fromClient.destroy(new Error('EPIPE'));
    expect((await rejection(pending)).message).toBe('cannot write to fake: EPIPE');
  });

  it('fails a request at once when the adapter input is already closed', async () => {
    const { adapter, conn } = setup();
    adapter.fromClient.destroy();
    await new Promise((r) => setImmediate(r));
    const err = await rejection(conn.request('threads'));
    expect(err.message).toBe('cannot write to fake: its input is closed');
  });

  it('closes on a stream that had ended before the connection was made', async () => {
    const from = new PassThrough();
    from.end();
    from.resume();
    await new Promise((r) => from.once('end', r));
    const conn = new DapConnection(from, new PassThrough(), { name: 'late' });
    expect((await conn.closed).message).toBe('late closed its output');
  });
});

describe('DapConnection framing', () => {
  it('receives a ~10 MB response written in random-size chunks', async () => {
    const { adapter, conn } = setup({ timeoutMs: 20_000 });
    const content = 'print("✓ 日本 😀")\n'.repeat(480_000);
    const reply = conn.request('source', { sourceReference: 1 });
    const sent = await adapter.next();
    const data = encodeMessage({ seq: 9, type: 'response', request_seq: sent.seq, command: 'source', success: true, body: { content } } as DebugProtocol.Response);
    expect(data.length).toBeGreaterThan(10_000_000);
    let seed = 42;
    for (let pos = 0; pos < data.length;) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const end = Math.min(data.length, pos + 1 + (seed % 100_000));
      adapter.toClient.write(data.subarray(pos, end));
      pos = end;
    }
    expect((await reply).content === content).toBe(true);
  });

  it('receives several messages written one byte at a time, multi-byte characters included', async () => {
    const { adapter, conn } = setup();
    const outputs: string[] = [];
    conn.onEvent('output', (e) => outputs.push(e.body.output));
    const texts = ['plain\n', 'é€😀 split everywhere\n', 'x'.repeat(20_000)];
    const data = Buffer.concat(texts.map((output, i) => encodeMessage({ seq: i, type: 'event', event: 'output', body: { output } } as DebugProtocol.Event)));
    const last = conn.waitForEvent('output', { predicate: (e) => e.body.output.length === 20_000 });
    for (let i = 0; i < data.length; i++) adapter.toClient.write(data.subarray(i, i + 1));
    await last;
    expect(outputs).toEqual(texts);
  });

  it('sends non-ASCII arguments with a byte-accurate Content-Length', async () => {
    const { adapter, conn } = setup();
    const reply = conn.request('evaluate', { expression: 'print("日本 😀")' });
    const sent = await adapter.next(); // the fake's real decoder would fail on a character count
    expect(sent['arguments']).toEqual({ expression: 'print("日本 😀")' });
    adapter.respond(sent, { result: 'None', variablesReference: 0 });
    await reply;
  });

  it.each([
    ['a header section over 8 KiB', () => Buffer.from('X'.repeat(9000), 'latin1'), /header section exceeds 8192 bytes/],
    ['a body over maxBodyBytes', () => Buffer.from('Content-Length: 5000\r\n\r\n', 'latin1'), /body of 5000 bytes exceeds the limit of 4096 bytes/],
    ['invalid JSON', () => Buffer.from('Content-Length: 5\r\n\r\n{"a":', 'latin1'), /not valid JSON/],
  ])('closes on %s, failing pending requests with DapProtocolError', async (_what, bytes, pattern) => {
    const { adapter, conn } = setup({ maxBodyBytes: 4096 });
    const pending = conn.request('threads');
    await adapter.next();
    adapter.toClient.write(bytes());
    const err = await rejection(pending);
    expect(err).toBeInstanceOf(DapProtocolError);
    expect(err).toMatchObject({ code: 'ENGINE_FAILED' });
    expect(err.message).toMatch(/^fake broke the DAP framing: /);
    expect(err.message).toMatch(pattern);
    expect(conn.isClosed).toBe(true);
  });
});
