import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import type { UpstreamTlsOptions } from '../tls/terminate.js';
import { ALPN, upstreamSecureContext } from '../tls/terminate.js';
import type { Scheme } from './url.js';

/**
 * A replay miss sent to the real destination (`fallBackOnMiss`): the request as received (method,
 * target, raw headers, body) on a fresh connection, the answer streamed back. HTTPS is verified
 * like recording is (system CAs unless told otherwise).
 */

export interface FallbackTarget {
  target: { host: string; port: number };
  scheme: Scheme;
  serverName?: string;
  tls?: UpstreamTlsOptions;
}

/** Headers that describe one hop, not the message: Node sets its own. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);

/** Resolves when the answer is sent: undefined, or the error that made it a 502. */
/** The forwarded answer as received (for `onMiss: record`); `body` is undefined when it exceeded the limit. */
export interface ForwardedAnswer {
  statusCode: number;
  statusMessage: string;
  rawHeaders: string[];
  body: Buffer | undefined;
}

/** Answer bodies kept for recording a fallback (beyond this the exchange is passed through unrecorded). */
const KEEP_ANSWER_MAX = 16 * 1024 * 1024;

export function forwardRequest(req: http.IncomingMessage, body: Buffer, res: http.ServerResponse, to: FallbackTarget, onAnswer?: (answer: ForwardedAnswer) => void): Promise<string | undefined> {
  return new Promise((resolve) => {
    const dest = to.tls?.to ?? to.target;
    const name = to.serverName ?? to.target.host;
    const headers: Array<[string, string]> = [];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      if (!HOP.has(req.rawHeaders[i]!.toLowerCase()) && req.rawHeaders[i]!.toLowerCase() !== 'content-length') headers.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!]);
    }
    if (body.length > 0 || req.headers['content-length'] !== undefined) headers.push(['Content-Length', String(body.length)]);
    const common: http.RequestOptions = { host: dest.host, port: dest.port, method: req.method, path: req.url, headers: toObject(headers), agent: false };
    // ALPN and secureContext reach tls.connect through the agent, though the types leave them out.
    const secure: https.RequestOptions & { ALPNProtocols: string[]; secureContext: tls.SecureContext } = {
      ...common,
      servername: net.isIP(name) ? undefined : name,
      checkServerIdentity: (_host, cert) => (to.tls?.insecure ? undefined : tls.checkServerIdentity(name, cert)),
      rejectUnauthorized: !to.tls?.insecure,
      secureContext: upstreamSecureContext(to.tls?.ca),
      ALPNProtocols: ALPN,
    };
    const upstream = to.scheme === 'https' ? https.request(secure) : http.request(common);
    upstream.on('response', (answer) => {
      const out: string[] = [];
      for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2) {
        if (!HOP.has(answer.rawHeaders[i]!.toLowerCase())) out.push(answer.rawHeaders[i]!, answer.rawHeaders[i + 1]!);
      }
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, out);
      let kept: Buffer[] | undefined = onAnswer ? [] : undefined;
      let size = 0;
      if (kept) {
        answer.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > KEEP_ANSWER_MAX) kept = undefined;
          else kept?.push(chunk);
        });
      }
      answer.pipe(res);
      answer.on('end', () => {
        onAnswer?.({ statusCode: answer.statusCode ?? 502, statusMessage: answer.statusMessage ?? '', rawHeaders: answer.rawHeaders, body: kept ? Buffer.concat(kept) : undefined });
        resolve(undefined);
      });
      answer.on('error', (err) => {
        res.destroy(err);
        resolve(err.message);
      });
    });
    upstream.on('error', (err) => {
      const message = `debugkit: the request matched no mock and forwarding it to ${to.target.host}:${to.target.port} failed: ${err.message}`;
      if (res.headersSent) res.destroy(err);
      else {
        const text = `${JSON.stringify({ error: message }, null, 2)}\n`;
        res.writeHead(502, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), 'X-Debugkit-Mock': 'fallback-failed' });
        res.end(text);
      }
      resolve(message);
    });
    upstream.end(body);
  });
}

function toObject(pairs: Array<[string, string]>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of pairs) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}
