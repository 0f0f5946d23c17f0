import http2 from 'node:http2';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Mock } from '../keploy/types.js';
import { pollUntil } from '../../../core/wait.js';
import { frameMessages } from './grpc.js';
import { recordH2 } from './recorder.js';

/**
 * Attack 18k-A F3: HTTP/2 recording kept every byte of a stream (and, for gRPC, a second copy in
 * the message reader while a length prefix of 0xFFFFFFFF said more was coming): a 200 MB upload
 * held about 2 GB. Each direction is now kept up to the per-mock bound, the rest relayed only.
 */

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A real server that counts what each request sent it and answers `answer` bytes. */
async function upstream(answer: number, contentType = 'application/octet-stream'): Promise<{ port: number; received: number[] }> {
  const received: number[] = [];
  const server = http2.createServer();
  server.on('stream', (stream) => {
    let size = 0;
    stream.on('data', (c: Buffer) => (size += c.length));
    stream.on('end', () => {
      received.push(size);
      stream.respond({ ':status': 200, 'content-type': contentType });
      stream.end(Buffer.alloc(answer, 0x62));
    });
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
  closers.push(() => server.close());
  return { port, received };
}

/** The recorder on a port of its own (as the capture proxy hands it a connection), recording to `port`; what it kept and warned. */
async function recorder(port: number, maxBodyBytes?: number): Promise<{ port: number; mocks: Mock[]; warnings: string[]; dropped: string[] }> {
  const mocks: Mock[] = [];
  const warnings: string[] = [];
  const dropped: string[] = [];
  const server = net.createServer((client) => {
    void recordH2(
      { id: 'c1', target: { host: '127.0.0.1', port }, client },
      {
        scheme: 'http',
        dial: () =>
          new Promise((resolve, reject) =>
            net
              .connect(port, '127.0.0.1')
              .once('connect', function (this: net.Socket) {
                resolve(this);
              })
              .once('error', reject),
          ),
        onMock: (m) => mocks.push(m),
        onDropped: (why) => dropped.push(why),
        warn: (w) => warnings.push(w),
        ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
      },
    );
  });
  const own = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
  closers.push(() => server.close());
  return { port: own, mocks, warnings, dropped };
}

/** Sends `body` (in 64 KiB writes) and reads the whole answer. */
async function post(port: number, body: Buffer, contentType = 'application/octet-stream'): Promise<Buffer> {
  const client = http2.connect(`http://127.0.0.1:${port}`);
  closers.push(() => client.close());
  const req = client.request({ ':method': 'POST', ':path': '/upload', 'content-type': contentType });
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
  for (let at = 0; at < body.length; at += 65536) {
    if (!req.write(body.subarray(at, at + 65536))) await new Promise((r) => req.once('drain', r));
  }
  req.end();
  const answer = await done;
  client.close();
  return answer;
}

const until = async (ok: () => boolean) => {
  expect(await pollUntil(ok, { timeoutMs: 10_000, intervalMs: 10 })).toBe(true);
};

describe('HTTP/2 recording keeps at most the per-mock bound of an exchange', () => {
  it('relays an upload past the bound whole, records no mock of it, warns; a small one is recorded as before', async () => {
    const up = await upstream(1536 * 1024);
    const rec = await recorder(up.port);
    // 2 MiB up, 1.5 MiB down: over the 1 MiB default both ways.
    const answer = await post(rec.port, Buffer.alloc(2 * 1024 * 1024, 0x61));
    expect(answer.length).toBe(1536 * 1024);
    expect(up.received).toEqual([2 * 1024 * 1024]);
    await until(() => rec.warnings.length + rec.mocks.length > 0);
    expect(rec.mocks.length).toBe(0);
    // Counted for the answer too, not only warned about (the answer said "no mocks were captured").
    expect(rec.dropped).toEqual(['over the 1048576-byte limit per HTTP/2 mock']);
    expect(rec.warnings[0]).toBe(`HTTP/2 POST /upload to 127.0.0.1:${up.port} was relayed but not recorded: ${2 * 1024 * 1024} bytes up and ${1536 * 1024} down, over the 1048576-byte limit per mock`);

    // Within the bound: recorded whole, as it always was.
    const small = await upstream(1000);
    const rec2 = await recorder(small.port);
    expect((await post(rec2.port, Buffer.alloc(1000, 0x61))).length).toBe(1000);
    await until(() => rec2.mocks.length > 0);
    expect(rec2.mocks[0]).toMatchObject({ kind: 'Http2', spec: { req: { body: 'a'.repeat(1000) }, resp: { body: 'b'.repeat(1000) } } });
    expect(rec2.warnings).toEqual([]);
  });

  it('gRPC: a message past the bound (its length prefix promising more) is relayed, not held or recorded', async () => {
    const up = await upstream(10, 'application/grpc');
    const rec = await recorder(up.port, 64 * 1024);
    // One 2 MiB message, and the head of one that says 0xFFFFFFFF bytes follow: held until the stream ended before.
    const body = Buffer.concat([frameMessages([{ compressed: false, data: Buffer.alloc(2 * 1024 * 1024, 1) }]), Buffer.from([0, 0xff, 0xff, 0xff, 0xff, 9, 9])]);
    expect((await post(rec.port, body, 'application/grpc')).length).toBe(10);
    expect(up.received).toEqual([body.length]);
    await until(() => rec.warnings.length + rec.mocks.length > 0);
    expect(rec.mocks.length).toBe(0);
    expect(rec.warnings[0]).toContain(`${body.length} bytes up and 10 down, over the 65536-byte limit per mock`);
  });
});
