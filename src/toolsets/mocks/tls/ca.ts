import { createPrivateKey, generateKeyPairSync, randomBytes, X509Certificate, type KeyObject } from 'node:crypto';
import { chmod, link, lstat, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { writeFileAtomic } from '../../../core/files.js';
import { createCertificate } from './x509.js';

/**
 * debugkit's own certificate authority: generated once per install, kept private in `caDir`
 * (directory 0700, key file 0600), reused while it is sound. Programs under debug trust it through
 * environment variables (see `tlsEnv`), so interception needs no change to the system trust store.
 *
 * Files in `caDir`:
 * - `ca.pem`: private key and certificate together (0600). One file, written in one atomic step,
 *   so two debugkit processes starting at once can never pair one's key with the other's cert.
 * - `ca.crt`: the certificate alone (NODE_EXTRA_CA_CERTS).
 * - `ca-bundle.crt`: the system CAs followed by debugkit's (SSL_CERT_FILE and friends).
 */

export const CA_FILE = 'ca.pem';
export const CA_CERT_FILE = 'ca.crt';
export const BUNDLE_FILE = 'ca-bundle.crt';
export const SYSTEM_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
const CA_NAME = 'debugkit local interception CA';
const DAY = 86_400_000;
const CA_LIFETIME_DAYS = 3650;
/** Below Apple's 398-day ceiling; leaves live in memory only, so a short life costs nothing. */
const LEAF_LIFETIME_DAYS = 365;
/** A CA this close to expiry is replaced rather than used for leaves that would outlive it. */
const CA_RENEW_DAYS = 30;
/** Leaves are cheap (~1 ms) but a program can reach many hosts: keep memory bounded. */
const LEAF_CACHE_MAX = 512;

export interface Leaf {
  /** PEM private key (PKCS#8). */
  key: string;
  /** PEM certificate for the name, signed by the CA. */
  cert: string;
}

export interface CaPaths {
  /** The debugkit CA certificate alone. */
  caCert: string;
  /** System CAs + the debugkit CA. */
  bundle: string;
}

export interface LoadCaOptions {
  /** Problems that did not stop loading (a CA regenerated, a system bundle missing). */
  warn?: (message: string) => void;
  now?: () => Date;
}

export class DebugkitCa {
  private readonly leaves = new Map<string, Leaf>();
  private readonly contexts = new Map<string, tls.SecureContext>();
  /** One key for every leaf (as mitmproxy does): key generation stays off the per-host path. */
  private readonly leafKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  private readonly leafKeyPem: string;

  private constructor(
    readonly caDir: string,
    private readonly key: KeyObject,
    /** PEM of the CA certificate. */
    readonly certPem: string,
    private readonly now: () => Date,
    private readonly warn: (message: string) => void,
  ) {
    this.leafKeyPem = this.leafKey.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  }

  /** Loads the CA from `caDir`, creating it (or replacing an unusable one, with a warning). */
  static async load(caDir: string, options: LoadCaOptions = {}): Promise<DebugkitCa> {
    const warn = options.warn ?? (() => {});
    const now = options.now ?? (() => new Date());
    await mkdir(caDir, { recursive: true, mode: 0o700 });
    await chmod(caDir, 0o700);
    const file = path.join(caDir, CA_FILE);
    let loaded = await readCa(file, now());
    if (loaded.kind === 'bad') {
      warn(`debugkit CA at ${file} is unusable (${loaded.reason}); generating a new one. Programs must trust the new CA.`);
      await writeFileAtomic(file, newCaPem(now()), { mode: 0o600 });
      loaded = await readCa(file, now());
    } else if (loaded.kind === 'missing') {
      await createExclusive(file, newCaPem(now()));
      loaded = await readCa(file, now());
    }
    if (loaded.kind !== 'ok') throw new Error(`debugkit CA at ${file} could not be created: ${loaded.kind === 'bad' ? loaded.reason : 'missing'}`);
    const ca = new DebugkitCa(caDir, loaded.key, loaded.certPem, now, warn);
    await writeIfChanged(path.join(caDir, CA_CERT_FILE), ca.certPem, 0o644);
    return ca;
  }

  get certPath(): string {
    return path.join(this.caDir, CA_CERT_FILE);
  }

  /** A server certificate for a host name or an IP address (DNS or IP SAN accordingly), cached. */
  leafFor(host: string): Leaf {
    const name = normalizeHost(host);
    const cached = this.leaves.get(name);
    if (cached) {
      // Map order is insertion order: re-inserting makes this the most recently used.
      this.leaves.delete(name);
      this.leaves.set(name, cached);
      return cached;
    }
    const now = this.now().getTime();
    const cert = createCertificate({
      subjectCommonName: name,
      issuerCommonName: CA_NAME,
      issuerKey: this.key,
      publicKey: this.leafKey.publicKey,
      notBefore: new Date(now - DAY), // clients with a clock a little behind still accept it
      notAfter: new Date(now + LEAF_LIFETIME_DAYS * DAY),
      ca: false,
      altNames: [name],
    });
    const leaf = { key: this.leafKeyPem, cert };
    this.leaves.set(name, leaf);
    if (this.leaves.size > LEAF_CACHE_MAX) this.evictOldest();
    return leaf;
  }

  /** A TLS server context for the name (building one costs more than the certificate itself). */
  secureContextFor(host: string): tls.SecureContext {
    const name = normalizeHost(host);
    let ctx = this.contexts.get(name);
    if (!ctx) {
      const leaf = this.leafFor(name);
      ctx = tls.createSecureContext({ key: leaf.key, cert: leaf.cert });
      this.contexts.set(name, ctx);
    }
    return ctx;
  }

  /**
   * Writes (atomically) `ca-bundle.crt` = the system CAs + the debugkit CA, for programs that take
   * one bundle file. Without a readable system bundle, Node's own root store stands in (with a
   * warning), so public sites stay reachable when the program calls them for real.
   */
  async caBundle(systemBundle = SYSTEM_BUNDLE): Promise<CaPaths> {
    let system: string;
    try {
      system = await readFile(systemBundle, 'utf8');
    } catch (err) {
      this.warn(`system CA bundle ${systemBundle} is not readable (${(err as Error).message}); using Node's built-in root CAs instead`);
      system = tls.rootCertificates.join('\n');
    }
    const bundle = path.join(this.caDir, BUNDLE_FILE);
    const sep = system.endsWith('\n') || system.length === 0 ? '' : '\n';
    await writeIfChanged(bundle, `${system}${sep}# debugkit local interception CA\n${this.certPem}`, 0o644);
    return { caCert: this.certPath, bundle };
  }

  private evictOldest(): void {
    const oldest = this.leaves.keys().next().value;
    if (oldest === undefined) return;
    this.leaves.delete(oldest);
    this.contexts.delete(oldest);
  }
}

/**
 * The variables that make common runtimes trust the debugkit CA: OpenSSL-based programs, Go,
 * curl and Python requests take a whole bundle (it replaces their default store, hence the system
 * CAs in it); Node adds NODE_EXTRA_CA_CERTS to its built-in roots.
 */
export function tlsEnv(paths: CaPaths): Record<string, string> {
  return {
    SSL_CERT_FILE: paths.bundle,
    REQUESTS_CA_BUNDLE: paths.bundle,
    CURL_CA_BUNDLE: paths.bundle,
    NODE_EXTRA_CA_CERTS: paths.caCert,
  };
}

/** Lower-case host names, IPv6 without brackets; IPs stay as written otherwise. */
function normalizeHost(host: string): string {
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return net.isIP(h) ? h : h.toLowerCase().replace(/\.$/, '');
}

type Loaded = { kind: 'ok'; key: KeyObject; certPem: string } | { kind: 'missing' } | { kind: 'bad'; reason: string };

/** Reads and checks the CA file; anything doubtful is 'bad' (never trusted silently). */
async function readCa(file: string, now: Date): Promise<Loaded> {
  let text: string;
  try {
    const st = await lstat(file);
    if (!st.isFile()) return { kind: 'bad', reason: 'not a regular file' };
    // A key others could read may have leaked: anyone with it can impersonate every site.
    if ((st.mode & 0o077) !== 0) return { kind: 'bad', reason: `its mode ${(st.mode & 0o777).toString(8)} lets other users read the key` };
    if (typeof process.getuid === 'function' && st.uid !== process.getuid()) return { kind: 'bad', reason: 'owned by another user' };
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    return { kind: 'bad', reason: (err as Error).message };
  }
  try {
    const key = createPrivateKey(text);
    const certPem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/.exec(text)?.[0];
    if (!certPem) return { kind: 'bad', reason: 'no certificate in it' };
    const cert = new X509Certificate(certPem);
    if (!cert.ca) return { kind: 'bad', reason: 'the certificate is not a CA' };
    if (!cert.checkPrivateKey(key)) return { kind: 'bad', reason: 'the key does not match the certificate' };
    if (!cert.verify(cert.publicKey)) return { kind: 'bad', reason: 'the self-signature does not verify' };
    if (new Date(cert.validTo).getTime() - now.getTime() < CA_RENEW_DAYS * DAY) return { kind: 'bad', reason: `it expires ${cert.validTo}` };
    if (new Date(cert.validFrom).getTime() > now.getTime() + DAY) return { kind: 'bad', reason: `it is not valid before ${cert.validFrom}` };
    return { kind: 'ok', key, certPem: certPem.endsWith('\n') ? certPem : `${certPem}\n` };
  } catch (err) {
    return { kind: 'bad', reason: `unreadable: ${(err as Error).message}` };
  }
}

function newCaPem(now: Date): string {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const cert = createCertificate({
    subjectCommonName: CA_NAME,
    issuerCommonName: CA_NAME,
    issuerKey: privateKey,
    publicKey,
    notBefore: new Date(now.getTime() - DAY),
    notAfter: new Date(now.getTime() + CA_LIFETIME_DAYS * DAY),
    ca: true,
  });
  return `${privateKey.export({ type: 'pkcs8', format: 'pem' }) as string}${cert}`;
}

/**
 * Creates `file` only if nobody else did meanwhile: write a temp file, then hard-link it into
 * place (link fails on an existing name, where rename would replace it). The loser reads the
 * winner's CA.
 */
async function createExclusive(file: string, data: string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await writeFile(tmp, data, { mode: 0o600, flag: 'wx' });
    await link(tmp, file).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  } finally {
    await rm(tmp, { force: true });
  }
}

async function writeIfChanged(file: string, data: string, mode: number): Promise<void> {
  const current = await readFile(file, 'utf8').catch(() => undefined);
  if (current !== data) await writeFileAtomic(file, data, { mode });
}
