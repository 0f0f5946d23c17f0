import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import tls from 'node:tls';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from '../http/test-support.js';
import { BUNDLE_FILE, CA_CERT_FILE, CA_FILE, DebugkitCa, tlsEnv } from './ca.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

describe('DebugkitCa', () => {
  it('creates a private CA once and reuses it', async () => {
    const caDir = path.join(dir, 'ca');
    const first = await DebugkitCa.load(caDir);
    expect((await stat(caDir)).mode & 0o777).toBe(0o700);
    expect((await stat(path.join(caDir, CA_FILE))).mode & 0o777).toBe(0o600);
    const cert = new X509Certificate(first.certPem);
    expect(cert.ca).toBe(true);
    expect(await readFile(path.join(caDir, CA_CERT_FILE), 'utf8')).toBe(first.certPem);
    const again = await DebugkitCa.load(caDir);
    expect(again.certPem).toBe(first.certPem);
  });

  it('two processes creating it at once end up with one CA', async () => {
    const [a, b] = await Promise.all([DebugkitCa.load(dir), DebugkitCa.load(dir)]);
    expect(a.certPem).toBe(b.certPem);
  });

  it('regenerates a corrupt or exposed CA with a warning, never trusting it', async () => {
    const original = await DebugkitCa.load(dir);
    const warnings: string[] = [];
    await writeFile(path.join(dir, CA_FILE), 'garbage', { mode: 0o600 });
    const fresh = await DebugkitCa.load(dir, { warn: (m) => warnings.push(m) });
    expect(warnings[0]).toMatch(/unusable.*generating a new one/);
    expect(fresh.certPem).not.toBe(original.certPem);

    await chmod(path.join(dir, CA_FILE), 0o644);
    const exposed = await DebugkitCa.load(dir, { warn: (m) => warnings.push(m) });
    expect(warnings[1]).toMatch(/lets other users read the key/);
    expect(exposed.certPem).not.toBe(fresh.certPem);
    expect((await stat(path.join(dir, CA_FILE))).mode & 0o777).toBe(0o600);

    // A key that does not belong to the certificate.
    const other = await DebugkitCa.load(path.join(dir, 'other'));
    const text = await readFile(path.join(dir, CA_FILE), 'utf8');
    const otherKey = (await readFile(path.join(dir, 'other', CA_FILE), 'utf8')).split('-----BEGIN CERTIFICATE-----')[0]!;
    await writeFile(path.join(dir, CA_FILE), otherKey + text.slice(text.indexOf('-----BEGIN CERTIFICATE-----')), { mode: 0o600 });
    await DebugkitCa.load(dir, { warn: (m) => warnings.push(m) });
    expect(warnings[2]).toMatch(/key does not match/);
    expect(other.certPem).toBeTruthy();
  });

  it('replaces a CA that is about to expire', async () => {
    const now = Date.now();
    await DebugkitCa.load(dir, { now: () => new Date(now) });
    const warnings: string[] = [];
    await DebugkitCa.load(dir, { warn: (m) => warnings.push(m), now: () => new Date(now + 3645 * 86_400_000) });
    expect(warnings[0]).toMatch(/expires/);
  });

  it('issues leaves with a DNS or IP subject alternative name, cached', async () => {
    const ca = await DebugkitCa.load(dir);
    const caCert = new X509Certificate(ca.certPem);
    const dns = new X509Certificate(ca.leafFor('API.Example.com').cert);
    expect(dns.subjectAltName).toBe('DNS:api.example.com');
    expect(dns.checkHost('api.example.com')).toBe('api.example.com');
    expect(dns.checkIssued(caCert) && dns.verify(caCert.publicKey)).toBe(true);
    expect(dns.ca).toBe(false);
    const ip = new X509Certificate(ca.leafFor('10.1.2.3').cert);
    expect(ip.subjectAltName).toBe('IP Address:10.1.2.3');
    expect(ip.checkIP('10.1.2.3')).toBe('10.1.2.3');
    const v6 = new X509Certificate(ca.leafFor('[::1]').cert);
    expect(v6.checkIP('::1')).toBe('::1');
    expect(ca.leafFor('api.example.com')).toBe(ca.leafFor('api.example.com'));
  });

  it('leaves verify with openssl too', async () => {
    const ca = await DebugkitCa.load(dir);
    await writeFile(path.join(dir, 'leaf.pem'), ca.leafFor('localhost').cert);
    const r = spawnSync('openssl', ['verify', '-CAfile', path.join(dir, CA_CERT_FILE), '-purpose', 'sslserver', path.join(dir, 'leaf.pem')], { encoding: 'utf8' });
    expect(r.stdout.trim()).toMatch(/leaf.pem: OK$/);
  });

  it('writes a bundle of the system CAs plus its own, and the environment for it', async () => {
    const ca = await DebugkitCa.load(dir);
    await writeFile(path.join(dir, 'system.crt'), tls.rootCertificates[0]!);
    const paths = await ca.caBundle(path.join(dir, 'system.crt'));
    expect(paths.bundle).toBe(path.join(dir, BUNDLE_FILE));
    const bundle = await readFile(paths.bundle, 'utf8');
    expect(bundle.startsWith(tls.rootCertificates[0]!)).toBe(true);
    expect(bundle.endsWith(ca.certPem)).toBe(true);
    expect(tlsEnv(paths)).toEqual({
      SSL_CERT_FILE: paths.bundle,
      REQUESTS_CA_BUNDLE: paths.bundle,
      CURL_CA_BUNDLE: paths.bundle,
      NODE_EXTRA_CA_CERTS: path.join(dir, CA_CERT_FILE),
    });

    const warnings: string[] = [];
    const ca2 = await DebugkitCa.load(dir, { warn: (m) => warnings.push(m) });
    await ca2.caBundle(path.join(dir, 'missing.crt'));
    expect(warnings[0]).toMatch(/not readable.*built-in root CAs/);
    expect((await readFile(paths.bundle, 'utf8')).split('BEGIN CERTIFICATE').length).toBe(tls.rootCertificates.length + 2);
  });
});
