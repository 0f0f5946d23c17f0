import { createHash, createPublicKey, randomBytes, sign, type KeyObject } from 'node:crypto';
import net from 'node:net';

/**
 * X.509 v3 certificates built with node:crypto alone: a minimal DER writer for the handful of
 * structures RFC 5280 needs, ECDSA P-256 keys and signatures from OpenSSL through node:crypto.
 * No dependency, no child process, about a millisecond per certificate. Only what debugkit's CA
 * and its leaves need is written; node's X509Certificate and `openssl verify` check the result in
 * the tests.
 */

// ---------------------------------------------------------------- DER

function der(tag: number, ...parts: Buffer[]): Buffer {
  const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  const n = body.length;
  let len: Buffer;
  if (n < 0x80) len = Buffer.from([n]);
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    len = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), len, body]);
}

const seq = (...parts: Buffer[]) => der(0x30, ...parts);
const set = (...parts: Buffer[]) => der(0x31, ...parts);
const octets = (b: Buffer) => der(0x04, b);
const utf8 = (s: string) => der(0x0c, Buffer.from(s, 'utf8'));
const explicit = (n: number, inner: Buffer) => der(0xa0 | n, inner);
const TRUE = der(0x01, Buffer.from([0xff]));

/** A non-negative INTEGER from big-endian bytes (a leading 0 keeps a high first bit positive). */
function uint(bytes: Buffer): Buffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0 && bytes[i + 1]! < 0x80) i++;
  const b = bytes.subarray(i);
  return der(0x02, b[0]! >= 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b);
}

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out = [a! * 40 + b!];
  for (const v of rest) {
    const groups = [v & 0x7f];
    for (let x = Math.floor(v / 128); x > 0; x = Math.floor(x / 128)) groups.unshift(0x80 | (x & 0x7f));
    out.push(...groups);
  }
  return der(0x06, Buffer.from(out));
}

/** BIT STRING of named bits (bit 0 = most significant bit of the first byte), minimal length. */
function namedBits(bits: number[]): Buffer {
  const len = Math.floor(Math.max(...bits) / 8) + 1;
  const bytes = Buffer.alloc(len);
  for (const bit of bits) bytes[bit >> 3]! |= 0x80 >> (bit & 7);
  const last = bytes[len - 1]!;
  let unused = 0;
  while (unused < 7 && (last & (1 << unused)) === 0) unused++;
  return der(0x03, Buffer.from([unused]), bytes);
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280 4.1.2.5), whole seconds, UTC. */
function time(d: Date): Buffer {
  const iso = d.toISOString(); // 2026-01-02T03:04:05.678Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '') + 'Z';
  return d.getUTCFullYear() < 2050 ? der(0x17, Buffer.from(digits.slice(2), 'ascii')) : der(0x18, Buffer.from(digits, 'ascii'));
}

// ---------------------------------------------------------------- certificates

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  subjectAltName: '2.5.29.17',
  subjectKeyId: '2.5.29.14',
  authorityKeyId: '2.5.29.35',
};

export interface CertificateSpec {
  subjectCommonName: string;
  /** Signs the certificate; its own key for a self-signed one. */
  issuerKey: KeyObject;
  /** The issuer's common name (the subject's own when self-signed). */
  issuerCommonName: string;
  /** The public key the certificate certifies. */
  publicKey: KeyObject;
  notBefore: Date;
  notAfter: Date;
  /** A CA certificate (may sign others, path length 0) or a TLS server leaf. */
  ca: boolean;
  /** Leaf only: the host names and IP addresses it is valid for. */
  altNames?: string[];
}

const ORGANIZATION = 'debugkit';

function name(commonName: string): Buffer {
  const rdn = (type: string, value: string) => set(seq(oid(type), utf8(value)));
  return seq(rdn(OID.organization, ORGANIZATION), rdn(OID.commonName, commonName));
}

function extension(type: string, critical: boolean, value: Buffer): Buffer {
  return critical ? seq(oid(type), TRUE, octets(value)) : seq(oid(type), octets(value));
}

/** RFC 5280 4.2.1.2 allows any unique value; a SHA-1 of the whole SubjectPublicKeyInfo is one. */
export function keyIdentifier(key: KeyObject): Buffer {
  return createHash('sha1').update(spki(key)).digest();
}

/** SubjectPublicKeyInfo DER of a key (the public half when given a private key). */
function spki(key: KeyObject): Buffer {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  return pub.export({ type: 'spki', format: 'der' });
}

/** dNSName [2] or iPAddress [7], implicitly tagged. */
function generalName(host: string): Buffer {
  const family = net.isIP(host);
  if (family === 4) return der(0x87, Buffer.from(host.split('.').map(Number)));
  if (family === 6) return der(0x87, ipv6Bytes(host));
  return der(0x82, Buffer.from(host, 'ascii'));
}

function ipv6Bytes(ip: string): Buffer {
  const out = Buffer.alloc(16);
  let text = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number);
    text = text.slice(0, v4.index) + ((a! << 8) | b!).toString(16) + ':' + ((c! << 8) | d!).toString(16);
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

function extensions(spec: CertificateSpec): Buffer {
  const list = [
    extension(OID.basicConstraints, true, spec.ca ? seq(TRUE, uint(Buffer.from([0]))) : seq()),
    // CA: digitalSignature, keyCertSign, cRLSign. Leaf (EC key): digitalSignature only.
    extension(OID.keyUsage, true, namedBits(spec.ca ? [0, 5, 6] : [0])),
    extension(OID.subjectKeyId, false, octets(keyIdentifier(spec.publicKey))),
    extension(OID.authorityKeyId, false, seq(der(0x80, keyIdentifier(spec.issuerKey)))),
  ];
  if (!spec.ca) {
    list.push(extension(OID.extKeyUsage, false, seq(oid(OID.serverAuth))));
    list.push(extension(OID.subjectAltName, false, seq(...(spec.altNames ?? []).map(generalName))));
  }
  return explicit(3, seq(...list));
}

/** A signed certificate, PEM encoded. */
export function createCertificate(spec: CertificateSpec): string {
  const serial = randomBytes(16);
  serial[0]! &= 0x7f; // positive, and never all zero below
  serial[0]! |= 0x01;
  const algorithm = seq(oid(OID.ecdsaWithSha256));
  const tbs = seq(
    explicit(0, uint(Buffer.from([2]))),
    uint(serial),
    algorithm,
    name(spec.issuerCommonName),
    seq(time(spec.notBefore), time(spec.notAfter)),
    name(spec.subjectCommonName),
    spki(spec.publicKey),
    extensions(spec),
  );
  const signature = sign('sha256', tbs, { key: spec.issuerKey, dsaEncoding: 'der' });
  const cert = seq(tbs, algorithm, der(0x03, Buffer.from([0]), signature));
  return toPem(cert);
}

function toPem(derBytes: Buffer): string {
  const b64 = derBytes.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}
