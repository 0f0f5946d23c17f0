import http from 'node:http';
import type { Duplex } from 'node:stream';
import { bodyBytes, buildHttpMock } from './keploy.js';
import type { HttpMock } from '../keploy/types.js';
import type { UpstreamTlsOptions } from '../tls/terminate.js';
import { StreamBridge } from './bridge.js';
import { MAX_PENDING } from './recorder.js';
import { forwardRequest, type ForwardedAnswer } from './fallback.js';
import type { HttpMatcher, MatchHow, MatchRequest, MatchResult } from './matcher.js';
import type { KeptBytes } from '../kept.js';
import { DEFAULT_MAX_BODY, FALLBACK_MAX_BODY, readRequestBody, type ReadBody } from './message.js';
import type { Header } from './wire.js';
import { encodeForClient } from './encoding.js';
import { authorityOf, type Scheme } from './url.js';

/**
 * Serves intercepted connections from recorded mocks, as an HTTP/1.1 server (node:http on the
 * connection; no upstream is involved). A match is answered with the recorded status, headers and
 * body; `Content-Length` is recomputed and the framing headers (Transfer-Encoding, Connection) are
 * Node's own. A miss is answered 502 with a JSON body naming the closest mock and how it differs,
 * or, with `fallBackOnMiss`, forwarded to the real destination.
 *
 * Requests are matched one at a time in the order they arrived, in slices of SLICE_MS (matcher.ts): once a
 * turn of the event loop has been used that long, the match (or the next one) waits for the next
 * turn, so a burst of pipelined requests against a big set does not hold the server's other clients.
 */

export interface ReplayCounters {
  replayed: number;
  missed: number;
  fellBack: number;
  /** Misses answered by the real destination and kept as new mocks (`onMiss: record`). */
  recorded: number;
}

/** What a miss does: answer 502 (fail), go to the real destination (passthrough), or go there and keep the exchange as a new mock (record). */
export type OnMiss = 'fail' | 'passthrough' | 'record';

export interface ReplayEvent {
  kind: 'replayed' | 'missed' | 'fellBack' | 'recorded';
  method: string;
  url: string;
  /** The mock that answered (replayed) or the closest one (missed). */
  mock?: string;
  /** Replayed: how it matched ('size': by the request body's size only, not verified), and whether it had answered before (a repeat beyond the recording). */
  how?: MatchHow;
  reused?: boolean;
  /** Replayed by size: the request body's size. */
  bodySize?: number;
  differences?: string[];
  /** A fallback that failed, a recorded body that cannot be replayed. */
  error?: string;
  /** fellBack: why `mock`, which matched, could not answer (its response body was not kept). */
  reason?: string;
  /** `recorded`: the new mock (already added to the matcher). */
  recorded?: HttpMock;
}

export interface ReplayerOptions {
  matcher: HttpMatcher;
  /** Same as `onMiss: 'passthrough'` (kept for the contract's `fallBackOnMiss`). */
  fallBackOnMiss?: boolean;
  /** Default `fail` (`passthrough` with `fallBackOnMiss`). */
  onMiss?: OnMiss;
  /** TLS for fallback requests to https targets (verification, test CAs, redirection). */
  upstream?: UpstreamTlsOptions;
  /** Request body bytes kept for matching (default 1 MiB; beyond it the size and the SHA-256 of the whole body are compared). */
  maxBodyBytes?: number;
  /** The replay's budget for request bodies being read, shared by every connection and stream (kept.ts); past it a body is counted and hashed, not kept. */
  kept?: KeptBytes;
  onEvent?: (event: ReplayEvent) => void;
  /**
   * `onMiss: record`: whether a mock recorded on a miss is kept (default yes). Only a kept one is
   * added to the matcher (and reported `recorded`); past what a set may hold a repeat is relayed again.
   */
  keep?: (mock: HttpMock) => boolean;
  /** A miss's answer waits for this, once the miss is said (ReplayersOptions.holdMiss). */
  holdMiss?: () => Promise<void>;
}

export interface ServedConnection {
  target: { host: string; port: number };
  /** Plaintext: a TLS-terminated socket for HTTPS. */
  client: Duplex;
}

export interface ServeOptions {
  scheme: Scheme;
  /** TLS name for fallback requests (the SNI the program sent). */
  serverName?: string;
}

const NOT_REPLAYED = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'content-length', 'trailer', 'upgrade', 'te']);

/** A request whose body is being read on a connection: what it asked, and whether its cut was counted (by `refused`). */
interface Reading {
  req: http.IncomingMessage;
  method: string;
  url: string;
  counted: boolean;
}

export class HttpReplayer {
  readonly counters: ReplayCounters = { replayed: 0, missed: 0, fellBack: 0, recorded: 0 };
  private readonly onMiss: OnMiss;
  /** By connection (node:http's socket, the bridge): the request whose body is being read there. */
  private readonly reading = new WeakMap<Duplex, Reading>();

  constructor(private readonly options: ReplayerOptions) {
    this.onMiss = options.onMiss ?? (options.fallBackOnMiss ? 'passthrough' : 'fail');
  }

  /** Answers the connection's requests until it closes. */
  serve(conn: ServedConnection, serveOptions: ServeOptions): Promise<void> {
    // Lenient parsing: a header value with a control character or DEL, or a folded header line, is
    // read as the recorder read it (wire.ts), and matched, instead of being refused. The server only
    // ever reads the program's own connection: there is no other parser in between to disagree with.
    // Pipelined requests are answered in turn: past MAX_PENDING not answered yet, the connection is read no
    // further until some are (100,000 GETs in one write to a program that read nothing held 615 MB).
    let unanswered = 0;
    const server = http.createServer({ insecureHTTPParser: true }, (req, res) => {
      if (++unanswered >= MAX_PENDING) stream.hold(true);
      res.once('close', () => {
        if (--unanswered < MAX_PENDING) stream.hold(false);
      });
      this.handle(req, res, conn, serveOptions).catch((err: Error) => {
        if (res.headersSent) return res.destroy(err);
        try {
          res.statusMessage = '';
          sendJson(res, 502, { error: `debugkit replay failed: ${err.message}` });
        } catch {
          res.destroy(err);
        }
      });
    });
    // A client that half-closes after its pipelined requests still gets every answer (node:http's
    // own field: by default it ends the connection at once, dropping the requests still being matched).
    (server as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
    // What node:http refuses even so (a blank before a header's colon) it would answer 400 itself,
    // unseen by the report: a miss, counted and said, answered 400 here.
    server.on('clientError', (err: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex) => void this.refused(err, socket));
    const stream = new StreamBridge(conn.client);
    stream.on('error', () => {}); // a client reset ends the connection; nothing to report
    server.emit('connection', stream);
    return new Promise((resolve) => (stream.destroyed ? resolve() : stream.once('close', () => resolve())));
  }

  /**
   * A request node:http could not parse, or that the connection's end or reset cut: a miss, answered
   * 400 when the connection can still take it. A reset between requests is none; a request whose body
   * was being read is counted here only when the parser said so (the end came inside it), else by
   * `handle`, once.
   */
  private async refused(err: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex): Promise<void> {
    // The request whose body is being read here, when the connection ended or failed inside it (pipelined, a later one may have).
    const last = this.reading.get(socket);
    const reading = last && !last.req.complete ? last : undefined;
    let code = err.code;
    if (!code?.startsWith('HPE_')) {
      // A reset: node:http's parser says whether it came inside a request's head (as it does for an end, socketOnEnd).
      const parser = (socket as { parser?: { finish?: () => unknown } }).parser;
      const inside = reading ? undefined : parser?.finish?.();
      socket.destroy();
      if (!(inside instanceof Error)) return;
      code = `cut: ${code ?? err.message}`;
    }
    const line = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([\x21-\x7e]{1,200}) HTTP\/1\.[01]\r?\n/.exec(err.rawPacket?.toString('latin1', 0, 300) ?? '');
    const cut = code.startsWith('cut: ');
    const [method, url] = reading ? [reading.method, reading.url] : line ? [line[1]!, line[2]!] : ['a request', cut ? '(its head not whole)' : '(its request line not read)'];
    const error = cut
      ? `the connection was cut (${code.slice(5)}) inside the request, before its head ended (a request sent and never answered)`
      : code === 'HPE_INVALID_EOF_STATE'
        ? `the program ended its side of the connection inside the request (its ${reading ? 'body' : 'head'} not whole) and debugkit answered 400 Bad Request`
        : `debugkit's HTTP server could not parse the request (${code}: ${err.message}) and answered 400 Bad Request`;
    if (reading) reading.counted = true;
    this.counters.missed++;
    this.options.onEvent?.({ kind: 'missed', method, url, error });
    if (!socket.writable) return void socket.destroy();
    await this.options.holdMiss?.();
    const text = `${JSON.stringify({ error: `debugkit: ${error}` }, null, 2)}\n`;
    socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nX-Debugkit-Mock: miss\r\nConnection: close\r\n\r\n${text}`);
  }

  /** The request matched after those asked before it (HttpMatcher.matchInTurn). */
  private match(request: MatchRequest): Promise<MatchResult> {
    return this.options.matcher.matchInTurn(request);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse, conn: ServedConnection, opts: ServeOptions): Promise<void> {
    const keepAll = this.onMiss !== 'fail';
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const reading: Reading = { req, method, url, counted: false };
    this.reading.set(req.socket, reading);
    let body: ReadBody;
    try {
      body = await readRequestBody(req, keepAll ? FALLBACK_MAX_BODY : (this.options.maxBodyBytes ?? DEFAULT_MAX_BODY), this.options.kept);
    } catch (err) {
      // Cut by a reset or the connection's close (as HTTP/2's are): sent and never answered, a miss, unless `refused` counted it.
      if (!reading.counted) {
        this.counters.missed++;
        this.options.onEvent?.({ kind: 'missed', method, url, error: `${(err as Error).message} (a request sent and never answered)` });
      }
      throw err;
    } finally {
      if (this.reading.get(req.socket) === reading) this.reading.delete(req.socket);
    }
    const said = { counted: false };
    try {
      await this.answer(req, res, conn, opts, body, said);
    } catch (err) {
      // Whatever kept the request from being answered from the set (the program gets a 502 from
      // serve's catch) is a miss, counted and said like any other: strict fails, stopOnMiss stops.
      if (!said.counted) {
        this.counters.missed++;
        said.counted = true;
        this.options.onEvent?.({ kind: 'missed', method, url, error: `debugkit could not answer it from the set: ${(err as Error).message}` });
        if (!res.headersSent) await this.options.holdMiss?.();
      }
      throw err;
    } finally {
      body.release();
    }
  }

  /** Answers a request read in full (or up to its limit); `said.counted` once it is counted (replayed, missed, fell back or recorded). */
  private async answer(req: http.IncomingMessage, res: http.ServerResponse, conn: ServedConnection, opts: ServeOptions, body: ReadBody, said: { counted: boolean }): Promise<void> {
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const request: MatchRequest = {
      method,
      url,
      scheme: opts.scheme,
      host: req.headers.host ?? authorityOf(opts.scheme, conn.target),
      headers: pairs(req.rawHeaders),
      body: body.bytes,
      bodyLength: body.length,
      ...(body.sha256 !== undefined ? { bodySha256: body.sha256 } : {}),
    };
    const result = await this.match(request);
    if (!result.miss && result.mock.spec.resp.extra?.body_skipped !== true) {
      const mock = result.mock.name;
      let unsent: string[];
      try {
        unsent = await sendMock(res, result.mock, method, req.headers['accept-encoding']);
      } catch (err) {
        // The program gets a 502 from debugkit (serve's catch): a failure, not a replay.
        this.counters.missed++;
        said.counted = true;
        this.options.onEvent?.({ kind: 'missed', method, url, mock, error: `the recorded response could not be sent: ${(err as Error).message}` });
        throw err;
      }
      if (unsent.length === 0) {
        this.counters.replayed++;
        said.counted = true;
        this.options.onEvent?.({ kind: 'replayed', method, url, mock, how: result.how, reused: result.reused, ...(result.how === 'size' ? { bodySize: body.length } : {}) });
        return;
      }
      // Answered, but not as recorded: counted (and said) as a miss, so the answer does not claim an exact replay.
      this.counters.missed++;
      said.counted = true;
      const error = `the recorded response was sent without its ${unsent.join(', ')}: ${unsent.length > 1 ? 'values' : 'a value'} holding a control character (other than tab), which Node's HTTP server refuses to send`;
      this.options.onEvent?.({ kind: 'missed', method, url, mock, error });
      return;
    }
    const why = result.miss
      ? { error: 'debugkit: no recorded mock matches this request', closest: result.closest }
      : { error: `debugkit: the recorded response body was not kept (${String(result.mock.spec.resp.extra?.body_size)} bytes, over the recording limit)`, mock: result.mock.name };
    if (this.onMiss !== 'fail' && body.length === body.bytes.length) {
      const sent = new Date();
      let recorded: HttpMock | undefined;
      const keep =
        this.onMiss === 'record' && result.miss
          ? (answer: ForwardedAnswer) => {
              if (!answer.body) return;
              recorded = buildHttpMock({
                method,
                url,
                host: request.host,
                httpVersion: req.httpVersion,
                requestHeaders: req.rawHeaders,
                requestBody: body.bytes,
                statusCode: answer.statusCode,
                responseHeaders: answer.rawHeaders,
                responseBody: answer.body,
                requestTime: sent,
                responseTime: new Date(),
              });
            }
          : undefined;
      const error = await forwardRequest(req, body.bytes, res, { target: conn.target, scheme: opts.scheme, serverName: opts.serverName, tls: this.options.upstream }, keep);
      // A call recorded past what the set may hold was relayed and not kept: it fell back (counted), as a plain relay does.
      if (recorded && !error && this.options.keep?.(recorded) !== false) {
        this.options.matcher.add(recorded);
        this.counters.recorded++;
        said.counted = true;
        this.options.onEvent?.({ kind: 'recorded', method, url, recorded });
        return;
      }
      this.counters.fellBack++;
      said.counted = true;
      // Said like a miss (why the set did not answer), so that each call counted in `missed` has its line.
      const unanswered = result.miss
        ? { ...(result.closest ? { mock: result.closest.name, differences: result.closest.differences } : {}) }
        : { mock: result.mock.name, reason: why.error.replace(/^debugkit: /, '') };
      this.options.onEvent?.({ kind: 'fellBack', method, url, ...unanswered, ...(error ? { error } : {}) });
      return;
    }
    this.counters.missed++;
    said.counted = true;
    const closest = result.miss ? result.closest : undefined;
    this.options.onEvent?.({ kind: 'missed', method, url, ...(closest ? { mock: closest.name, differences: closest.differences } : {}), ...(result.miss ? {} : { error: why.error }) });
    await this.options.holdMiss?.();
    sendJson(res, 502, { ...why, request: { method, url } });
  }
}

/**
 * The recorded answer: status, headers (framing recomputed), body. Returns the recorded headers it
 * could not send: node:http refuses a name or value with bytes HTTP does not allow (0x7f and control
 * characters but tab in a value), which some servers send and clients accept all the same.
 */
async function sendMock(res: http.ServerResponse, mock: HttpMock, method: string, acceptEncoding: string | undefined): Promise<string[]> {
  const r = mock.spec.resp;
  const headers = new Map<string, string | string[]>();
  const unsent: string[] = [];
  for (const [name, value] of Object.entries(r.header)) {
    if (NOT_REPLAYED.has(name.toLowerCase())) continue;
    const values = name.toLowerCase() === 'set-cookie' ? splitSetCookie(value) : value;
    if (!sendable(name, values)) unsent.push(`header ${name}`);
    else headers.set(name, values);
  }
  const noBody = method === 'HEAD' || r.status_code < 200 || r.status_code === 204 || r.status_code === 304;
  let body: Buffer = Buffer.from(bodyBytes(r.body));
  if (!noBody) body = await encodeForClient(headers, body, acceptEncoding, r);
  for (const [name, value] of headers) res.setHeader(name, value);
  // No Date the service did not send: node:http adds one of its own by default, so a replayed
  // answer held a header the recording does not (a recorded Date is among `headers`, sent as is).
  res.sendDate = false;
  // A HEAD answer announces the length of the body it does not send, and so may a 304 (the length of
  // the representation the client holds, RFC 9110 8.6): both as recorded, never dropped.
  if ((method === 'HEAD' || r.status_code === 304) && r.header['Content-Length'] !== undefined) res.setHeader('Content-Length', r.header['Content-Length']);
  else if (!noBody) res.setHeader('Content-Length', body.length);
  // node:http checks the reason phrase as it does a header value (and keeps a refused one, failing the 502 after it too).
  const reason = r.status_message && !INVALID_HEADER_CHAR.test(r.status_message) ? r.status_message : undefined;
  if (r.status_message && !reason) unsent.push('status message');
  res.writeHead(r.status_code, reason);
  res.end(noBody ? undefined : body);
  return unsent;
}

/** What node:http refuses in a header value or reason phrase (its checkInvalidHeaderChar). */
const INVALID_HEADER_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

/** Whether node:http sends this header (its own checks, which throw). */
function sendable(name: string, value: string | string[]): boolean {
  try {
    http.validateHeaderName(name);
    for (const v of Array.isArray(value) ? value : [value]) http.validateHeaderValue(name, v);
    return true;
  } catch {
    return false;
  }
}

/**
 * Keploy joins repeated headers with ","; for Set-Cookie that is ambiguous (Expires dates hold
 * commas). Split only where a comma is followed by `name=`, which a date never is.
 */
export function splitSetCookie(value: string): string[] {
  return value.split(/,(?=\s*[^;,=\s]+=)/).map((s) => s.trim());
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body, null, 2)}\n`;
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), 'X-Debugkit-Mock': 'miss' });
  res.end(text);
}

function pairs(raw: string[]): Header[] {
  const out: Header[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i]!, raw[i + 1]!]);
  return out;
}
