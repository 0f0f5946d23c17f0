import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { IncomingMessage } from 'node:http';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BundleError } from '../errors.js';
import { GiB, formatBytes } from './extract.js';
import { DEFAULT_BUNDLE_URL_HOSTS, guardedGet, type UrlPolicy } from './fetch.js';
import { redact, vendorPortalSlug } from './urls.js';

export { VENDOR_PORTAL_URL, redact, vendorPortalSlug } from './urls.js';
export const REPLICATED_API_BASE = 'https://api.replicated.com';

export interface DownloadOptions {
  /** Replicated API token (SBCTL_TOKEN); see tokenFromEnv. */
  token?: string;
  onProgress?: (bytes: number, total: number | null) => void;
  signal?: AbortSignal;
  /** The whole download, resolution included. Default 10 minutes. */
  timeoutMs?: number;
  /** Largest download accepted. Default 4 GiB. */
  maxBytes?: number;
  /** Where the vendor API lives (tests point it at a local server). Default https://api.replicated.com. */
  replicatedApiBase?: string;
  /**
   * Hosts (and their subdomains) a direct http(s) download may send the token to, as
   * `Authorization: Bearer <token>`. Default: replicated.com only, so a URL from anywhere else
   * never receives the vendor token.
   */
  tokenHosts?: string[];
  /** Where downloads may go; default Replicated's hosts only (see fetch.ts). */
  policy?: UrlPolicy;
}

export interface DownloadResult {
  bytes: number;
  /** The URL the bytes came from, query string redacted (signed URLs carry credentials). */
  url: string;
}

export const DEFAULT_DOWNLOAD_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_DOWNLOAD_MAX_BYTES = 4 * GiB;

/** The token for the Replicated API: SBCTL_TOKEN, else REPLICATED_TOKEN. */
export function tokenFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.SBCTL_TOKEN || env.REPLICATED_TOKEN || undefined;
}

/**
 * Downloads a bundle to `dest` (written to a temporary file beside it, renamed when complete).
 * A Vendor Portal URL is first resolved to its signed download URL the way the reference server
 * does it: `GET <api>/vendor/v3/supportbundle/<slug>` with `Authorization: <token>`, whose JSON
 * answer carries `bundle.signedUri` (older answers: `signedUri`); the signed URL is fetched
 * without the token.
 *
 * Errors: AuthenticationError (no token for the portal, 401, 403), BundleNotFoundError (404),
 * ApiError (other HTTP errors, network, timeout, cancel), StorageError (over maxBytes, disk).
 */
export async function download(url: string, dest: string, options: DownloadOptions = {}): Promise<DownloadResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_DOWNLOAD_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? DEFAULT_DOWNLOAD_MAX_BYTES;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? anySignal(options.signal, timeout) : timeout;
  const failed = (what: string, err: unknown): BundleError => {
    if (timeout.aborted) {
      const after = timeoutMs < 1000 ? `${timeoutMs}ms` : `${Math.round(timeoutMs / 1000)}s`;
      return new BundleError('ApiError', `${what}: timed out after ${after}`, { cause: err });
    }
    if (options.signal?.aborted) return new BundleError('ApiError', `${what}: cancelled`, { cause: err });
    if (err instanceof BundleError) return err;
    return new BundleError('ApiError', `${what}: ${causeMessage(err)}`, { cause: err });
  };

  let target: URL;
  let headers: Record<string, string> = {};
  let policy = options.policy ?? { hosts: DEFAULT_BUNDLE_URL_HOSTS };
  const slug = vendorPortalSlug(url);
  if (slug !== null) {
    target = await resolveVendorPortal(slug, { ...options, policy }, signal, failed);
    // The signed URL comes from the authenticated Replicated API: its host (object storage) is
    // allowed for this download, but never at a private address unless the operator listed it.
    policy = { ...policy, implicitHosts: [...(policy.implicitHosts ?? []), target.host] };
  } else {
    try {
      target = new URL(url);
    } catch (err) {
      throw new BundleError('BundleNotFoundError', `Bundle source is not a valid URL: ${url}`, { cause: err });
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') {
      throw new BundleError('BundleNotFoundError', `Bundle URL must be http(s): ${url}`);
    }
    if (options.token && hostAllowed(target.hostname, options.tokenHosts ?? ['replicated.com'])) {
      headers = { Authorization: `Bearer ${options.token}` };
    }
  }

  const shown = redact(target);
  const what = `Failed to download bundle from ${shown}`;
  let res: IncomingMessage;
  try {
    ({ res } = await guardedGet(target, policy, { headers, signal }));
  } catch (err) {
    throw failed(what, err);
  }
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 299) {
    res.resume();
    throw httpError(status, res.statusMessage ?? '', what, slug ?? shown);
  }
  const lengthHeader = res.headers['content-length'] ?? null;
  const total = lengthHeader !== null && /^\d+$/.test(lengthHeader) ? Number(lengthHeader) : null;
  if (total !== null && total > maxBytes) {
    res.destroy();
    throw tooLarge(maxBytes, total);
  }

  const tmp = path.join(path.dirname(dest), `.${path.basename(dest)}.part-${process.pid}-${Date.now()}`);
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > maxBytes) return done(tooLarge(maxBytes, null));
      options.onProgress?.(bytes, total);
      done(null, chunk);
    },
  });
  try {
    await pipeline(res, counter, createWriteStream(tmp, { flags: 'wx', mode: 0o600 }), { signal });
    if (total !== null && bytes !== total) throw new BundleError('ApiError', `${what}: the connection closed after ${bytes} of ${total} bytes`);
    await rename(tmp, dest);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => {});
    const e = err as NodeJS.ErrnoException;
    if (e?.code === 'ENOSPC' || e?.code === 'EDQUOT') throw new BundleError('StorageError', `Insufficient disk space for the bundle download (${e.message})`, { cause: err });
    throw failed(what, err);
  }
  return { bytes, url: shown };
}

async function resolveVendorPortal(slug: string, options: DownloadOptions, signal: AbortSignal, failed: (what: string, err: unknown) => BundleError): Promise<URL> {
  if (!options.token) {
    throw new BundleError('AuthenticationError', 'Authentication failed: Invalid or missing token (set SBCTL_TOKEN to a Replicated API token to download bundles from the Vendor Portal)');
  }
  const base = (options.replicatedApiBase ?? REPLICATED_API_BASE).replace(/\/+$/, '');
  const api = `${base}/vendor/v3/supportbundle/${encodeURIComponent(slug)}`;
  const what = 'Failed to connect to support bundle service API';
  let res: IncomingMessage;
  let body: string;
  try {
    ({ res } = await guardedGet(new URL(api), options.policy ?? { hosts: DEFAULT_BUNDLE_URL_HOSTS }, {
      headers: { Authorization: options.token, 'Content-Type': 'application/json', Accept: 'application/json' },
      signal,
    }));
    body = await readSmall(res, 1024 * 1024);
  } catch (err) {
    throw failed(what, err);
  }
  const ok = (res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) <= 299;
  if (!ok) {
    if (res.statusCode === 404) throw new BundleError('BundleNotFoundError', `Bundle with ID '${slug}' not found on the Replicated Vendor Portal`);
    throw httpError(res.statusCode ?? 0, res.statusMessage ?? '', `Failed to get the download URL of bundle '${slug}' from the Replicated API${body ? ` (${body.slice(0, 200)})` : ''}`, slug);
  }
  let data: unknown;
  try {
    data = JSON.parse(body);
  } catch (err) {
    throw failed('The Replicated API answered with invalid JSON', err);
  }
  const record = (v: unknown): Record<string, unknown> | null => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null);
  const top = record(data);
  const signed = record(top?.bundle)?.signedUri ?? top?.signedUri;
  if (typeof signed !== 'string' || signed === '') {
    throw new BundleError('ApiError', `The Replicated API answer for bundle '${slug}' has no signedUri to download it from`);
  }
  try {
    const u = new URL(signed);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error(`unsupported protocol ${u.protocol}`);
    return u;
  } catch (err) {
    throw new BundleError('ApiError', `The Replicated API gave an invalid download URL for bundle '${slug}'`, { cause: err });
  }
}

function httpError(status: number, statusText: string, what: string, id: string): BundleError {
  if (status === 401 || status === 403) {
    return new BundleError('AuthenticationError', `Authentication failed: Invalid or missing token (HTTP ${status}${statusText ? ` ${statusText}` : ''}); check SBCTL_TOKEN`);
  }
  if (status === 404) return new BundleError('BundleNotFoundError', `Bundle with ID '${id}' not found (HTTP 404)`);
  return new BundleError('ApiError', `${what}: HTTP ${status}${statusText ? ` ${statusText}` : ''}`);
}

function tooLarge(maxBytes: number, total: number | null): BundleError {
  return new BundleError('StorageError', `Bundle download ${total !== null ? `is ${formatBytes(total)}, ` : ''}over the size limit of ${formatBytes(maxBytes)}`);
}

/** AbortSignal.any, which Node only has from 20.3. */
function anySignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  if (typeof AbortSignal.any === 'function') return AbortSignal.any([a, b]);
  const ac = new AbortController();
  for (const s of [a, b]) {
    if (s.aborted) ac.abort(s.reason);
    else s.addEventListener('abort', () => ac.abort(s.reason), { once: true });
  }
  return ac.signal;
}

function hostAllowed(host: string, allowed: string[]): boolean {
  const h = host.toLowerCase();
  return allowed.some((a) => h === a.toLowerCase() || h.endsWith(`.${a.toLowerCase()}`));
}

function causeMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? err.cause.message : '';
    return cause && !err.message.includes(cause) ? `${err.message} (${cause})` : err.message;
  }
  return String(err);
}

/** A small body (an API answer), at most `max` bytes. */
async function readSmall(res: IncomingMessage, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) {
      res.destroy();
      throw new Error(`the answer is over ${max} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
