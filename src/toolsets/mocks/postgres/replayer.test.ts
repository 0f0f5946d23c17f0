import net from 'node:net';
import { serialize } from 'pg-protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KEPLOY_MOCK_VERSION, ZERO_TIME, type PostgresMock } from '../keploy/types.js';
import { cpuTimes, linearMessage } from '../../../core/cputime.js';
import { TimeSlice } from '../../../core/wait.js';
import { ReplayIndex } from './matcher.js';
import { parseFrontendBytes } from './frontend.js';
import { buildRequestPacket, buildResponsePacket } from './keploy.js';
import { DEFAULT_PARAMETER_STATUS } from './replayer.js';
import { watchTurns } from '../http/test-support.js';
import { replayingListener, type Listener } from './testing.js';
import { turnsMarked } from '../../../../test/helpers/stall.js';
import { backend, BackendSplitter, codeOf, dataRowValues, decodeBackend, errorFields, rowFields, Writer } from './wire.js';

function mock(name: string, requests: Buffer[], responses: Buffer[]): PostgresMock {
  return {
    version: KEPLOY_MOCK_VERSION,
    kind: 'Postgres',
    name,
    spec: {
      metadata: {},
      postgresrequests: [buildRequestPacket(parseFrontendBytes(Buffer.concat(requests)), { length: 8 })],
      postgresresponses: [buildResponsePacket(responses, { length: 8 })],
      reqtimestampmock: ZERO_TIME,
      restimestampmock: ZERO_TIME,
    },
  };
}

const row = (...values: Array<string | null>) => backend.dataRow(values.map((v) => (v === null ? null : Buffer.from(v))));
const field = (name: string, typeOid: number) => ({ name, tableOid: 0, column: 0, typeOid, typeSize: -1, typeModifier: -1, format: 0 });
const simple = (name: string, query: string, tag: string, status = 'I', ...rows: Buffer[]) =>
  mock(name, [serialize.query(query)], [...rows, backend.commandComplete(tag), backend.readyForQuery(status)]);

const MOCKS = [
  simple('mock-0', 'SELECT n', 'SELECT 1', 'I', row('1')),
  simple('mock-1', 'SELECT n', 'SELECT 1', 'I', row('2')),
  simple('mock-2', 'BEGIN', 'BEGIN', 'T'),
  // node-postgres style: Parse/Bind/Describe portal/Execute/Sync, text results.
  mock(
    'mock-3',
    [serialize.parse({ text: 'SELECT id, price FROM t WHERE id = $1', types: [23] }), serialize.bind({ values: ['7'] }), serialize.describe({ type: 'P' }), serialize.execute(), serialize.sync()],
    [
      backend.parseComplete(),
      backend.bindComplete(),
      backend.rowDescription([field('id', 23), field('price', 1700)]),
      row('7', '1.50'),
      backend.commandComplete('SELECT 1'),
      backend.readyForQuery('I'),
    ],
  ),
];

const sockets = new Set<net.Socket>();

/** A raw protocol client: write bytes, read what comes back. */
async function rawClient(port: number) {
  const socket = net.connect({ port, host: '127.0.0.1' });
  sockets.add(socket);
  await new Promise((resolve) => socket.once('connect', resolve));
  let buffered = Buffer.alloc(0);
  let closed = false;
  const waiters: Array<() => void> = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  socket.on('data', (d: Buffer) => ((buffered = Buffer.concat([buffered, d])), wake()));
  socket.on('close', () => ((closed = true), wake()));
  const until = async (done: () => boolean) => {
    while (!done() && !closed) await new Promise<void>((r) => waiters.push(r));
  };
  return {
    send: (...bytes: Buffer[]) => socket.write(Buffer.concat(bytes)),
    /** Backend messages up to and including the next ReadyForQuery. */
    async untilReady(): Promise<Buffer[]> {
      let seen: Buffer[] = [];
      await until(() => (seen = new BackendSplitter().push(buffered)).some((m) => codeOf(m) === 'Z'));
      const end = seen.findIndex((m) => codeOf(m) === 'Z') + 1 || seen.length;
      buffered = buffered.subarray(seen.slice(0, end).reduce((n, m) => n + m.length, 0));
      return seen.slice(0, end);
    },
    async take(n: number): Promise<Buffer> {
      await until(() => buffered.length >= n);
      const out = buffered.subarray(0, n);
      buffered = buffered.subarray(n);
      return out;
    },
    async closedWith(): Promise<Buffer> {
      await until(() => false);
      return buffered;
    },
    socket,
  };
}

const startupMsg = serialize.startup({ user: 'u', database: 'd' });
const codes = (messages: Buffer[]) => messages.map(codeOf).join('');

describe('replayPostgres as a server', () => {
  let server: (Listener & { misses: unknown[] }) | undefined;
  afterEach(async () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    await server?.close();
    server = undefined;
  });
  const connect = async (mocks: PostgresMock[] | ReplayIndex = MOCKS) => {
    server ??= await replayingListener(mocks);
    const c = await rawClient(server.port);
    c.send(startupMsg);
    expect(codes(await c.untilReady())).toBe(`R${'S'.repeat(DEFAULT_PARAMETER_STATUS.length)}KZ`);
    return c;
  };

  it("answers SSLRequest and GSSENCRequest with 'N', then authenticates without asking for a password", async () => {
    server = await replayingListener(MOCKS);
    const c = await rawClient(server.port);
    c.send(serialize.requestSsl());
    expect((await c.take(1)).toString()).toBe('N');
    c.send(Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30])); // GSSENCRequest
    expect((await c.take(1)).toString()).toBe('N');
    c.send(startupMsg);
    const startup = await c.untilReady();
    expect(startup[0]!.readInt32BE(5)).toBe(0); // AuthenticationOk
    expect(startup.filter((m) => codeOf(m) === 'S').map((m) => decodeBackend(m)!.parameterName)).toContain('server_version');
    c.send(serialize.end());
    expect((await c.closedWith()).length).toBe(0);
  });

  it('tells a client asking for protocol 3.2 that it speaks 3.0', async () => {
    server = await replayingListener(MOCKS);
    const c = await rawClient(server.port);
    const v32 = Buffer.from(startupMsg);
    v32.writeUInt16BE(2, 6);
    c.send(v32);
    const [first] = await c.untilReady();
    expect(codeOf(first!)).toBe('v');
    expect(first!.readInt32BE(5)).toBe(0);
  });

  it('closes a CancelRequest connection without answering, and a garbled one with FATAL 08P01', async () => {
    server = await replayingListener(MOCKS);
    const cancel = await rawClient(server.port);
    cancel.send(serialize.cancel(1, 2));
    expect((await cancel.closedWith()).length).toBe(0);
    const garbled = await connect();
    garbled.send(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    const [fatal] = new BackendSplitter().push(await garbled.closedWith());
    expect(errorFields(fatal!)).toMatchObject({ S: 'FATAL', C: '08P01' });
  });

  it('replays a repeated query in recorded order, then repeats the last answer; a shared index keeps the order across connections', async () => {
    const value = async (c: Awaited<ReturnType<typeof rawClient>>) => {
      c.send(serialize.query('SELECT  n'));
      return String(dataRowValues((await c.untilReady()).find((m) => codeOf(m) === 'D')!)[0]);
    };
    const a = await connect(new ReplayIndex(MOCKS));
    const b = await connect();
    expect([await value(a), await value(b), await value(a)]).toEqual(['1', '2', '2']);
  });

  it('a message cut off by the program closing its connection is a miss (attack 18aj r1-2: a strict run passed)', async () => {
    const c = await connect();
    c.send(serialize.query('SELECT n'));
    expect(codes(await c.untilReady())).toBe('DCZ');
    // The first 10 bytes of a second query, whose length says more, then the close.
    c.send(serialize.query("SELECT secret FROM u WHERE name = 'a'").subarray(0, 10));
    c.socket.end();
    await c.closedWith();
    await vi.waitFor(() => expect(server!.misses).toHaveLength(1));
    expect(server!.misses[0]).toMatchObject({ message: 'the program closed its connection with 10 bytes of a message not whole (a request sent and never answered)' });
  });

  it('a program that leaves after its answers: no miss', async () => {
    const c = await connect();
    c.send(serialize.query('SELECT n'));
    expect(codes(await c.untilReady())).toBe('DCZ');
    c.send(serialize.end());
    await c.closedWith();
    expect(server!.misses).toEqual([]);
  });

  it('fails the transaction on a miss inside it (ReadyForQuery E)', async () => {
    const c = await connect();
    c.send(serialize.query('BEGIN'));
    expect((await c.untilReady()).at(-1)!.toString('latin1', 5)).toBe('T');
    c.send(serialize.query('SELECT nothing recorded'));
    const answer = await c.untilReady();
    expect(codes(answer)).toBe('EZ');
    expect(errorFields(answer[0]!).M).toMatch(/^debugkit: no recorded mock for query: SELECT nothing recorded \(closest: mock-\d: /);
    expect(answer[1]!.toString('latin1', 5)).toBe('E');
    expect(server!.misses).toHaveLength(1);
  });

  it('says so when a query was recorded, but never with parameters', async () => {
    const c = await connect();
    c.send(serialize.parse({ text: 'SELECT n' }), serialize.bind({ values: ['1'] }), serialize.execute(), serialize.sync());
    const answer = await c.untilReady();
    expect(codes(answer)).toBe('1EZ');
    expect(errorFields(answer[1]!).M).toBe(
      'debugkit: no recorded mock for query: SELECT n (closest: mock-0: the query was recorded, but never run with parameters (prepared only, or as a simple query))',
    );
  });

  it("describes a statement by its $n up to the protocol's 65535 parameters: a larger $n sizes nothing (attack 18r K6)", async () => {
    const huge = 'SELECT $300000000::int';
    const mixed = 'SELECT $2::text, $300000000::int';
    const described = (name: string, text: string) =>
      mock(
        name,
        [serialize.parse({ name: 's', text }), serialize.describe({ type: 'S', name: 's' }), serialize.sync()],
        [backend.parseComplete(), backend.parameterDescription([23]), backend.rowDescription([field('int4', 23)]), backend.readyForQuery('I')],
      );
    const c = await connect([described('mock-huge', huge), described('mock-mixed', mixed)]);
    global.gc?.();
    const heap = process.memoryUsage().heapUsed;
    const began = performance.now();
    for (const [text, types] of [
      [huge, [23]],
      [mixed, [23, 25]],
    ] as const) {
      c.send(serialize.parse({ name: 's', text }), serialize.describe({ type: 'S', name: 's' }), serialize.sync());
      const answer = await c.untilReady();
      expect(codes(answer)).toBe('1tTZ');
      expect(decodeBackend(answer[1]!)!.dataTypeIDs).toEqual(types);
      c.send(serialize.close({ type: 'S', name: 's' }), serialize.sync());
      expect(codes(await c.untilReady())).toBe('3Z');
    }
    expect(performance.now() - began).toBeLessThan(2000);
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(64 * 1024 * 1024);
  });

  it('serves a statement description from a recording that only described its portal, and converts result formats', async () => {
    const c = await connect();
    const text = 'SELECT id, price FROM t WHERE id = $1';
    c.send(serialize.parse({ name: 'st', text }), serialize.describe({ type: 'S', name: 'st' }), serialize.sync());
    const described = await c.untilReady();
    expect(codes(described)).toBe('1tTZ');
    expect(decodeBackend(described[1]!)!.dataTypeIDs).toEqual([23]); // from the recorded Parse's types
    // Binary id: converted from the recorded text. Binary price (numeric): not convertible, said so.
    const binaryId = new Uint8Array([0, 0, 0, 7]);
    c.send(serialize.bind({ statement: 'st', portal: 'p', values: [Buffer.from(binaryId)] }));
    // Bind p2: the text '7', results [binary, text] (pg-protocol's bind() has one result format for all).
    c.send(new Writer().addCString('p2').addCString('st').addInt16(1).addInt16(0).addInt16(1).addInt32(1).add(Buffer.from('7')).addInt16(2).addInt16(1).addInt16(0).flush(0x42));
    c.send(serialize.describe({ type: 'P', name: 'p2' }), serialize.execute({ portal: 'p2' }), serialize.sync());
    const executed = await c.untilReady();
    expect(codes(executed)).toBe('22TDCZ');
    expect(rowFields(executed[2]!).map((f) => f.format)).toEqual([1, 0]);
    expect(dataRowValues(executed[3]!)).toEqual([Buffer.from(binaryId), Buffer.from('1.50')]);
    c.send(serialize.bind({ statement: 'st', values: ['7'], binary: true }), serialize.execute(), serialize.sync());
    const refused = await c.untilReady();
    expect(codes(refused)).toBe('2EZ');
    expect(errorFields(refused[1]!).M).toMatch(/column "price" \(type oid 1700\) in text format and cannot convert it to the binary format/);
  });
});

// Finding F1 of attack 18b, the pattern in the PostgreSQL replayer's index build: every group end
// (Sync) of a mock rewrote the status of every answer made before it, so a mock of n groups cost
// n^2 (40,000 Parse/Sync groups: 2.3 s). Timed at n and 4n groups in CPU time (../testing.ts):
// linear ~4x, quadratic ~16x.

/** One mock of n extended-protocol groups: Parse, Sync. */
const groups = (n: number) =>
  mock(
    'mock-0',
    Array.from({ length: n }, (_, i) => [serialize.parse({ text: `SELECT ${i}` }), serialize.sync()]).flat(),
    Array.from({ length: n }, () => [backend.parseComplete(), backend.readyForQuery('I')]).flat(),
  );

describe('ReplayIndex on one mock of many groups (F1: linear)', () => {
  it('building the index over a mock of Parse/Sync groups is linear in their number', () => {
    const small = groups(10_000);
    const big = groups(40_000);
    new ReplayIndex([big]).build(); // warm up
    // Best of 5 (process CPU counts the collector's threads too, and a CI run's parallel files once tipped best of 3 over);
    // under 12 times for 4 times the groups: quadratic is 16.
    const t = cpuTimes(
      () => new ReplayIndex([small]).build(),
      () => new ReplayIndex([big]).build(),
      5,
    );
    expect(t.big, linearMessage('10,000 groups (n), 40,000 (4n)', t)).toBeLessThan(Math.max(12 * t.small, 20));
  });

  it('the answers of a mock take the status of its last group end, as before the change', () => {
    // Recorded behaviour (not a claim that it is right): every answer made before a group's
    // ReadyForQuery takes its status, so the last group end decides them all.
    const index = new ReplayIndex([
      mock(
        'mock-0',
        [serialize.parse({ text: 'BEGIN' }), serialize.sync(), serialize.parse({ text: 'SELECT 1' }), serialize.sync(), serialize.parse({ text: 'SELECT 2' })],
        [backend.parseComplete(), backend.readyForQuery('T'), backend.parseComplete(), backend.readyForQuery('E'), backend.parseComplete()],
      ),
    ]);
    expect(index.parse('BEGIN')?.txStatus).toBe('E');
    expect(index.parse('SELECT 1')?.txStatus).toBe('E');
    expect(index.parse('SELECT 2')?.txStatus).toBe('I'); // after the last group end: never closed
    expect(index.problems).toEqual([]);
  });

  it('a group whose answer ends early keeps the statuses of the group ends before it', () => {
    const index = new ReplayIndex([
      mock(
        'mock-0',
        [serialize.parse({ text: 'A' }), serialize.sync(), serialize.parse({ text: 'B' }), serialize.sync()],
        [backend.parseComplete(), backend.readyForQuery('T'), backend.parseComplete()],
      ),
    ]);
    expect(index.parse('A')?.txStatus).toBe('T');
    expect(index.parse('B')?.txStatus).toBe('I');
    expect(index.problems).toHaveLength(1);
  });
});

// Attack 18d: a pipelined burst was answered in one synchronous loop per chunk (2,600 misses
// of a 64 KB chunk, each compared with every recorded query), and answers were held until the
// group's Sync whatever their size. Now a burst is answered in slices of SLICE_MS that yield to
// the event loop, and MAX_HELD_BYTES of answers are written without waiting for the Sync.
describe('replayPostgres under a burst (attack 18d)', () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    for (const l of opened.splice(0)) await l.close();
  });

  /** A started raw client of a replaying listener over `mocks`, and every backend message it receives from now on. */
  async function started(mocks: PostgresMock[]) {
    const server = await replayingListener(mocks);
    opened.push(server);
    const c = await rawClient(server.port);
    c.send(startupMsg);
    await c.untilReady();
    const messages: Buffer[] = [];
    const splitter = new BackendSplitter();
    let bytes = 0;
    const waiters: Array<() => void> = [];
    c.socket.on('data', (d: Buffer) => {
      bytes += d.length;
      messages.push(...splitter.push(d));
      waiters.splice(0).forEach((w) => w());
    });
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise<void>((r) => waiters.push(r));
    };
    return { c, messages, until, bytes: () => bytes };
  }

  it('answers a pipelined burst of misses in slices: the event loop gets a turn every few milliseconds of CPU', async () => {
    const set = Array.from({ length: 2_000 }, (_, i) => simple(`mock-${i}`, `SELECT name FROM items WHERE id = ${i}`, 'SELECT 1'));
    const { c, messages, until } = await started(set);
    const n = 10_000;
    // The turns of the event loop in which the replayer wrote answers (every write but the client's), and the longest
    // stretch of CPU time between two turns (for the failure message).
    const answered = turnsMarked();
    const write = net.Socket.prototype.write;
    vi.spyOn(net.Socket.prototype, 'write').mockImplementation(function (this: net.Socket, ...args: Parameters<net.Socket['write']>) {
      if (this !== c.socket) answered.mark();
      return write.apply(this, args);
    });
    const watch = watchTurns();
    try {
      c.send(Buffer.concat(Array.from({ length: n }, (_, i) => serialize.query(`SELECT name FROM things WHERE id = ${i}`))));
      await until(() => messages.filter((m) => codeOf(m) === 'Z').length >= n);
    } finally {
      vi.restoreAllMocks();
    }
    const { longest } = watch.stop();
    expect(messages.filter((m) => codeOf(m) === 'E')).toHaveLength(n);
    expect(errorFields(messages[0]!).M).toMatch(/^debugkit: no recorded mock for query: SELECT name FROM things WHERE id = 0 \(closest: mock-0: /);
    // Before, each 64 KB chunk of misses (about 1,450 of them) was answered in one go: the 450 KB burst in at most 8 turns
    // (1 or 2 here with the slicing disabled, the reads being larger). In slices of SLICE_MS, 40-56 turns here, and more on a slower host (each slice
    // gets fewer misses done), never fewer.
    expect(answered.count(), `turns the answers were written in; ${longest.toFixed(1)} ms of CPU between two turns at most`).toBeGreaterThan(10);
  }, 120_000);

  it('builds the index of a big set in slices, giving the event loop turns meanwhile', async () => {
    const index = new ReplayIndex(Array.from({ length: 20_000 }, (_, i) => simple(`mock-${i}`, `SELECT ${i}`, 'SELECT 1')));
    const watch = watchTurns();
    await index.ready(new TimeSlice(5));
    expect(watch.stop().turns, 'turns of the event loop while 20,000 mocks were filed in slices of 5 ms').toBeGreaterThan(3);
    expect(index.simpleQuery('SELECT 19999')?.mock).toBe('mock-19999');
  });

  it('writes the answers of a group without a Sync once MAX_HELD_BYTES of them are held', async () => {
    const big = 'x'.repeat(10_000);
    const set = [
      mock(
        'mock-0',
        [serialize.parse({ text: 'SELECT big' }), serialize.bind(), serialize.execute(), serialize.sync()],
        [backend.parseComplete(), backend.bindComplete(), row(big), backend.commandComplete('SELECT 1'), backend.readyForQuery('I')],
      ),
    ];
    const { c, messages, until, bytes } = await started(set);
    // 300 Executes of a 10 KB answer (3 MB), no Sync: before, nothing came until the Sync.
    c.send(serialize.parse({ text: 'SELECT big' }), serialize.bind(), ...Array.from({ length: 300 }, () => serialize.execute()));
    await until(() => bytes() >= 2 * 1024 * 1024);
    expect(messages.some((m) => codeOf(m) === 'Z')).toBe(false);
    c.send(serialize.sync());
    await until(() => messages.some((m) => codeOf(m) === 'Z'));
    expect(messages.filter((m) => codeOf(m) === 'C')).toHaveLength(300);
  });
});
