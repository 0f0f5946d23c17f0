import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { parseLimit, type Limit } from './limits.js';
import { parseScopes } from './scopes.js';
import type { KeyRecord } from './store.js';

/** Who a request acts as: a stored key, the single --api-key, or the local stdio user. */
export interface KeyContext {
  id: string;
  name: string;
  scopes: string[];
  rate: Limit | null;
  quota: Limit | null;
  /** When the key stops working (ISO 8601), if it has an end. */
  expires_at?: string | null;
  /** The stored key's hash, to look it up again (a call that waited is checked again before it runs); absent for keys not in the store. */
  hash?: string;
}

export const DEFAULT_RATE = '120/min';

export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function newKeySecret(): string {
  return `dk_${randomBytes(32).toString('base64url')}`;
}

export interface NewKeyOptions {
  name: string;
  scopes: string;
  /** "60/min", or "unlimited"; default DEFAULT_RATE. */
  rate?: string;
  quota?: string;
  /** "30d", "12h", or an ISO date. */
  expires?: string;
  now?: Date;
}

/** Validates the options and makes a key: the secret (shown once) and the record to store. */
export function makeKey(opts: NewKeyOptions): { secret: string; record: KeyRecord; hash: string } {
  const name = opts.name.trim();
  if (!/^[\w.@-]{1,64}$/.test(name)) throw new Error(`key name "${opts.name}" is not valid: use 1 to 64 letters, digits, ".", "@", "_" or "-"`);
  const now = opts.now ?? new Date();
  const rateText = opts.rate ?? DEFAULT_RATE;
  const secret = newKeySecret();
  const record: KeyRecord = {
    id: `key_${randomBytes(6).toString('hex')}`,
    name,
    prefix: secret.slice(0, 10),
    scopes: parseScopes(opts.scopes),
    rate: rateText === 'unlimited' ? null : parseLimit(rateText, '--rate'),
    quota: opts.quota && opts.quota !== 'unlimited' ? parseLimit(opts.quota, '--quota') : null,
    created_at: now.toISOString(),
    expires_at: opts.expires ? parseExpiry(opts.expires, now) : null,
    revoked_at: null,
  };
  return { secret, record, hash: hashKey(secret) };
}

export function parseExpiry(text: string, now: Date): string {
  const rel = /^(\d{1,6})\s*(d|h|m)$/i.exec(text.trim());
  if (rel) {
    const unit = { d: 86_400_000, h: 3_600_000, m: 60_000 }[rel[2]!.toLowerCase() as 'd' | 'h' | 'm'];
    return new Date(now.getTime() + Number(rel[1]) * unit).toISOString();
  }
  const at = Date.parse(text);
  if (Number.isNaN(at)) throw new Error(`--expires "${text}" is not valid: give a duration (30d, 12h, 90m) or a date (2027-01-31 or 2027-01-31T12:00:00Z)`);
  if (at <= now.getTime()) throw new Error(`--expires ${text} is in the past`);
  return new Date(at).toISOString();
}

/** The bearer token in an Authorization header, or undefined. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const match = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
  return match?.[1];
}

/** Constant-time comparison of two secrets of any length. */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}
