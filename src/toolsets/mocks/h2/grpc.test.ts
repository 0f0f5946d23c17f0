import { describe, expect, it } from 'vitest';
import { parseMockSet } from '../keploy/parse.js';
import { serializeMockSet } from '../keploy/serialize.js';
import { encodeGrpcMessage, frameMessages, MessageReader, splitMessages, type GrpcMessage } from './grpc.js';
import { buildGrpcMock, readGrpcMock, recordGrpcMock, TEXT_BUDGET, type GrpcCall, type GrpcExchange } from './keploy.js';
import { byteDistance, GrpcCallMatch, GrpcIndex } from './matcher.js';

const msg = (text: string): GrpcMessage => ({ compressed: false, data: Buffer.from(text) });

const unary = (path: string, request: string, replies: string[]): GrpcExchange => ({
  requestHeaders: { ':path': path, ':method': 'POST', ':authority': 'svc:50051', 'content-type': 'application/grpc' },
  requestMessages: [msg(request)],
  responseHeaders: { ':status': '200', 'content-type': 'application/grpc' },
  responseMessages: replies.map(msg),
  trailers: { 'grpc-status': '0', 'grpc-message': '' },
  requestTime: new Date('2026-01-01T00:00:00Z'),
  responseTime: new Date('2026-01-01T00:00:01Z'),
});

/** A unary call's mock as it is kept when the call ends: its messages as bytes (their text is written after). */
function call(name: string, path: string, request: string, replies: string[]) {
  return { ...recordGrpcMock(unary(path, request, replies)).mock, name };
}

describe('gRPC length-prefixed messages', () => {
  it('splits and frames messages, keeping a truncated tail', () => {
    const framed = frameMessages([msg('ab'), { compressed: true, data: Buffer.from('xyz') }, msg('')]);
    expect(framed.toString('hex')).toBe('0000000002616201000000037879' + '7a' + '0000000000');
    expect(splitMessages(framed).map((m) => [m.compressed, Buffer.from(m.data).toString()])).toEqual([
      [false, 'ab'],
      [true, 'xyz'],
      [false, ''],
    ]);
    expect(splitMessages(framed.subarray(0, 13)).map((m) => Buffer.from(m.data).toString())).toEqual(['ab', 'x']);
    // A body cut inside a prefix: kept as far as it came too (attack t1-1), framed again to the same 3 bytes.
    expect(splitMessages(Buffer.alloc(3))).toEqual([{ compressed: false, data: new Uint8Array(0), truncated: { length: 0, came: 3 } }]);
    expect(frameMessages(splitMessages(framed.subarray(0, 13)))).toEqual(framed.subarray(0, 13));
  });

  it('reads messages as they arrive, whatever the cuts: byte by byte, at every boundary, and all at once', () => {
    const messages = [msg('ab'), { compressed: true, data: Buffer.alloc(70_000, 7) }, msg(''), msg('tail')];
    const framed = frameMessages(messages);
    const same = (got: GrpcMessage[]) => got.map((m) => [m.compressed, Buffer.from(m.data).toString('hex')]);
    const want = same(messages);
    const cuts = [[framed], [...framed].map((b) => Buffer.from([b])), [framed.subarray(0, 3), framed.subarray(3, 9), framed.subarray(9, 40_000), framed.subarray(40_000)]];
    for (const chunks of cuts) {
      const reader = new MessageReader();
      const got = chunks.flatMap((c) => reader.push(c));
      expect(same(got)).toEqual(want);
      expect(reader.pending).toBe(0);
    }
    const reader = new MessageReader();
    expect(reader.push(framed.subarray(0, 8))).toHaveLength(1);
    expect(reader.pending).toBe(1); // the second message's first byte
  });

  it('percent-encodes grpc-message outside printable ASCII', () => {
    expect(encodeGrpcMessage('closest mock-1: 100% “same”')).toBe('closest mock-1: 100%25 %E2%80%9Csame%E2%80%9D');
  });
});

describe('gRPC mocks in Keploy form', () => {
  it('round-trips through the YAML: headers split into pseudo and ordinary, one body, all messages of a stream', async () => {
    const mocks = [
      { ...(await buildGrpcMock(unary('/shop.Greeter/Hello', '\n\x03ada', ['hello']))), name: 'mock-0' },
      { ...(await buildGrpcMock(unary('/shop.Greeter/Count', 'n', ['a', 'b', 'c']))), name: 'mock-1' },
    ];
    const yaml = serializeMockSet(mocks);
    expect(yaml).toContain('kind: gRPC');
    expect(yaml).toContain('pseudo_headers:');
    expect(yaml).toContain('ordinary_headers:');
    expect(yaml).toContain('additional_messages:');
    const back = parseMockSet(yaml, 'mocks.yaml').map(readGrpcMock);
    expect(back[0]).toMatchObject({ path: '/shop.Greeter/Hello', authority: 'svc:50051', trailers: { 'grpc-status': '0' } });
    expect(back[0]!.requestMessages.map((m) => Buffer.from(m.data).toString())).toEqual(['\n\x03ada']);
    expect(yaml).toContain('decoded_data: |\n                1: {"ada"}\n');
    expect(back[1]!.responseMessages.map((m) => Buffer.from(m.data).toString())).toEqual(['a', 'b', 'c']);
  });
});

describe('GrpcIndex', () => {
  const index = () => new GrpcIndex([call('mock-0', '/s.S/A', 'one', ['1']), call('mock-1', '/s.S/A', 'two', ['2']), call('mock-2', '/s.S/B', 'one', ['3'])]);
  const req = (text: string) => [msg(text)];

  it('matches by path and exact request bytes, in recorded order, reusing the last when all are used', () => {
    const i = index();
    const hit = (path: string, text: string) => {
      const m = i.match(path, req(text));
      return 'call' in m ? m.call.name : m.miss;
    };
    expect(hit('/s.S/A', 'two')).toBe('mock-1');
    expect(hit('/s.S/B', 'one')).toBe('mock-2');
    expect(hit('/s.S/A', 'two')).toBe('mock-1');
  });

  it('a miss names the closest mock: same method with the fewest differing bytes, else another method', () => {
    const i = index();
    const m = i.match('/s.S/A', req('twx'));
    expect(m).toEqual({
      knownPath: true,
      miss: expect.stringMatching(/^gRPC \/s\.S\/A \(request 3 bytes\): no mock has this request; closest mock-1 \(same method, request 3 bytes, 1 bytes differ\)$/),
    });
    expect(i.match('/s.S/C', req('one'))).toEqual({ knownPath: false, miss: 'gRPC /s.S/C: no mock for this method; closest mock-0 (/s.S/A)' });
    expect(new GrpcIndex([]).match('/x/y', req(''))).toMatchObject({ knownPath: false, miss: expect.stringContaining('the set has no gRPC mocks') });
    expect(byteDistance(Buffer.from('abc'), Buffer.from('abd!'))).toBe(2);
  });
});

describe('GrpcCallMatch: streams, message by message', () => {
  const stream = (name: string, requests: string[], replies: [string, number | undefined][]): GrpcCall => ({
    name,
    path: '/s.S/Chat',
    authority: '',
    requestMessages: requests.map(msg),
    responseHeaders: { ':status': '200' },
    responseMessages: replies.map(([t, after]) => ({ ...msg(t), ...(after === undefined ? {} : { afterRequests: after }) })),
    trailers: { 'grpc-status': '0' },
  });
  const mock = (c: GrpcCall) =>
    ({
      version: 'api.keploy.io/v1beta1',
      kind: 'gRPC',
      name: c.name,
      spec: recordGrpcMock({
        requestHeaders: { ':path': c.path },
        requestMessages: c.requestMessages,
        responseHeaders: c.responseHeaders,
        responseMessages: c.responseMessages,
        trailers: c.trailers,
        requestTime: new Date(0),
        responseTime: new Date(0),
      }).mock.spec,
    }) as any;
  const texts = (r: { send: GrpcMessage[] } | { miss: string }) => ('send' in r ? r.send.map((m) => Buffer.from(m.data).toString()) : r.miss);

  it('answers a ping-pong bidi call step by step: each reply once the requests recorded before it are in', () => {
    const index = new GrpcIndex([
      mock(
        stream(
          'mock-0',
          ['a', 'b', 'c'],
          [
            ['A', 1],
            ['B', 2],
            ['C', 3],
            ['bye', undefined],
          ],
        ),
      ),
    ]);
    const m = index.open('/s.S/Chat') as GrpcCallMatch;
    expect(texts(m.push(msg('a')))).toEqual(['A']);
    expect(texts(m.push(msg('b')))).toEqual(['B']);
    expect(texts(m.push(msg('c')))).toEqual(['C']);
    expect(texts(m.end())).toEqual(['bye']);
  });

  it('answers client streaming at the end, and tells calls apart by a later message', () => {
    const index = new GrpcIndex([mock(stream('mock-0', ['a', 'b'], [['sum ab', undefined]])), mock(stream('mock-1', ['a', 'c'], [['sum ac', undefined]]))]);
    const m = index.open('/s.S/Chat') as GrpcCallMatch;
    expect(texts(m.push(msg('a')))).toEqual([]);
    expect(texts(m.push(msg('c')))).toEqual([]);
    const end = m.end();
    expect('call' in end && end.call.name).toBe('mock-1');
    expect(texts(end)).toEqual(['sum ac']);
  });

  it('a miss in the middle of a stream names the message and the closest mock', () => {
    const index = new GrpcIndex([
      mock(
        stream(
          'mock-0',
          ['a', 'bb', 'c'],
          [
            ['A', 1],
            ['B', 2],
          ],
        ),
      ),
    ]);
    const m = index.open('/s.S/Chat') as GrpcCallMatch;
    expect(texts(m.push(msg('a')))).toEqual(['A']);
    expect(texts(m.push(msg('bx')))).toBe('gRPC /s.S/Chat (request message 2, 2 bytes): no mock has this request; closest mock-0 (same method, same first 1, its message 2: 2 bytes, 1 bytes differ)');
    const short = new GrpcIndex([mock(stream('mock-0', ['a', 'b'], [['A', undefined]]))]).open('/s.S/Chat') as GrpcCallMatch;
    short.push(msg('a'));
    expect(texts(short.end())).toBe('gRPC /s.S/Chat: the client ended after 1 request message; closest mock-0 (same method, same first 1, 2 request messages)');
    const long = new GrpcIndex([mock(stream('mock-0', ['a'], [['A', undefined]]))]).open('/s.S/Chat') as GrpcCallMatch;
    long.push(msg('a'));
    expect(texts(long.push(msg('b')))).toBe('gRPC /s.S/Chat (request message 2, 1 bytes): no mock has this request; closest mock-0 (same method, same first 1, no more request messages)');
  });

  it('ends the call where the recorded server ended it, the client still sending (trailers then, not at its end)', () => {
    const early = { ...stream('mock-0', ['a', 'stop'], [['A', 1]]), trailersAfterRequests: 2 };
    const yaml = serializeMockSet([mock(early)].map((m) => ({ ...m, spec: { ...m.spec, grpcResp: { ...m.spec.grpcResp, debugkit_trailers_after_requests: 2 } } })));
    const index = new GrpcIndex(parseMockSet(yaml, 'm.yaml'));
    const m = index.open('/s.S/Chat') as GrpcCallMatch;
    expect(m.push(msg('a'))).not.toHaveProperty('end');
    const r = m.push(msg('stop'));
    expect('end' in r && r.end).toBe(true);
  });

  it('keeps the step of each response message through the YAML (debugkit_after_requests), none for unary', () => {
    const yaml = serializeMockSet([
      mock(
        stream(
          'mock-0',
          ['a', 'b'],
          [
            ['A', 1],
            ['B', undefined],
          ],
        ),
      ),
      call('mock-1', '/s.S/A', 'x', ['y']),
    ]);
    expect(yaml.match(/debugkit_after_requests: 1/g)).toHaveLength(1);
    const back = parseMockSet(yaml, 'm.yaml').map(readGrpcMock);
    expect(back[0]!.responseMessages.map((m) => m.afterRequests)).toEqual([1, undefined]);
    expect(back[1]!.responseMessages.map((m) => m.afterRequests)).toEqual([undefined]);
  });
});

describe('a gRPC mock shaped as Keploy writes it (keploy/keploy pkg/models/grpc.go; no Keploy sample file was found)', () => {
  const yaml = [
    'version: api.keploy.io/v1beta1',
    'kind: gRPC',
    'name: mock-0',
    'spec:',
    '    metadata: {}',
    '    grpcReq:',
    '        headers:',
    '            pseudo_headers:',
    '                :authority: localhost:50051',
    '                :method: POST',
    '                :path: /shop.Greeter/Count',
    '                :scheme: http',
    '            ordinary_headers:',
    '                content-type: application/grpc',
    '        body:',
    '            compression_flag: 0',
    '            message_length: 7',
    '            decoded_data: |',
    '                1: {"ada"}',
    '                2: 3',
    '        timestamp: 0001-01-01T00:00:00Z',
    '    grpcResp:',
    '        headers:',
    '            pseudo_headers:',
    '                :status: "200"',
    '            ordinary_headers:',
    '                content-type: application/grpc',
    '        body:',
    '            compression_flag: 0',
    '            message_length: 11',
    '            decoded_data: |',
    '                1: {"ada #1"}',
    '                2: 1',
    '        trailers:',
    '            pseudo_headers: {}',
    '            ordinary_headers:',
    '                grpc-message: ""',
    '                grpc-status: "0"',
    '        timestamp: 0001-01-01T00:00:00Z',
    '    created: 0',
    '    assertions: {}',
    '',
  ].join('\n');

  it('reads decoded_data (protoscope text) back to the message bytes and answers the call', () => {
    const mocks = parseMockSet(yaml, 'mocks.yaml');
    const call = readGrpcMock(mocks[0]!)!;
    expect(Buffer.from(call.requestMessages[0]!.data).toString('hex')).toBe('0a036164611003');
    expect(call.responseMessages.map((m) => Buffer.from(m.data).toString('hex'))).toEqual(['0a066164612023311001']);
    const m = new GrpcIndex(mocks).match('/shop.Greeter/Count', [{ compressed: false, data: Buffer.from('0a036164611003', 'hex') }]);
    expect('call' in m && m.call.name).toBe('mock-0');
    // Written again, the decoded_data blocks are Keploy's text as it was.
    expect(serializeMockSet(mocks)).toContain('            decoded_data: |\n                1: {"ada"}\n                2: 3\n        timestamp:');
  });
});

describe('decoded_data of a large message', () => {
  it("is text for a mock's messages up to the budget together, then bytes: a call split into many messages is bounded too (attack 18k)", async () => {
    // One string field (1: {"aaa..."}) of 100 KiB: few fields, so the bytes are what the budget counts (TEXT_FIELDS counts fields).
    const len = 100 * 1024 - 4;
    const part = Buffer.concat([Buffer.from([0x0a, 0x80 | (len & 0x7f), 0x80 | ((len >> 7) & 0x7f), len >> 14]), Buffer.alloc(len, 0x61)]);
    const message = { compressed: false, data: part };
    const mock = await buildGrpcMock({
      requestHeaders: { ':path': '/s.S/Many' },
      requestMessages: [message, message],
      responseHeaders: {},
      responseMessages: [message, message],
      trailers: {},
      requestTime: new Date(0),
      responseTime: new Date(0),
    });
    const yaml = serializeMockSet([mock]);
    expect(yaml.match(/decoded_data: !!binary/g)?.length).toBe(2);
    const back = readGrpcMock(parseMockSet(yaml, 'm.yaml')[0]!)!;
    for (const m of [...back.requestMessages, ...back.responseMessages]) expect(Buffer.from(m.data).equals(part)).toBe(true);
  });

  it('is the bytes (!!binary) over the text budget, and reads back', async () => {
    const big = Buffer.alloc(TEXT_BUDGET + 1, 0x61);
    const mock = await buildGrpcMock({
      requestHeaders: { ':path': '/s.S/Big' },
      requestMessages: [{ compressed: false, data: big }],
      responseHeaders: {},
      responseMessages: [],
      trailers: {},
      requestTime: new Date(0),
      responseTime: new Date(0),
    });
    const yaml = serializeMockSet([mock]);
    expect(yaml).toContain('decoded_data: !!binary');
    expect(Buffer.from(readGrpcMock(parseMockSet(yaml, 'm.yaml')[0]!)!.requestMessages[0]!.data).equals(big)).toBe(true);
  });
});
