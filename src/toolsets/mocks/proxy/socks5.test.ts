import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sleep } from '../../../core/wait.js';
import type { ProxyCredential } from './auth.js';
import { acceptSocks5, encodeReply, formatIpv6, greetingLength, requestLength, SocksReply, type SocksTarget } from './socks5.js';
import { connectLocal, listenLocal, readAll, readBytes } from './testing.js';

/** One server socket running acceptSocks5, and the raw client socket talking to it. */
async function handshake(timeoutMs = 2000, credential?: ProxyCredential) {
  let result!: Promise<SocksTarget>;
  let accepted!: net.Socket;
  const gotSocket = new Promise<void>((resolve) => {
    server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (s) => {
      accepted = s;
      s.on('error', () => {});
      result = acceptSocks5(s, { timeoutMs, ...(credential ? { credential } : {}) });
      result.catch(() => {});
      resolve();
    });
  });
  const port = await listenLocal(server!);
  const client = await connectLocal(port);
  client.on('error', () => {});
  await gotSocket;
  return { client, result, accepted: () => accepted };
}

let server: net.Server | undefined;
afterEach(() => {
  server?.close();
  server = undefined;
});

const GREETING = Buffer.from([5, 1, 0]);
const ipv4Request = (cmd = 1) => Buffer.from([5, cmd, 0, 1, 127, 0, 0, 1, 0x1f, 0x90]);

describe('SOCKS5 handshake over a real socket', () => {
  it('accepts an IPv4 CONNECT after choosing "no authentication"', async () => {
    const { client, result } = await handshake();
    client.write(GREETING);
    expect([...(await readBytes(client, 2))]).toEqual([5, 0]);
    client.write(ipv4Request());
    expect(await result).toEqual({ host: '127.0.0.1', port: 8080, addressType: 'ipv4' });
  });

  it('accepts a domain-name CONNECT (what proxychains sends with proxy_dns)', async () => {
    const { client, result } = await handshake();
    const name = Buffer.from('API.Example.test');
    client.write(Buffer.concat([GREETING, Buffer.from([5, 1, 0, 3, name.length]), name, Buffer.from([0x01, 0xbb])]));
    expect(await result).toEqual({ host: 'api.example.test', port: 443, addressType: 'domain' });
  });

  it('accepts an IPv6 CONNECT and formats the address per RFC 5952', async () => {
    const { client, result } = await handshake();
    const addr = Buffer.alloc(16);
    addr.writeUInt16BE(0x2001, 0);
    addr.writeUInt16BE(0x0db8, 2);
    addr[15] = 1;
    client.write(Buffer.concat([GREETING, Buffer.from([5, 1, 0, 4]), addr, Buffer.from([0, 80])]));
    expect(await result).toEqual({ host: '2001:db8::1', port: 80, addressType: 'ipv6' });
  });

  it('handles a handshake arriving one byte at a time', async () => {
    const { client, result } = await handshake();
    const bytes = Buffer.concat([GREETING, ipv4Request()]);
    for (const b of bytes) {
      client.write(Buffer.from([b]));
      await sleep(2); // a pause, not a wait: each byte its own write, apart in time
    }
    expect((await result).port).toBe(8080);
  });

  it('leaves bytes sent right after the request unread for the next reader', async () => {
    const { client, result, accepted } = await handshake();
    client.write(Buffer.concat([GREETING, ipv4Request(), Buffer.from('GET / HTTP/1.1\r\n\r\n')]));
    await result;
    const s = accepted();
    s.write(encodeReply(SocksReply.succeeded));
    const rest = await new Promise<Buffer>((resolve) => s.once('data', resolve));
    expect(rest.toString()).toBe('GET / HTTP/1.1\r\n\r\n');
  });

  it('closes on a wrong version without a reply', async () => {
    const { client, result } = await handshake();
    const received = readAll(client);
    client.write(Buffer.from([4, 1, 0, 80, 127, 0, 0, 1, 0]));
    await expect(result).rejects.toThrow(/not SOCKS5/);
    expect((await received).length).toBe(0);
  });

  it('answers 0xFF when the client offers no acceptable method', async () => {
    const { client, result } = await handshake();
    const received = readAll(client);
    client.write(Buffer.from([5, 1, 2])); // username/password only
    await expect(result).rejects.toThrow(/no acceptable method/);
    expect([...(await received)]).toEqual([5, 0xff]);
  });

  it.each([
    ['BIND', 2],
    ['UDP ASSOCIATE', 3],
  ])('answers 0x07 (command not supported) to %s', async (_name, cmd) => {
    const { client, result } = await handshake();
    const received = readAll(client);
    client.write(Buffer.concat([GREETING, ipv4Request(cmd)]));
    await expect(result).rejects.toThrow(/command \d is not supported/);
    expect([...(await received)]).toEqual([5, 0, ...encodeReply(SocksReply.commandNotSupported)]);
    expect(encodeReply(SocksReply.commandNotSupported)[1]).toBe(0x07);
  });

  it('answers 0x08 (address type not supported) to an unknown address type', async () => {
    const { client, result } = await handshake();
    const received = readAll(client);
    client.write(Buffer.concat([GREETING, Buffer.from([5, 1, 0, 9, 1, 2, 3, 4, 0, 80])]));
    await expect(result).rejects.toThrow(/address type 9/);
    expect([...(await received)]).toEqual([5, 0, 5, 0x08, 0, 1, 0, 0, 0, 0, 0, 0]);
  });

  it('fails at once (not at the timeout) when the client closes mid-request', async () => {
    const { client, result } = await handshake(10_000);
    client.write(GREETING);
    await readBytes(client, 2);
    client.end(Buffer.from([5, 1, 0, 3, 20, 0x61, 0x62]));
    const started = Date.now();
    await expect(result).rejects.toThrow(/closed mid-message/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('gives up on a client that stalls mid-greeting', async () => {
    const { client, result } = await handshake(200);
    const received = readAll(client);
    client.write(Buffer.from([5, 3, 0]));
    await expect(result).rejects.toMatchObject({ code: 'TIMEOUT' });
    await received; // the socket was closed
  });

  it('rejects a domain name with characters no DNS name has', async () => {
    const { client, result } = await handshake();
    const name = Buffer.from('evil\nname');
    client.write(Buffer.concat([GREETING, Buffer.from([5, 1, 0, 3, name.length]), name, Buffer.from([0, 80])]));
    await expect(result).rejects.toThrow(/invalid domain name/);
  });
});

describe('SOCKS5 message framing', () => {
  it('asks for more bytes instead of reading past the buffer', () => {
    expect(greetingLength(Buffer.from([5]))).toBeUndefined();
    expect(greetingLength(Buffer.from([5, 3]))).toBe(5);
    expect(requestLength(Buffer.from([5, 1, 0]))).toBeUndefined();
    expect(requestLength(Buffer.from([5, 1, 0, 3]))).toBeUndefined();
    expect(requestLength(Buffer.from([5, 1, 0, 3, 11]))).toBe(4 + 1 + 11 + 2);
    expect(requestLength(Buffer.from([5, 1, 0, 4]))).toBe(22);
  });

  it('never throws anything but a handshake error on random input', () => {
    for (let i = 0; i < 2000; i++) {
      const buf = Buffer.from(Array.from({ length: i % 24 }, () => Math.floor(Math.random() * 256)));
      for (const f of [greetingLength, requestLength]) {
        try {
          const n = f(buf);
          if (n !== undefined) expect(n).toBeGreaterThan(0);
        } catch (err) {
          expect((err as Error).name).toBe('SocksHandshakeError');
        }
      }
    }
  });

  it('formats IPv6 addresses in RFC 5952 form', () => {
    const v6 = (...groups: number[]) => {
      const b = Buffer.alloc(16);
      groups.forEach((g, i) => b.writeUInt16BE(g, i * 2));
      return formatIpv6(b);
    };
    expect(v6(0, 0, 0, 0, 0, 0, 0, 1)).toBe('::1');
    expect(v6(0, 0, 0, 0, 0, 0, 0, 0)).toBe('::');
    expect(v6(0xfe80, 0, 0, 0, 0x1, 0x2, 0x3, 0x4)).toBe('fe80::1:2:3:4');
    expect(v6(1, 0, 2, 0, 0, 3, 0, 0)).toBe('1:0:2::3:0:0');
    expect(v6(1, 2, 3, 4, 5, 6, 7, 8)).toBe('1:2:3:4:5:6:7:8');
    expect(v6(0, 0, 0, 0, 0, 0xffff, 0x7f00, 1)).toBe('::ffff:7f00:1');
  });
});

describe("SOCKS5 username/password (RFC 1929): the call's credential (attack 18u P6)", () => {
  const credential = { user: 'debugkit', password: 's3cret-Token_x' };
  const userPassword = (user: string, password: string) => Buffer.concat([Buffer.from([1, user.length]), Buffer.from(user), Buffer.from([password.length]), Buffer.from(password)]);

  it('chooses username/password among the methods offered, accepts the right one and reads the request after it', async () => {
    const { client, result } = await handshake(2000, credential);
    client.write(Buffer.from([5, 2, 0, 2]));
    expect([...(await readBytes(client, 2))]).toEqual([5, 2]);
    client.write(Buffer.concat([userPassword('debugkit', 's3cret-Token_x'), ipv4Request()]));
    expect([...(await readBytes(client, 2))]).toEqual([1, 0]);
    expect(await result).toEqual({ host: '127.0.0.1', port: 8080, addressType: 'ipv4' });
  });

  it('answers a wrong password with status 1 and closes, before reading any request', async () => {
    const { client, result } = await handshake(2000, credential);
    const received = readAll(client);
    client.write(Buffer.concat([Buffer.from([5, 1, 2]), userPassword('debugkit', 's3cret-Token_y'), ipv4Request()]));
    await expect(result).rejects.toMatchObject({ name: 'ProxyAuthError', message: "the SOCKS5 username/password is not the call's" });
    expect([...(await received)]).toEqual([5, 2, 1, 1]);
  });

  it('answers 0xFF to a client that offers only "no authentication", and a silent one fails as one without the credential', async () => {
    const { client, result } = await handshake(2000, credential);
    const received = readAll(client);
    client.write(Buffer.concat([GREETING, ipv4Request()]));
    await expect(result).rejects.toMatchObject({ name: 'ProxyAuthError', message: expect.stringMatching(/offers no username\/password/) });
    expect([...(await received)]).toEqual([5, 0xff]);
    const silent = await handshake(50, credential);
    await expect(silent.result).rejects.toMatchObject({ name: 'ProxyAuthError', message: expect.stringMatching(/^no credential before the handshake failed: SOCKS5 greeting: incomplete/) });
  });
});
