// Round 18aq 3: a gRPC request message whose 5-byte prefix declares 4 GiB (0xffffffff). The HTTP/2
// replayer read on until 16 MiB of it were held (its bound on a message being read), the program
// waiting for an answer all along: a program that sent its message slowly, or stopped, waited for
// good. A gRPC server answers RESOURCE_EXHAUSTED as soon as the prefix says more than it takes
// (grpc-go: "grpc: received message larger than max"); so does the replay now, a counted miss.
import http2 from 'node:http2';
import { describe, expect, it } from 'vitest';
import { Watched } from '../kept-testing.js';
import { recordGrpcMock } from './keploy.js';
import { GrpcIndex } from './matcher.js';
import { replaying, unary } from './test-support.js';
import { MAX_BODY } from './wire.js';

/** Waits until `done()`, a turn of the loop at a time; gives up after `turns` turns (the assertion after it then fails). */
async function until(done: () => boolean, turns = 50_000) {
  for (let i = 0; i < turns && !done(); i++) await new Promise((r) => setImmediate(r));
}

const PIECE = 64 * 1024;

/**
 * Opens a call and sends `prefix`, then 64 KiB pieces of its message (each once the last was taken)
 * until the call is answered or `most` bytes went; never ends its side. Returns what came and how
 * many bytes of the message had gone when it came.
 */
async function slowUpload(client: http2.ClientHttp2Session, prefix: Buffer, most: number) {
  const req = client.request({ ':method': 'POST', ':path': '/x.Y/Z', 'content-type': 'application/grpc', te: 'trailers' });
  req.on('error', () => {});
  let end: http2.IncomingHttpHeaders | undefined;
  req.on('response', (h) => {
    if (h['grpc-status'] !== undefined) end = h;
  });
  req.on('trailers', (t) => (end = t));
  await new Promise<void>((r) => req.write(prefix, () => r()));
  let sent = 0;
  while (end === undefined && sent < most && !req.destroyed) {
    await new Promise<void>((r) => req.write(Buffer.alloc(PIECE, 0x61), () => r()));
    sent += PIECE;
    // The answer goes out a few turns after the replayer read the piece that decided it.
    await new Promise<void>((r) => client.ping(() => r()));
    await until(() => end !== undefined, 50);
  }
  await until(() => end !== undefined);
  req.close();
  return { end, sent };
}

describe('attack 18aq 3: a gRPC message whose prefix declares 4 GiB', () => {
  it('replay: answered RESOURCE_EXHAUSTED at its first piece, a counted miss; nothing near the message held', async () => {
    const kept = new Watched(256 * 1024 * 1024);
    const { client, counts, misses } = await replaying({ grpc: new GrpcIndex([{ ...recordGrpcMock(unary).mock, name: 'mock-grpc' }]), kept });
    const { end, sent } = await slowUpload(client, Buffer.from([0, 0xff, 0xff, 0xff, 0xff]), 2 * MAX_BODY);
    const line = `gRPC /x.Y/Z: request message 1's prefix says 4294967295 bytes, over the ${MAX_BODY} bytes a replay reads of one message (a gRPC server answers RESOURCE_EXHAUSTED)`;
    expect({ status: end?.['grpc-status'], message: decodeURIComponent(String(end?.['grpc-message'])) }).toEqual({ status: '8', message: `debugkit mocks: ${line}` });
    // The old replayer answered once 16 MiB of the message were held: 256 pieces.
    expect(sent).toBe(PIECE);
    expect(kept.most).toBeLessThanOrEqual(2 * PIECE);
    expect(counts).toEqual({ replayed: 0, missed: 1, fellBack: 0 });
    expect(misses).toEqual([line]);
  });

  it('replay: a prefix at the bound is read on (a message of 16 MiB may be recorded), and the same call whole is answered as recorded', async () => {
    const { client, counts } = await replaying({ grpc: new GrpcIndex([{ ...recordGrpcMock(unary).mock, name: 'mock-grpc' }]) });
    const atBound = Buffer.alloc(5);
    atBound.writeUInt32BE(MAX_BODY, 1);
    const { end, sent } = await slowUpload(client, atBound, 4 * PIECE);
    expect(end).toBeUndefined();
    expect(sent).toBe(4 * PIECE);
    const req = client.request({ ':method': 'POST', ':path': '/x.Y/Z', 'content-type': 'application/grpc', te: 'trailers' });
    const trailers = new Promise<http2.IncomingHttpHeaders>((r) => req.on('trailers', r));
    req.end(Buffer.concat([Buffer.from([0, 0, 0, 0, 5]), Buffer.from('hello')]));
    expect((await trailers)['grpc-status']).toBe('0');
    expect(counts).toMatchObject({ replayed: 1 });
  });
});
