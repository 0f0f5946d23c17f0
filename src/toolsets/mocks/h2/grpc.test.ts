import { describe, expect, it } from 'vitest';
import { parseMockSet } from '../keploy/parse.js';
import { serializeMockSet } from '../keploy/serialize.js';
import { buildGrpcMock, byteDistance, encodeGrpcMessage, frameMessages, GrpcIndex, readGrpcMock, splitMessages, type GrpcMessage } from './grpc.js';

const msg = (text: string): GrpcMessage => ({ compressed: false, data: Buffer.from(text) });

function call(name: string, path: string, request: string, replies: string[]) {
  return {
    ...buildGrpcMock({
      requestHeaders: { ':path': path, ':method': 'POST', ':authority': 'svc:50051', 'content-type': 'application/grpc' },
      requestMessages: [msg(request)],
      responseHeaders: { ':status': '200', 'content-type': 'application/grpc' },
      responseMessages: replies.map(msg),
      trailers: { 'grpc-status': '0', 'grpc-message': '' },
      requestTime: new Date('2026-01-01T00:00:00Z'),
      responseTime: new Date('2026-01-01T00:00:01Z'),
    }),
    name,
  };
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
    expect(splitMessages(Buffer.alloc(3))).toEqual([]);
  });

  it('percent-encodes grpc-message outside printable ASCII', () => {
    expect(encodeGrpcMessage('closest mock-1: 100% “same”')).toBe('closest mock-1: 100%25 %E2%80%9Csame%E2%80%9D');
  });
});

describe('gRPC mocks in Keploy form', () => {
  it('round-trips through the YAML: headers split into pseudo and ordinary, one body, all messages of a stream', () => {
    const mocks = [call('mock-0', '/shop.Greeter/Hello', '\n\x03ada', ['hello']), call('mock-1', '/shop.Greeter/Count', 'n', ['a', 'b', 'c'])];
    const yaml = serializeMockSet(mocks);
    expect(yaml).toContain('kind: gRPC');
    expect(yaml).toContain('pseudo_headers:');
    expect(yaml).toContain('ordinary_headers:');
    expect(yaml).toContain('additional_messages:');
    const back = parseMockSet(yaml, 'mocks.yaml').map(readGrpcMock);
    expect(back[0]).toMatchObject({ path: '/shop.Greeter/Hello', authority: 'svc:50051', trailers: { 'grpc-status': '0' } });
    expect(Buffer.from(back[0]!.request).equals(frameMessages([msg('\n\x03ada')]))).toBe(true);
    expect(back[1]!.responseMessages.map((m) => Buffer.from(m.data).toString())).toEqual(['a', 'b', 'c']);
  });
});

describe('GrpcIndex', () => {
  const index = () => new GrpcIndex([call('mock-0', '/s.S/A', 'one', ['1']), call('mock-1', '/s.S/A', 'two', ['2']), call('mock-2', '/s.S/B', 'one', ['3'])]);
  const req = (text: string) => frameMessages([msg(text)]);

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
    expect(m).toEqual({ knownPath: true, miss: expect.stringMatching(/^gRPC \/s\.S\/A \(request 8 bytes\): no mock has this request; closest mock-1 .*1 bytes differ/) });
    expect(i.match('/s.S/C', req('one'))).toEqual({ knownPath: false, miss: 'gRPC /s.S/C: no mock for this method; closest mock-0 (/s.S/A)' });
    expect(new GrpcIndex([]).match('/x/y', req(''))).toMatchObject({ knownPath: false, miss: expect.stringContaining('the set has no gRPC mocks') });
    expect(byteDistance(Buffer.from('abc'), Buffer.from('abd!'))).toBe(2);
  });
});
