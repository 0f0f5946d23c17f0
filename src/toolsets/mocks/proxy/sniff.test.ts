import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientHelloInfo, clientHelloServerName, tlsRecordLength } from './client-hello.js';
import { detectProtocol, sniff } from './sniff.js';
import { connectLocal, listenLocal, requireCommand, runProgram, startFirstBytesServer, type FirstBytesServer } from './testing.js';

let capture: FirstBytesServer;
let pgCapture: FirstBytesServer;
beforeAll(async () => {
  capture = await startFirstBytesServer();
  // A Postgres server refusing SSL ('N') so libpq goes on to its StartupMessage.
  pgCapture = await startFirstBytesServer({ reply: Buffer.from('N') });
});
afterAll(async () => {
  await capture.close();
  await pgCapture.close();
});

/** The ClientHello node:tls really sends (the capture server never answers, so it stops there). */
async function realClientHello(servername?: string, ALPNProtocols?: string[]): Promise<Buffer> {
  const socket = tls.connect({ host: '127.0.0.1', port: capture.port, servername, rejectUnauthorized: false, ...(ALPNProtocols ? { ALPNProtocols } : {}) });
  socket.on('error', () => {});
  const hello = await capture.next();
  socket.destroy();
  return hello;
}

const PSQL = '/usr/bin/psql';

async function psqlFirstBytes(conninfo: string): Promise<Buffer> {
  requireCommand('psql', 'postgresql-client');
  const run = runProgram(PSQL, ['-w', '-c', 'select 1', `host=127.0.0.1 port=${pgCapture.port} user=u dbname=d connect_timeout=5 ${conninfo}`], {
    env: { ...process.env, PGPASSWORD: '', PGCONNECT_TIMEOUT: '5' },
  });
  const bytes = await pgCapture.next();
  await run;
  return bytes;
}

describe('protocol detection on real first bytes', () => {
  it('TLS: a real ClientHello, with the SNI server name extracted', async () => {
    const hello = await realClientHello('api.example.test');
    expect(tlsRecordLength(hello)).toBe(hello.length);
    expect(detectProtocol(hello, false)).toEqual({ protocol: 'tls', sni: 'api.example.test' });
  });

  it('TLS: the ALPN protocols a real ClientHello offers, in its order', async () => {
    const hello = await realClientHello('grpc.example.test', ['h2', 'http/1.1']);
    expect(detectProtocol(hello, false)).toEqual({ protocol: 'tls', sni: 'grpc.example.test', alpn: ['h2', 'http/1.1'] });
    expect(clientHelloInfo(hello.subarray(0, hello.length - 1)).alpn ?? ['h2', 'http/1.1']).toEqual(['h2', 'http/1.1']);
  });

  it('TLS without SNI (node sends none for an IP address)', async () => {
    const hello = await realClientHello();
    expect(detectProtocol(hello, false)).toEqual({ protocol: 'tls' });
  });

  it('a truncated ClientHello never throws: it waits, and at the end is TLS with or without SNI', async () => {
    const hello = await realClientHello('api.example.test');
    for (let n = 1; n < hello.length; n++) {
      const part = hello.subarray(0, n);
      expect(detectProtocol(part, false)).toBeUndefined();
      const final = detectProtocol(part, true)!;
      expect(['tls', 'generic']).toContain(final.protocol);
      if (final.sni) expect(final.sni).toBe('api.example.test');
      expect(() => clientHelloServerName(part)).not.toThrow();
    }
  });

  it('a ClientHello with corrupted lengths yields no SNI instead of an overread', async () => {
    const hello = await realClientHello('api.example.test');
    for (let i = 5; i < Math.min(hello.length, 200); i++) {
      const bad = Buffer.from(hello);
      bad[i] = 0xff;
      const sni = clientHelloServerName(bad);
      if (sni !== undefined) expect(sni).toMatch(/^[a-z0-9._-]+$/);
    }
  });

  it('Postgres: the StartupMessage of a real psql (protocol 3.0)', async () => {
    const bytes = await psqlFirstBytes('sslmode=disable gssencmode=disable');
    expect(bytes.readUInt32BE(4)).toBe(196608);
    expect(detectProtocol(bytes, false)).toEqual({ protocol: 'postgres' });
  });

  it('Postgres: the SSLRequest of a real psql', async () => {
    const bytes = await psqlFirstBytes('sslmode=require gssencmode=disable');
    expect([...bytes.subarray(0, 8)]).toEqual([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
    expect(detectProtocol(bytes.subarray(0, 8), false)).toEqual({ protocol: 'postgres' });
  });

  it('Postgres: GSSENCRequest and CancelRequest by their codes', () => {
    const gss = Buffer.alloc(8);
    gss.writeUInt32BE(8, 0);
    gss.writeUInt32BE(80877104, 4);
    const cancel = Buffer.alloc(16);
    cancel.writeUInt32BE(16, 0);
    cancel.writeUInt32BE(80877102, 4);
    expect(detectProtocol(gss, false)).toEqual({ protocol: 'postgres' });
    expect(detectProtocol(cancel, false)).toEqual({ protocol: 'postgres' });
    expect(detectProtocol(gss.subarray(0, 5), false)).toBeUndefined();
  });

  it('HTTP: a real request from node:http', async () => {
    const req = http.get({ host: '127.0.0.1', port: capture.port, path: '/x?y=1', headers: { host: 'api.example.test' } });
    req.on('error', () => {});
    const bytes = await capture.next();
    expect(bytes.toString('latin1')).toMatch(/^GET \/x\?y=1 HTTP\/1\.1\r\n/);
    expect(detectProtocol(bytes, false)).toEqual({ protocol: 'http' });
  });

  it('HTTP: waits for the end of the request line, and guesses from a prefix only at the end', () => {
    expect(detectProtocol(Buffer.from('GE'), false)).toBeUndefined();
    expect(detectProtocol(Buffer.from('GET /index.html HTT'), false)).toBeUndefined();
    expect(detectProtocol(Buffer.from('GET /index.html HTT'), true)).toEqual({ protocol: 'http' });
    expect(detectProtocol(Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), false)).toEqual({ protocol: 'h2' });
    // HTTP/2 with prior knowledge (h2c): its preface, waited for while incomplete.
    expect(detectProtocol(Buffer.from('PRI * HTTP/2.0\r\n'), false)).toBeUndefined();
    expect(detectProtocol(Buffer.from('GET / SPDY/3\r\n'), false)).toEqual({ protocol: 'generic' });
  });

  it('generic: anything else, decided from the first byte when it can be', () => {
    expect(detectProtocol(Buffer.from('*1\r\n$4\r\nPING\r\n'), false)).toEqual({ protocol: 'redis' });
    expect(detectProtocol(Buffer.from('PING\r\n'), false)).toEqual({ protocol: 'generic' });
    expect(detectProtocol(Buffer.from('hello'), false)).toEqual({ protocol: 'generic' });
    expect(detectProtocol(Buffer.from([0x16, 0x01]), false)).toEqual({ protocol: 'generic' });
    expect(detectProtocol(Buffer.alloc(0), true)).toEqual({ protocol: 'generic' });
  });
});

describe('sniff on a live connection', () => {
  /** A server socket whose client is `send`: sniff runs on the server side. */
  async function sniffWith(send: (client: net.Socket) => void, options?: Parameters<typeof sniff>[1], whileSniffing?: () => void) {
    let serverSide!: net.Socket;
    const accepted = new Promise<void>((resolve) => {
      srv = net.createServer({ pauseOnConnect: true, allowHalfOpen: true }, (s) => {
        serverSide = s;
        resolve();
      });
    });
    const port = await listenLocal(srv);
    const client = await connectLocal(port);
    await accepted;
    send(client);
    const started = Date.now();
    const sniffed = sniff(serverSide, options);
    whileSniffing?.();
    const result = await sniffed;
    return { result, elapsed: Date.now() - started, serverSide, client };
  }
  let srv: net.Server;
  // Async iteration, like pipe, also copes with a stream whose (empty) end was already emitted.
  const collect = async (s: net.Socket) => {
    const chunks: Buffer[] = [];
    for await (const chunk of s) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };

  it('leaves every sniffed byte readable, in order, including what came later', async () => {
    const { result, serverSide, client } = await sniffWith((c) => c.write('GET /a HTTP/1.1\r\nHost: x\r\n'));
    expect(result).toEqual({ protocol: 'http' });
    const all = collect(serverSide);
    client.end('\r\nbody');
    expect((await all).toString()).toBe('GET /a HTTP/1.1\r\nHost: x\r\n\r\nbody');
    srv.close();
  });

  it('a loop held past the idle wait still finds the bytes the client had sent (attack 18q: busy, it took speakers for silent clients)', async () => {
    // Other work holds the loop past the wait (a pause, not a wait: it is the load being simulated).
    const hold = () => {
      for (const until = performance.now() + 300; performance.now() < until;);
    };
    const { result, client } = await sniffWith((c) => c.write('GET /a HTTP/1.1\r\nHost: x\r\n\r\n'), { idleMs: 50 }, hold);
    expect(result).toEqual({ protocol: 'http' });
    client.destroy();
    srv.close();
  });

  it('a silent client (server speaks first) is generic after the idle wait', async () => {
    const { result, elapsed, client } = await sniffWith(() => {}, { idleMs: 150 });
    expect(result).toEqual({ protocol: 'generic' });
    expect(elapsed).toBeGreaterThanOrEqual(140);
    client.destroy();
    srv.close();
  });

  it('a fragment followed by EOF is classified at once and still readable', async () => {
    const { result, elapsed, serverSide } = await sniffWith((c) => c.end('GET /x HT'), { maxWaitMs: 5000 });
    expect(result).toEqual({ protocol: 'http' });
    expect(elapsed).toBeLessThan(1000);
    expect((await collect(serverSide)).toString()).toBe('GET /x HT');
    srv.close();
  });

  it('a client that closes without sending anything is generic', async () => {
    const { result, serverSide } = await sniffWith((c) => c.end());
    expect(result).toEqual({ protocol: 'generic' });
    expect((await collect(serverSide)).length).toBe(0);
    srv.close();
  });

  it('an incomplete first message is guessed after maxWaitMs', async () => {
    const { result, elapsed, client } = await sniffWith((c) => c.write(Buffer.from([0x16, 0x03, 0x01, 0x02])), { maxWaitMs: 200 });
    expect(result).toEqual({ protocol: 'tls' });
    expect(elapsed).toBeGreaterThanOrEqual(190);
    client.destroy();
    srv.close();
  });
});
