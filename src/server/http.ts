import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createMcpHandler, isInitializeRequest, WebStandardStreamableHTTPServerTransport, type AuthInfo, type McpServer } from '@modelcontextprotocol/server';
import { defaultMaxConnections, limitConnections } from './connections.js';
import { DebugkitError } from '../core/errors.js';
import { allowedHostRules, authorizationFields, bearerChallenge, hostAllowed, isOAuthProbe, keyMatches, KEY_HINT, NO_OAUTH, originAllowed, sameOrigin } from './auth.js';
import { LOCAL_PRINCIPAL, type Debugkit, type Denial, type Principal } from './createServer.js';
import { admitBody, MAX_BATCH, statusFor } from './gate.js';
import { sendDenial, sessionToForward } from './forwarding.js';
import { serveUiAsset, UI_HEADERS } from './live.js';
import { sendJson, sendRestError } from '../mcp/rest.js';
import { BodyTooLargeError, KeyedSlots, matchRoute, PendingBodies, readBody, TooManyAtOnceError } from './rest.js';
import { collapsibleId, isModernRequest, toRequest, writeResponse } from './web.js';
import { CLIENT_LEFT, isPlainRequest, PlainServers } from './plain.js';

interface McpSession {
  transport: WebStandardStreamableHTTPServerTransport;
  server: McpServer;
  principal: Principal;
  lastSeen: number;
  /** Whether a request came after `initialize` (until then the session has the short idle bound). */
  active: boolean;
}

/** The ids of the requests (not notifications or answers) in a parsed JSON-RPC body. */
function requestIds(body: unknown): Array<string | number> {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((m) => {
    const msg = m as { id?: unknown; method?: unknown } | null;
    return msg && typeof msg.method === 'string' && (typeof msg.id === 'string' || typeof msg.id === 'number') ? [msg.id] : [];
  });
}

export interface HttpHandle {
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

const AUTH_FAILED = -32001;

/**
 * MCP at /mcp for every protocol version, plus the toolsets' REST routes; loopback, bearer key,
 * Host checks. Three ways in, chosen per request:
 * - 2026-07-28 (a request carrying the per-request `_meta` envelope, `server/discover`): the SDK's
 *   stateless handler, one server instance per request, a plain JSON answer unless the call
 *   streams progress;
 * - 2025-era sessions (`initialize`, then `Mcp-Session-Id`): one server per session, as before;
 * - a plain JSON-RPC request with neither (kindly-debugger's curl example): served statelessly with a
 *   plain JSON answer, no Accept header or session needed.
 */
export async function serveHttp(dk: Debugkit): Promise<HttpHandle> {
  const { http } = dk.config;
  const sessions = new Map<string, McpSession>();
  /** MCP sessions being initialized, per key: they count against the caps before they are in `sessions`. */
  const starting = new Map<string, number>();
  const routes = dk.routes();
  // Bodies still arriving, per key and in all: each bounded in time (--body-timeout between bytes,
  // --body-deadline in all) and in number (--max-pending-bodies-per-key, --max-pending-bodies).
  const bodyDeadlineMs = http.bodyDeadlineMs ?? 60_000;
  const pendingBodies = new PendingBodies({ perKey: http.maxPendingBodiesPerKey ?? 16, total: http.maxPendingBodies ?? 256 });
  // Requests in progress per key (an SSE stream counts while open): one key's waiting calls cannot
  // hold every connection --max-connections allows (at most a quarter of them by default).
  const maxConnections = http.maxConnections ?? defaultMaxConnections();
  const maxRequestsPerKey = http.maxRequestsPerKey ?? Math.max(4, Math.min(256, Math.floor(maxConnections / 4)));
  const inProgress = new KeyedSlots(
    { perKey: maxRequestsPerKey, total: Number.POSITIVE_INFINITY },
    (_over, held) =>
      new TooManyAtOnceError(
        `Too many requests in progress for this key: ${held} of the ${maxRequestsPerKey} one key may have at once (--max-requests-per-key; an open SSE stream counts); wait for earlier answers`,
        429,
      ),
  );
  // A key already past its rate limit is answered 429 before a large body of its is parsed
  // (parsing 4 MiB held the loop ~0.5 s, attack e1-2). The body is read in full within its bounds
  // first, so the client gets its answer and keeps its connection. A small body is parsed and
  // refused message by message as before (admitBody): its answers keep their ids.
  const overRate = dk.hooks.overRate;
  const beforeParse = (req: IncomingMessage, res: ServerResponse, principal: Principal) =>
    overRate
      ? async (bytes: number) => {
          if (bytes <= RATE_BEFORE_PARSE_BYTES) return;
          const over = await overRate(principal, req, res);
          if (over) throw new RefusedBeforeParse(over);
        }
      : undefined;
  const receiveBody = (req: IncomingMessage, res: ServerResponse, principal: Principal, emptyAs?: unknown) =>
    pendingBodies.receive(principal.id, () =>
      readBody(req, http.maxBodyBytes, { ...(emptyAs !== undefined ? { emptyAs } : {}), stallMs: http.bodyTimeoutMs, deadlineMs: bodyDeadlineMs, beforeParse: beforeParse(req, res, principal) }),
    );
  const hostRules = allowedHostRules(http.host, http.allowedHosts);
  const authenticate = dk.hooks.authenticate ?? ((req: IncomingMessage) => (http.noAuth || keyMatches(req.headers.authorization, http.apiKey) ? LOCAL_PRINCIPAL : undefined));

  const modern = createMcpHandler(
    ({ authInfo }) => {
      const principal = (authInfo?.extra?.principal as Principal | undefined) ?? LOCAL_PRINCIPAL;
      return dk.connect(`http:${principal.id}`, principal);
    },
    { legacy: 'reject', maxRequestBodySize: http.maxBodyBytes, onerror: (err) => dk.log.debug(`MCP (2026-07-28): ${err.message}`) },
  );
  const authInfo = (principal: Principal): AuthInfo => ({ token: '', clientId: principal.id, scopes: [], extra: { principal } });

  const endSession = async (id: string, why: string) => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    dk.log.info(`MCP session ${id} ended: ${why}`, { keyId: session.principal.id });
    await dk.hooks.sessions?.release(id).catch(() => undefined);
    await dk.release(`http:${id}`);
    await session.transport.close().catch(() => undefined);
    await session.server.close().catch(() => undefined);
  };

  const handleMcp = async (req: IncomingMessage, res: ServerResponse, principal: Principal) => {
    const id = header(req, 'mcp-session-id');
    const body = req.method === 'POST' ? await receiveBody(req, res, principal) : undefined;
    // Each message of a batch is judged and counted on its own: a bound before anything is counted.
    if (Array.isArray(body) && body.length > MAX_BATCH) return jsonRpcError(res, 400, -32600, `Invalid Request: a batch holds at most ${MAX_BATCH} messages, this one ${body.length}`);
    // Multi-node: a request for a session another node holds is forwarded there whole (once); that
    // node admits, counts and serves it (the counters are shared). So is a stateless request
    // (2026-07-28, plain JSON-RPC) whose tools/call names a debug session another node holds.
    const forwarding = dk.hooks.sessions;
    const forwarded = forwarding ? await forwarding.isForwarded(req) : true;
    if (!forwarded) {
      const where =
        id !== undefined
          ? sessions.has(id)
            ? undefined
            : await forwarding!.locate(id, principal)
          : req.method === 'POST' && !isInitializeRequest(body)
            ? await sessionToForward(forwarding!, body, principal, dk.sessionArgOf)
            : undefined;
      if (where && 'mixed' in where) {
        // Refused here, but counted against the key's limits first like any request it sends (and
        // refused by them first, audited as such): a refusal must not be a free way to make this
        // node look sessions up.
        const admitted = await admitBody(dk, principal, req, res, body, undefined);
        if (admitted.body === undefined && admitted.refusals.length > 0) return sendJson(res, admitted.status, Array.isArray(body) ? admitted.refusals : admitted.refusals[0]);
        return jsonRpcError(res, 400, -32600, `Invalid Request: a batch cannot be served by one node: ${where.mixed}`);
      }
      if (where) return forwarding!.forward(where, req, res, body);
    }
    // Control plane, message by message (a single message is a batch of one): scopes with each
    // call's arguments, rate limit and quota (header fields on every answer). Refused requests get
    // their own error; the rest are served, and the errors go out with their answers.
    const held = id === undefined ? undefined : sessions.get(id);
    const sessionKnown = id === undefined || (held !== undefined && held.principal.id === principal.id);
    const { body: served, refusals, status } = await admitBody(dk, principal, req, res, body, id, sessionKnown);
    // Nothing left to serve: the refusals are the answer.
    const refusedWhole = served === undefined && refusals.length > 0;
    const answerRefusals = () => sendJson(res, status, Array.isArray(body) ? refusals : refusals[0]);
    if (id !== undefined) {
      const session = sessions.get(id);
      if (!session || session.principal.id !== principal.id) {
        // An MCP session is bound to the key that opened it: another key never reaches it.
        return jsonRpcError(res, 404, -32001, `Session not found: ${id} (it ended or never existed; initialize a new one)`);
      }
      session.lastSeen = Date.now();
      session.active = true;
      if (refusedWhole) return answerRefusals();
      // The client leaving before its answers cancels its calls, as on the other paths: the SDK's
      // session transport does not, and each call would run on (holding its arguments and whatever
      // it started) until it ended by itself.
      const cancelOnLeave = () => {
        if (res.writableFinished) return;
        for (const requestId of requestIds(served)) {
          session.transport.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: CLIENT_LEFT } });
        }
      };
      res.once('close', cancelOnLeave);
      const response = await session.transport.handleRequest(toRequest(req, res), { parsedBody: served, authInfo: authInfo(principal) });
      await writeResponse(res, response, collapsibleId(served), refusals);
      if (req.method === 'DELETE') await endSession(id, 'closed by the client (DELETE)');
      return;
    }
    if (refusedWhole) return answerRefusals();
    if (req.method !== 'POST') {
      return jsonRpcError(res, 400, -32000, 'Bad Request: no Mcp-Session-Id header; POST a request (2026-07-28), or initialize a session first');
    }
    if (isInitializeRequest(served)) return startSession(req, res, served, principal);
    if (isModernRequest(req, served)) {
      const response = await modern.fetch(toRequest(req, res), { parsedBody: served, authInfo: authInfo(principal) });
      return writeResponse(res, response, undefined, refusals);
    }
    if (isPlainRequest(served)) return servePlain(req, res, served, principal);
    return serveOnce(req, res, served, principal, refusals);
  };

  /** One plain JSON-RPC request (the common curl case): answered by the key's long-lived server. */
  const plain = new PlainServers();
  const servePlain = async (req: IncomingMessage, res: ServerResponse, body: { id: string | number } & Record<string, unknown>, principal: Principal) => {
    // Aborted only when the client leaves before its answer (an abort builds a DOMException: not per request).
    const gone = new AbortController();
    const onClose = () => gone.abort();
    res.once('close', onClose);
    const traceparent = header(req, 'traceparent');
    const extra = { authInfo: authInfo(principal), ...(traceparent ? { request: new Request('http://localhost/mcp', { headers: { traceparent } }) } : {}) };
    const answer = await plain.answer(principal.id, () => dk.connect(`http:${principal.id}`, principal), body, extra, gone.signal);
    res.off('close', onClose);
    if (res.destroyed) return;
    sendJson(res, 200, answer);
  };

  /** The MCP sessions of one key open on this node. */
  const sessionsOf = (keyId: string): string[] => [...sessions].filter(([, s]) => s.principal.id === keyId).map(([sid]) => sid);

  /**
   * `initialize` past a cap on open MCP sessions (--max-mcp-sessions-per-key, --max-mcp-sessions;
   * sessions being initialized count too): the JSON-RPC error says which cap, how many are open,
   * the key's own sessions, and how to free one.
   */
  const sessionCapRefusal = (principal: Principal): { status: number; error: { code: number; message: string; data: Record<string, unknown> } } | undefined => {
    const mine = sessionsOf(principal.id);
    const mineOpen = mine.length + (starting.get(principal.id) ?? 0);
    let total = sessions.size;
    for (const n of starting.values()) total += n;
    const perKey = mineOpen >= http.maxMcpSessionsPerKey;
    if (!perKey && total < http.maxMcpSessions) return undefined;
    const [cap, option, limit, open] = perKey
      ? (['per-key', '--max-mcp-sessions-per-key', http.maxMcpSessionsPerKey, mineOpen] as const)
      : (['per-server', '--max-mcp-sessions', http.maxMcpSessions, total] as const);
    const what = perKey
      ? `Too many open MCP sessions for this key: ${open} of the ${limit} one key may hold are open`
      : `Too many open MCP sessions on this server: ${open} of the ${limit} it holds are open, ${mineOpen} of them this key's`;
    const message =
      `${what} (${option}). Free one by closing a session you no longer need: an HTTP DELETE to this endpoint with its Mcp-Session-Id header ` +
      `(MCP clients send it when they terminate a session). A session closes by itself after ${Math.round(http.sessionIdleMs / 1000)} s without requests, ` +
      `or ${Math.round(http.sessionInitIdleMs / 1000)} s when nothing followed its initialize.`;
    return {
      // The key's own cap is the client's to free (429); the server's is the server being full (503).
      status: perKey ? 429 : 503,
      error: { code: -32000, message, data: { cap, option, limit, open, key_id: principal.id, open_for_key: mineOpen, sessions: mine } },
    };
  };

  /** A 2025-era session: `initialize` now, `Mcp-Session-Id` on every later request. */
  const startSession = async (req: IncomingMessage, res: ServerResponse, body: unknown, principal: Principal) => {
    const refused = sessionCapRefusal(principal);
    if (refused) {
      dk.log.info(`MCP session refused: ${refused.error.data.cap} cap`, { keyId: principal.id, open: refused.error.data.open });
      return sendJson(res, refused.status, { jsonrpc: '2.0', id: (body as { id?: unknown }).id ?? null, error: refused.error });
    }
    // The check above and this reservation happen in one turn: concurrent initializes cannot pass the cap together.
    starting.set(principal.id, (starting.get(principal.id) ?? 0) + 1);
    let reserved = true;
    const unreserve = () => {
      if (!reserved) return;
      reserved = false;
      const n = (starting.get(principal.id) ?? 1) - 1;
      if (n > 0) starting.set(principal.id, n);
      else starting.delete(principal.id);
    };
    try {
      // The id is chosen here so the McpServer's tools know their owner before the transport exists.
      const sid = randomUUID();
      const server = dk.connect(`http:${sid}`, principal);
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => sid,
        onsessioninitialized: async (sid) => {
          unreserve();
          sessions.set(sid, { transport, server, principal, lastSeen: Date.now(), active: false });
          dk.log.info(`MCP session ${sid} started`, { keyId: principal.id });
          // Multi-node: record that this node holds the session before the client learns its id.
          await dk.hooks.sessions?.claim(sid, principal).catch((err: unknown) => dk.log.warn(`could not record session ${sid} in the store: ${String(err)}`));
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) void endSession(transport.sessionId, 'transport closed');
      };
      await server.connect(transport);
      const response = await transport.handleRequest(toRequest(req, res), { parsedBody: body, authInfo: authInfo(principal) });
      await writeResponse(res, response, collapsibleId(body));
    } finally {
      unreserve();
    }
  };

  /**
   * One JSON-RPC request with no session and no 2026 envelope (e.g. plain curl): answered by a
   * server instance of its own, as plain JSON. Sessions it opens belong to the key (`http:<id>`),
   * as 2026-07-28 requests' do.
   */
  const serveOnce = async (req: IncomingMessage, res: ServerResponse, body: unknown, principal: Principal, refusals: readonly unknown[] = []) => {
    const server = dk.connect(`http:${principal.id}`, principal);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.once('close', () => {
      void transport.close().catch(() => undefined);
      void server.close().catch(() => undefined);
    });
    // A one-shot answer is plain JSON whatever the client said it accepts.
    req.headers.accept = 'application/json, text/event-stream';
    if (!req.headers['content-type']) req.headers['content-type'] = 'application/json';
    await server.connect(transport);
    const response = await transport.handleRequest(toRequest(req, res), { parsedBody: body, authInfo: authInfo(principal) });
    await writeResponse(res, response, undefined, refusals);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const host = req.headers.host ?? '';
    const origin = header(req, 'origin');
    if (!hostAllowed(host, hostRules) || !originAllowed(origin, hostRules) || (http.noAuth && !sameOrigin(origin, host))) {
      return jsonRpcError(res, 403, -32000, `Forbidden: Host "${host}" or Origin is not allowed (DNS-rebinding protection; use --allowed-host to add a name)`);
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    // What OAuth clients probe after a 401 is answered without a key: no OAuth here (auth.ts isOAuthProbe).
    if (isOAuthProbe(url.pathname) && !matchRoute(routes, req.method ?? 'GET', url.pathname)) return sendJson(res, 404, NO_OAUTH);
    // The live view's page (no data in it: that comes from /ui/state, with a key).
    if (req.method === 'GET' && serveUiAsset(res, url.pathname)) return;
    const fields = authorizationFields(req);
    if (fields > 1) {
      res.setHeader('WWW-Authenticate', bearerChallenge('invalid_request', `send one Authorization header, not ${fields}: ${KEY_HINT}`));
      return jsonRpcError(res, 401, AUTH_FAILED, `Authentication failed: the request has ${fields} Authorization headers; send exactly one (Authorization: Bearer KEY)`);
    }
    let principal: Principal | undefined;
    try {
      principal = await authenticate(req);
    } catch (err) {
      if (!isDenial(err)) throw err;
      const status = err.status ?? statusFor(err.code);
      // Every 401 says how to authenticate (the denial's own challenge, when it has one, wins).
      if (status === 401) res.setHeader('WWW-Authenticate', bearerChallenge(fields === 0 ? 'invalid_request' : 'invalid_token'));
      return sendDenial(res, err, undefined, status);
    }
    if (!principal) {
      res.setHeader('WWW-Authenticate', bearerChallenge(fields === 0 ? 'invalid_request' : 'invalid_token'));
      return jsonRpcError(res, 401, AUTH_FAILED, 'Authentication failed');
    }
    res.once('close', inProgress.take(principal.id));
    if (url.pathname === '/mcp') return handleMcp(req, res, principal);
    if (url.pathname === '/ui/state' && req.method === 'GET') {
      for (const [k, v] of Object.entries(UI_HEADERS)) res.setHeader(k, v);
      return sendJson(res, 200, await dk.liveState(principal));
    }
    const found = matchRoute(routes, req.method ?? 'GET', url.pathname);
    if (found) {
      const body = req.method === 'POST' ? await receiveBody(req, res, principal, {}) : undefined;
      // The key owns what its REST calls open (sessions): another key's id answers as an unknown one.
      // A client that leaves before its answer ends its call (a run waiting up to 30 s for a stop).
      const gone = new AbortController();
      res.once('close', () => {
        if (!res.writableFinished) gone.abort();
      });
      const client = { owner: `rest:${principal.id}`, principal, signal: gone.signal };
      if (!dk.hooks.admitRoute) return found.route.handle(found.params, body, req, res, client);
      // Control plane: a REST route needs its toolset's scope, counts as a call and is audited first.
      // The route's own parameters win: a body field named like one (a forged "id") must not rename what is audited.
      const params = { ...(body && typeof body === 'object' && !Array.isArray(body) ? body : {}), ...found.params };
      const admitted = await dk.hooks.admitRoute(principal, req, res, { toolset: found.route.toolset, path: found.route.path, params: found.params, scopes: found.route.scopes?.(body) ?? [] }, params);
      if (typeof admitted !== 'function') return sendDenial(res, admitted, undefined, admitted.status ?? statusFor(admitted.code));
      try {
        await found.route.handle(found.params, body, req, res, client);
        // Recorded as an MCP call is: a client that left before its answer cancelled it (attack g3-1: it was "ok", or an
        // error without a word), and an answer of 400 or more is an error that says its status.
        const outcome = gone.signal.aborted
          ? { ok: false, cancelled: true, error: `cancelled: ${CLIENT_LEFT}` }
          : res.statusCode < 400
            ? { ok: true }
            : { ok: false, error: `answered HTTP ${res.statusCode}` };
        void Promise.resolve(admitted(outcome)).catch(() => undefined);
      } catch (err) {
        void Promise.resolve(admitted({ ok: false, error: String(err) })).catch(() => undefined);
        throw err;
      }
      return;
    }
    sendJson(res, 404, { error: { code: 'NOT_FOUND', message: `no route ${req.method} ${url.pathname}; MCP is served at /mcp` } });
  };

  const headersTimeout = http.headersTimeoutMs ?? 15_000;
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    connections.admit(req, res);
    const started = performance.now();
    handle(req, res)
      .catch((err: unknown) => {
        if (res.headersSent) return void res.end();
        if (err instanceof RefusedBeforeParse) return sendDenial(res, err.denial, undefined, err.denial.status ?? statusFor(err.denial.code));
        if (err instanceof TooManyAtOnceError) {
          // The body was not read: the connection closes after the answer rather than wait for it.
          res.setHeader('Connection', 'close');
          if (req.url?.startsWith('/mcp')) return jsonRpcError(res, err.httpStatus, -32000, err.message);
          return sendRestError(res, err);
        }
        if (err instanceof DebugkitError && err.code === 'INVALID_ARGUMENT' && req.url?.startsWith('/mcp')) {
          return jsonRpcError(res, err instanceof BodyTooLargeError ? 413 : 400, -32700, err.message);
        }
        sendRestError(res, err);
      })
      .finally(() => dk.log.debug('http request', { method: req.method, path: req.url, status: res.statusCode, durationMs: performance.now() - started }));
  };
  // Node checks the header timeout on this interval (default 30 s): check often enough to honour it.
  const serverOptions = { connectionsCheckingInterval: Math.max(250, Math.min(5_000, headersTimeout / 4)) };
  // --tls-cert/--tls-key: serve HTTPS directly.
  const server: Server = http.tls
    ? (createHttpsServer({ ...serverOptions, cert: readFileSync(http.tls.cert), key: readFileSync(http.tls.key) }, onRequest) as unknown as Server)
    : createServer(serverOptions, onRequest);
  // Headers must arrive in time (slowloris); bodies are bounded in readBody, by a stall timer and a
  // total deadline. Node's requestTimeout bounds only the receiving of a request (never its answer:
  // SSE streams and long tool calls are not cut), so it backs the deadline up for bodies no
  // handler reads (one sent with a refused request): answered 408, the connection closed.
  server.headersTimeout = headersTimeout;
  server.requestTimeout = headersTimeout + bodyDeadlineMs + 1_000;
  // An idle keep-alive connection is closed well before the header timeout could fire on it, and
  // the Keep-Alive hint makes clients retire it first, so a reused socket never meets a closing one.
  server.keepAliveTimeout = Math.min(5_000, Math.max(1_000, headersTimeout / 2));
  // Connections held open with nothing whole sent cannot take every descriptor (onRequest counts each request in).
  const connections = limitConnections(server, maxConnections);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(http.port, http.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  // A session is closed after --session-idle without requests, and after --session-init-idle when
  // nothing came after its initialize (not even notifications/initialized).
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, s] of sessions) {
        if (s.active && now - s.lastSeen > http.sessionIdleMs) void endSession(id, `idle for ${Math.round(http.sessionIdleMs / 1000)} s`);
        if (!s.active && now - s.lastSeen > http.sessionInitIdleMs) void endSession(id, `nothing sent within ${Math.round(http.sessionInitIdleMs / 1000)} s of initialize`);
      }
    },
    Math.min(60_000, Math.max(1000, Math.min(http.sessionIdleMs, http.sessionInitIdleMs) / 4)),
  );
  sweep.unref();

  const hostForUrl = http.host.includes(':') ? `[${http.host}]` : http.host;
  const ownUrl = `${http.tls ? 'https' : 'http'}://${hostForUrl}:${port}/mcp`;
  dk.hooks.listening?.(ownUrl);
  return {
    url: ownUrl,
    port,
    server,
    async close() {
      clearInterval(sweep);
      await modern.close().catch(() => undefined);
      await plain.close();
      await Promise.all([...sessions.keys()].map((id) => endSession(id, 'server shutting down')));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Bodies up to this size are parsed even for a key past its rate limit (a millisecond or so), so their refusals keep their ids. */
const RATE_BEFORE_PARSE_BYTES = 64 * 1024;

/** A request refused before its body was parsed (its key past its rate limit): answered with the denial. */
class RefusedBeforeParse extends Error {
  constructor(readonly denial: Denial) {
    super(denial.message);
  }
}

function isDenial(err: unknown): err is Denial {
  return typeof err === 'object' && err !== null && typeof (err as Denial).message === 'string' && typeof (err as Denial).code === 'number';
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id: null });
}
