import type { Duplex } from 'node:stream';
import { DebugkitError } from '../../../core/errors.js';
import { ProxyAuthError, sameCredential, type ProxyCredential } from './auth.js';
import { readFrame } from './peek.js';

/**
 * SOCKS5 server side (RFC 1928), CONNECT only: "no authentication", or with a credential
 * username/password only (RFC 1929).
 */

export const SocksReply = {
  succeeded: 0x00,
  generalFailure: 0x01,
  notAllowed: 0x02,
  networkUnreachable: 0x03,
  hostUnreachable: 0x04,
  connectionRefused: 0x05,
  ttlExpired: 0x06,
  commandNotSupported: 0x07,
  addressTypeNotSupported: 0x08,
} as const;

const VERSION = 0x05;
const METHOD_NO_AUTH = 0x00;
const METHOD_USER_PASSWORD = 0x02;
const USER_PASSWORD_VERSION = 0x01;
const NO_ACCEPTABLE_METHOD = 0xff;
const CMD_CONNECT = 0x01;
const ATYP_IPV4 = 0x01;
const ATYP_DOMAIN = 0x03;
const ATYP_IPV6 = 0x04;

export type SocksAddressType = 'ipv4' | 'domain' | 'ipv6';

export interface SocksTarget {
  host: string;
  port: number;
  addressType: SocksAddressType;
}

/** A handshake the server refused; `reply` is the code it sent, when it could send one. */
export class SocksHandshakeError extends DebugkitError {
  override name = 'SocksHandshakeError';
  constructor(
    message: string,
    readonly reply?: number,
  ) {
    super('INVALID_ARGUMENT', message);
  }
}

/** Length of the client greeting (VER NMETHODS METHODS...), or undefined while incomplete. */
export function greetingLength(buf: Buffer): number | undefined {
  if (buf.length >= 1 && buf[0] !== VERSION) throw new SocksHandshakeError(`not SOCKS5: version byte ${buf[0]}`);
  if (buf.length < 2) return undefined;
  return 2 + buf[1]!;
}

/** Length of the RFC 1929 request (VER ULEN UNAME PLEN PASSWD), or undefined while incomplete. */
export function userPasswordLength(buf: Buffer): number | undefined {
  if (buf.length >= 1 && buf[0] !== USER_PASSWORD_VERSION) throw new ProxyAuthError(`username/password request with version byte ${buf[0]}`);
  if (buf.length < 2) return undefined;
  const ulen = buf[1]!;
  return buf.length < 3 + ulen ? undefined : 3 + ulen + buf[2 + ulen]!;
}

/** The username and password of a complete RFC 1929 request. */
export function parseUserPassword(req: Buffer): ProxyCredential {
  const ulen = req[1]!;
  return { user: req.toString('utf8', 2, 2 + ulen), password: req.toString('utf8', 3 + ulen) };
}

/** Length of the request (VER CMD RSV ATYP DST.ADDR DST.PORT), or undefined while incomplete. */
export function requestLength(buf: Buffer): number | undefined {
  if (buf.length >= 1 && buf[0] !== VERSION) {
    throw new SocksHandshakeError(`request with version byte ${buf[0]}`, SocksReply.generalFailure);
  }
  if (buf.length < 4) return undefined;
  switch (buf[3]) {
    case ATYP_IPV4:
      return 4 + 4 + 2;
    case ATYP_IPV6:
      return 4 + 16 + 2;
    case ATYP_DOMAIN:
      return buf.length < 5 ? undefined : 4 + 1 + buf[4]! + 2;
    default:
      throw new SocksHandshakeError(`address type ${buf[3]} is not supported`, SocksReply.addressTypeNotSupported);
  }
}

/** Decodes a complete request (its length already checked by `requestLength`). */
export function parseRequest(req: Buffer): SocksTarget {
  const atyp = req[3];
  const port = req.readUInt16BE(req.length - 2);
  let target: SocksTarget;
  if (atyp === ATYP_IPV4) target = { host: [...req.subarray(4, 8)].join('.'), port, addressType: 'ipv4' };
  else if (atyp === ATYP_IPV6) target = { host: formatIpv6(req.subarray(4, 20)), port, addressType: 'ipv6' };
  else target = { host: decodeDomain(req.subarray(5, req.length - 2)), port, addressType: 'domain' };
  if (req[1] !== CMD_CONNECT) {
    throw new SocksHandshakeError(`command ${req[1]} is not supported (CONNECT only)`, SocksReply.commandNotSupported);
  }
  return target;
}

/** VER REP RSV ATYP BND.ADDR BND.PORT; the bound address is meaningless for CONNECT, so 0.0.0.0:0. */
export function encodeReply(code: number): Buffer {
  return Buffer.from([VERSION, code, 0x00, ATYP_IPV4, 0, 0, 0, 0, 0, 0]);
}

export interface Socks5Options {
  /** Bound on the whole handshake: a client that stalls mid-message is dropped. */
  timeoutMs?: number;
  /** Required of the client (username/password, RFC 1929); without it "no authentication" is accepted. */
  credential?: ProxyCredential;
}

/**
 * Runs the server side of the handshake up to the CONNECT request and returns its target. It does
 * NOT send the final reply: the caller answers with `encodeReply` once it knows the outcome. On a
 * refused request the matching reply (0x07, 0x08, 0xFF method) is sent and the socket ended.
 * With a `credential`, anything that fails before the client showed it is a ProxyAuthError.
 */
export async function acceptSocks5(socket: Duplex, { timeoutMs = 5000, credential }: Socks5Options = {}): Promise<SocksTarget> {
  const deadline = Date.now() + timeoutMs;
  const remaining = () => Math.max(1, deadline - Date.now());
  let authenticated = !credential;
  try {
    const greeting = await readFrame(socket, greetingLength, { timeoutMs: remaining(), maxBytes: 2 + 255, what: 'SOCKS5 greeting' });
    const method = credential ? METHOD_USER_PASSWORD : METHOD_NO_AUTH;
    if (!greeting.subarray(2).includes(method)) {
      refuse(socket, Buffer.from([VERSION, NO_ACCEPTABLE_METHOD]));
      if (credential) throw new ProxyAuthError('the client offers no username/password authentication (SOCKS5, RFC 1929)');
      throw new SocksHandshakeError('the client offers no acceptable method (only "no authentication" is supported)');
    }
    socket.write(Buffer.from([VERSION, method]));
    if (credential) {
      const auth = await readFrame(socket, userPasswordLength, { timeoutMs: remaining(), maxBytes: 3 + 255 + 255, what: 'SOCKS5 username/password' });
      if (!sameCredential(parseUserPassword(auth), credential)) {
        refuse(socket, Buffer.from([USER_PASSWORD_VERSION, 0x01]));
        throw new ProxyAuthError("the SOCKS5 username/password is not the call's");
      }
      socket.write(Buffer.from([USER_PASSWORD_VERSION, 0x00]));
      authenticated = true;
    }
    const req = await readFrame(socket, requestLength, { timeoutMs: remaining(), maxBytes: 4 + 1 + 255 + 2, what: 'SOCKS5 request' });
    return parseRequest(req);
  } catch (err) {
    if (err instanceof SocksHandshakeError && err.reply !== undefined) refuse(socket, encodeReply(err.reply));
    else if (socket.writable) socket.destroy();
    // Whatever went wrong before the credential was shown, the connection did not show it.
    if (!authenticated && !(err instanceof ProxyAuthError)) throw new ProxyAuthError(`no credential before the handshake failed: ${err instanceof Error ? err.message : String(err)}`);
    throw err;
  }
}

/** Sends a final refusal and closes once it is flushed (the client may never close its side). */
function refuse(socket: Duplex, reply: Buffer): void {
  if (socket.writable) socket.end(reply, () => socket.destroy());
  else socket.destroy();
}

function decodeDomain(bytes: Buffer): string {
  const name = bytes.toString('latin1');
  // proxychains and curl send plain DNS names; anything else would be a confused or hostile client.
  if (!/^[A-Za-z0-9._-]{1,255}$/.test(name)) {
    throw new SocksHandshakeError(`invalid domain name ${JSON.stringify(name)}`, SocksReply.generalFailure);
  }
  return name.toLowerCase();
}

/** RFC 5952 text form: lowercase, longest run of zero groups (two or more) shortened to "::". */
export function formatIpv6(bytes: Buffer): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i));
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [bestStart, bestLen] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}
