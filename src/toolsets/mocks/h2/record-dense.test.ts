// Attack 18u P8: recording a gRPC answer of 256 KiB of dense protobuf (nested empty messages,
// `0a 02 0a 00`) wrote its protoscope text and read it back to check, in one turn of the event
// loop: 0.3-0.6 s a call, for as long as the program kept calling; replaying the 32 MB set held the
// loop again. Now the text is written in slices after the mock is kept (bytes until then), a mock
// writes at most TEXT_FIELDS fields as text (the rest stay `!!binary`), and loading reads in slices.
// Turns are counted with a slice that gives the loop a turn each time the work looks at it, so the
// counts follow the work done, not the host's speed.
import http2 from 'node:http2';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { TimeSlice } from '../../../core/wait.js';
import { turnsMarked } from '../../../../test/helpers/stall.js';
import { parseMockSet } from '../keploy/parse.js';
import { serializeMockSet } from '../keploy/serialize.js';
import type { Mock, YamlMap } from '../keploy/types.js';
import { frameMessages, splitMessages, type GrpcMessage } from './grpc.js';
import { buildGrpcMock, TEXT_FIELDS, type GrpcExchange } from './keploy.js';
import { protoscopeTextSliced } from './protoscope.js';
import { GrpcIndex } from './matcher.js';
import { recordH2 } from './recorder.js';

/** A slice that is over each time the work looks at it after a turn of its own: a turn per look, counted. */
class EveryLook extends TimeSlice {
  readonly turns = turnsMarked();
  /** Looks at the slice: one at least between two steps of the work, whether a turn of the loop came between them or not. */
  looks = 0;
  private fresh = true;
  constructor() {
    super(1000);
  }
  override over(): boolean {
    this.looks++;
    this.turns.mark();
    const over = !this.fresh;
    this.fresh = false;
    return over;
  }
  override restart(): void {
    this.fresh = true;
    super.restart();
  }
}

const repeat = (unit: number[], bytes: number) => Buffer.from(Array.from({ length: Math.floor(bytes / unit.length) }, () => unit).flat());
/** 250 KiB of `1: { 1: {} }` (within TEXT_BUDGET's 256 KiB, as in the attack): 128,000 fields, 64,000 of them nested messages. */
const NESTED = repeat([0x0a, 0x02, 0x0a, 0x00], 250 * 1024);
/** 19,900 small varint fields (`1: 1`): just within TEXT_FIELDS (20,000). */
const INTS = repeat([0x08, 0x01], 19_900 * 2);

const exchange = (answer: Buffer): GrpcExchange => ({
  requestHeaders: { ':path': '/s.S/Dense' },
  requestMessages: [{ compressed: false, data: Buffer.from('1001', 'hex') }],
  responseHeaders: { ':status': '200' },
  responseMessages: [{ compressed: false, data: answer }],
  trailers: { 'grpc-status': '0' },
  requestTime: new Date(0),
  responseTime: new Date(0),
});

const decoded = (mock: Mock) => ((mock.spec as YamlMap).grpcResp as { body: { decoded_data: unknown } }).body.decoded_data;

describe('the text of a recorded gRPC message (attack 18u P8)', () => {
  it('is written in turns of the event loop, a turn every few hundred fields, and read back to the same bytes', async () => {
    const slice = new EveryLook();
    const mock = await buildGrpcMock(exchange(INTS), slice);
    expect(typeof decoded(mock)).toBe('string');
    // About 19,900 fields written and ~39,800 tokens read back: one turn per 256 fields and per 1,024 tokens at least.
    expect(slice.turns.count()).toBeGreaterThanOrEqual(Math.floor(INTS.length / 2 / 256));
    const call = (await GrpcIndex.build(parseMockSet(serializeMockSet([mock]), 'm.yaml'), new TimeSlice(10))).match('/s.S/Dense', exchange(INTS).requestMessages);
    expect('call' in call && Buffer.from(call.call.responseMessages[0]!.data).equals(INTS)).toBe(true);
  });

  it('stays bytes past TEXT_FIELDS fields, after no more than that work', async () => {
    const slice = new EveryLook();
    const mock = await buildGrpcMock(exchange(NESTED), slice);
    expect(decoded(mock)).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(decoded(mock) as Uint8Array).equals(NESTED)).toBe(true);
    // The writer stopped at TEXT_FIELDS (a turn every 256 fields), not at the message's 128,000.
    expect(slice.turns.count()).toBeGreaterThan(0);
    expect(slice.turns.count()).toBeLessThanOrEqual(Math.ceil(TEXT_FIELDS / 256) + 2);
    expect(serializeMockSet([mock])).toContain('decoded_data: !!binary');
  });
});

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

const listen = (server: net.Server | http2.Http2Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));

describe('recording and replaying dense gRPC answers (attack 18u P8)', () => {
  it('records each answer (text within the budget, else bytes), and the set replays them byte for byte, loaded in turns', async () => {
    const answers = [NESTED, INTS, NESTED, INTS];
    const server = http2.createServer();
    server.on('stream', (stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const i = splitMessages(Buffer.concat(chunks))[0]!.data[1]!;
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(frameMessages([{ compressed: false, data: answers[i]! }]));
      });
    });
    const upPort = await listen(server);
    closers.push(() => server.close());

    const mocks: Mock[] = [];
    const warnings: string[] = [];
    let recording: Promise<void> | undefined;
    const proxy = net.createServer((client) => {
      recording = recordH2(
        { id: 'c1', target: { host: '127.0.0.1', port: upPort }, client },
        {
          scheme: 'http',
          dial: () =>
            new Promise((resolve, reject) => {
              const socket = net
                .connect(upPort, '127.0.0.1')
                .once('connect', () => resolve(socket))
                .once('error', reject);
            }),
          onMock: (m) => mocks.push(m),
          warn: (w) => warnings.push(w),
        },
      );
    });
    const port = await listen(proxy);
    closers.push(() => proxy.close());

    const client = http2.connect(`http://127.0.0.1:${port}`);
    const request = (i: number): GrpcMessage[] => [{ compressed: false, data: Buffer.from([0x10, i]) }];
    for (let i = 0; i < answers.length; i++) {
      const req = client.request({ ':method': 'POST', ':path': '/s.S/Dense', 'content-type': 'application/grpc' });
      const got: Buffer[] = [];
      req.on('data', (c: Buffer) => got.push(c));
      const ended = new Promise((resolve) => req.on('end', resolve));
      req.end(frameMessages(request(i)));
      await ended;
      expect(Buffer.from(splitMessages(Buffer.concat(got))[0]!.data).equals(answers[i]!)).toBe(true);
    }
    client.close();
    expect(warnings).toEqual([]);
    // The connection's end waits for the texts still being written.
    await new Promise<void>((resolve) => {
      const wait = () => (recording ? void recording.then(resolve) : setImmediate(wait));
      wait();
    });

    expect(mocks.map((m) => typeof decoded(m))).toEqual(['object', 'string', 'object', 'string']);
    const slice = new EveryLook();
    const index = await GrpcIndex.build(parseMockSet(serializeMockSet(mocks), 'm.yaml'), slice);
    // Loading: the two texts (~39,800 tokens each) are read a turn every 1,024 tokens at least.
    expect(slice.turns.count()).toBeGreaterThanOrEqual(2 * Math.floor(((INTS.length / 2) * 2) / 1024));
    for (let i = 0; i < answers.length; i++) {
      const m = index.match('/s.S/Dense', request(i));
      expect('call' in m && Buffer.from(m.call.responseMessages[0]!.data).equals(answers[i]!)).toBe(true);
    }
  });
});

// Attack 18x U2: one length-delimited field counted as one field whatever its length, and was
// written in one go: a 256 KiB string (30% escapes) was one 180 ms block, a packed field of
// varints written as hex 156 ms. A literal's bytes now count into the budget and the steps
// (LITERAL_BYTES = 64 bytes a field, 256 fields a step), so a step writes at most 16 KiB of them.
describe('a recorded gRPC message of one big string or hex field (attack 18x U2)', () => {
  /** `body` as field 1 of a 256 KiB message (TEXT_BUDGET). */
  const oneField = (unit: number[]) => {
    const body = repeat(unit, 256 * 1024 - 8);
    return Buffer.concat([Buffer.from([0x0a, 0x80 | (body.length & 0x7f), 0x80 | ((body.length >> 7) & 0x7f), body.length >> 14]), body]);
  };
  /** 30% of control bytes, each an escape of 4 characters: 512 K characters of text. */
  const STRING = oneField([...Buffer.from('aaaaaaa\x01\x01\x01')]);
  /** A packed repeated field of two-byte varints (not UTF-8): written as hex. */
  const PACKED = oneField([0x81, 0x01, 0xac, 0x02, 0xff, 0x7f]);

  for (const [name, answer, literal] of [
    ['a 256 KiB string of escapes', STRING, '"'],
    ['a 256 KiB packed varint field (hex)', PACKED, '`'],
  ] as const) {
    it(`${name} is written at most 64 KiB of text a step, kept as text, and replays the same bytes`, async () => {
      const slice = new EveryLook();
      const stats = { longestStep: 0 };
      const written = await protoscopeTextSliced(answer, slice, TEXT_FIELDS, stats);
      expect(written?.text).toContain(`1: {\n  ${literal}`);
      // The literal alone is 16 steps of 16 KiB at least, its scan and the text's layout more (71 and 49 looks).
      // Before: the literal was one step, the layout a few more (7 and 19 looks).
      expect(slice.looks).toBeGreaterThanOrEqual(32);
      expect(stats.longestStep).toBeGreaterThan(0);
      expect(stats.longestStep).toBeLessThanOrEqual(64 * 1024 + 1024);
      // The bytes count into the field budget: 4,097 fields of TEXT_FIELDS' 20,000.
      expect(written?.fields).toBe(1 + Math.ceil((answer.length - 4) / 64));

      const mock = await buildGrpcMock(exchange(answer), new EveryLook());
      expect(typeof decoded(mock)).toBe('string');
      const call = (await GrpcIndex.build(parseMockSet(serializeMockSet([mock]), 'm.yaml'), new TimeSlice(10))).match('/s.S/Dense', exchange(answer).requestMessages);
      expect('call' in call && Buffer.from(call.call.responseMessages[0]!.data).equals(answer)).toBe(true);
    });
  }

  it('past the field budget such a field is kept as bytes, after no more work than the budget', async () => {
    const slice = new EveryLook();
    expect(await protoscopeTextSliced(STRING, slice, 1000)).toBeUndefined();
    expect(slice.looks).toBe(0);
  });
});
