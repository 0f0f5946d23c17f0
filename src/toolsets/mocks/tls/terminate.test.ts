import net from 'node:net';
import { Duplex } from 'node:stream';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpCandidate } from '../http/intercept.js';
import { closeServer, interceptingListener, listen, tempDir, type Closable } from '../http/test-support.js';
import { DebugkitCa } from './ca.js';
import { terminateTls, type TerminatedTls } from './terminate.js';

let ca: DebugkitCa;
let originCa: DebugkitCa;
let origin: tls.Server;
let originPort: number;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  const a = await tempDir();
  const b = await tempDir();
  cleanups.push(a.cleanup, b.cleanup);
  ca = await DebugkitCa.load(a.dir);
  originCa = await DebugkitCa.load(b.dir);
  // A TLS echo server with its own CA, reporting the ALPN protocol it agreed on.
  const leaf = originCa.leafFor('localhost');
  origin = tls.createServer({ key: leaf.key, cert: leaf.cert, ALPNProtocols: ['h2', 'http/1.1'] }, (s) => {
    s.write(`alpn=${s.alpnProtocol}\n`);
    s.pipe(s);
  });
  originPort = await listen(origin);
});
afterAll(async () => {
  await closeServer(origin);
  for (const c of cleanups) await c();
});

/** A listener that terminates every connection and reports the result (or the error). */
async function terminating(options: Parameters<typeof terminateTls>[1]): Promise<Closable & { results: Array<Promise<TerminatedTls>> }> {
  const results: Array<Promise<TerminatedTls>> = [];
  const listener = await interceptingListener({ host: '127.0.0.1', port: originPort }, (conn: HttpCandidate) => {
    const p = terminateTls(conn, options);
    results.push(p);
    return p.then(
      (t) => {
        t.client.on('error', () => {});
        if (t.upstream) {
          t.upstream.on('error', () => {});
          t.client.pipe(t.upstream).pipe(t.client);
        } else t.client.end(`name=${t.serverName} alpn=${t.client.alpnProtocol}\n`);
      },
      () => {},
    );
  });
  return Object.assign(listener, { results });
}

function connect(port: number, options: tls.ConnectionOptions): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, ...options }, () => resolve(s));
    s.on('error', reject);
  });
}

function readLine(s: tls.TLSSocket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    s.on('data', (d: Buffer) => {
      text += d.toString();
      if (text.includes('\n')) resolve(text.trim());
    });
  });
}

describe('terminateTls', () => {
  it('answers with a leaf for the SNI and only offers http/1.1', async () => {
    const l = await terminating({ ca });
    const s = await connect(l.port, { ca: ca.certPem, servername: 'api.example.test', ALPNProtocols: ['h2', 'http/1.1'] });
    expect(s.alpnProtocol).toBe('http/1.1');
    expect(s.getPeerX509Certificate()?.subjectAltName).toBe('DNS:api.example.test');
    expect(await readLine(s)).toBe('name=api.example.test alpn=http/1.1');
    s.destroy();
    await l.close();
  });

  it('uses the target IP when the client sends no SNI', async () => {
    const l = await terminating({ ca });
    const s = await connect(l.port, { ca: ca.certPem });
    expect(s.getPeerX509Certificate()?.subjectAltName).toBe('IP Address:127.0.0.1');
    expect(await readLine(s)).toBe('name=127.0.0.1 alpn=false');
    s.destroy();
    await l.close();
  });

  it('connects upstream with the same name, verified, speaking http/1.1', async () => {
    const l = await terminating({ ca, upstream: { ca: originCa.certPem } });
    const s = await connect(l.port, { ca: ca.certPem, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
    expect(await readLine(s)).toBe('alpn=http/1.1');
    s.write('ping\n');
    s.destroy();
    await l.close();
  });

  it('refuses an upstream whose certificate does not verify, failing the client handshake', async () => {
    const l = await terminating({ ca, upstream: {} }); // system CAs: the origin's test CA is unknown
    await expect(connect(l.port, { ca: ca.certPem, servername: 'localhost' })).rejects.toThrow();
    await expect(l.results[0]).rejects.toThrow(/certificate/i);
    const wrongName = await terminating({ ca, upstream: { ca: originCa.certPem } });
    await expect(connect(wrongName.port, { ca: ca.certPem, servername: 'other.test' })).rejects.toThrow();
    await expect(wrongName.results[0]).rejects.toThrow(/other\.test/);
    const insecure = await terminating({ ca, upstream: { insecure: true } });
    const s = await connect(insecure.port, { ca: ca.certPem, servername: 'localhost' });
    expect(await readLine(s)).toBe('alpn=http/1.1');
    s.destroy();
    await Promise.all([l.close(), wrongName.close(), insecure.close()]);
  });

  it('fails cleanly when the upstream is down', async () => {
    const probe = net.createServer();
    const port = await listen(probe);
    await closeServer(probe);
    const results: Array<Promise<TerminatedTls>> = [];
    const l = await interceptingListener({ host: '127.0.0.1', port }, (conn) => {
      const p = terminateTls(conn, { ca, upstream: { connectTimeoutMs: 2000 } });
      results.push(p);
      return p.catch(() => {});
    });
    await expect(connect(l.port, { ca: ca.certPem, servername: 'localhost' })).rejects.toThrow();
    await expect(results[0]).rejects.toThrow(/ECONNREFUSED|closed/);
    await l.close();
  });

  it('survives an upstream that resets while the program has not sent its ClientHello yet (the wait ends at its bound)', async () => {
    const leaf = originCa.leafFor('localhost');
    let reset = false;
    const resetting = tls.createServer({ key: leaf.key, cert: leaf.cert }, (s) => {
      s.on('error', () => {});
      setTimeout(() => ((reset = true), (s as tls.TLSSocket & { _parent?: net.Socket })._parent?.resetAndDestroy() ?? s.destroy()), 100);
    });
    const port = await listen(resetting);
    // The program's side: connected, silent.
    const client = new Duplex({
      read() {},
      write(_c, _e, done) {
        done();
      },
    });
    const started = Date.now();
    await expect(terminateTls({ target: { host: '127.0.0.1', port }, sni: 'localhost', client }, { ca, upstream: { ca: originCa.certPem }, handshakeTimeoutMs: 1500 })).rejects.toThrow();
    expect(reset).toBe(true);
    expect(Date.now() - started).toBeLessThan(10_000);
    await closeServer(resetting);
  });
});
