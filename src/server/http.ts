import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { DebugkitError } from '../core/errors.js';
import { allowedHostHeaders, keyMatches, originAllowed } from './auth.js';
import { FORWARDED_HEADER, HttpGate } from '../control/http.js';
import { forwardRequest } from '../control/forward.js';
import type { KeyContext } from '../control/index.js';
import type { Debugkit } from './createServer.js';
import { BodyTooLargeError, matchRoute, readBody, sendJson, sendRestError } from './rest.js';

interface McpSession {
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  lastSeen: number;
  /** The key that opened it: only that key may use it. */
  keyId: string;
}

export interface HttpHandle {
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

const AUTH_FAILED = -32001;

/** Streamable HTTP at /mcp, plus the toolsets' REST routes; loopback, bearer key, Host checks. */
export async function serveHttp(dk: Debugkit): Promise<HttpHandle> {
  const { http } = dk.config;
  const sessions = new Map<string, McpSession>();
  const routes = dk.routes();
  let allowedHosts = allowedHostHeaders(http.host, http.port, http.allowedHosts);
  const gate = dk.control ? new HttpGate(dk.control) : undefined;

  const endSession = async (id: string, why: string) => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    dk.log.info(`MCP session ${id} ended: ${why}`);
    await dk.control?.releaseSession(id);
    await dk.release(`http:${id}`);
    await session.transport.close().catch(() => undefined);
    await session.server.close().catch(() => undefined);
  };

  const handleMcp = async (req: IncomingMessage, res: ServerResponse, key: KeyContext | undefined) => {
    const id = header(req, 'mcp-session-id');
    const body = req.method === 'POST' ? await readBody(req, http.maxBodyBytes) : undefined;
    // Control plane: scopes, rate limit and quota for this request (answers refusals itself).
    if (gate && key && !(await gate.admitMcp(key, req, res, body, id))) return;
    if (id !== undefined) {
      const session = sessions.get(id);
      if (!session || (key && session.keyId !== key.id)) {
        // Control plane: a session another node holds is forwarded there (never from a forwarded request).
        const where = dk.control && key && !header(req, FORWARDED_HEADER) ? await dk.control.locateSession(id) : undefined;
        if (where && where.key_id === key!.id) return forwardRequest(where, req, res, body, await dk.control!.forwardToken(), dk.control!.node.id);
        return jsonRpcError(res, 404, -32001, `Session not found: ${id} (it ended or never existed; initialize a new one)`);
      }
      session.lastSeen = Date.now();
      await session.transport.handleRequest(req, res, body);
      if (req.method === 'DELETE') await endSession(id, 'closed by the client (DELETE)');
      return;
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      return jsonRpcError(res, 400, -32000, 'Bad Request: no Mcp-Session-Id header; send an initialize request first');
    }
    // The id is chosen here so the McpServer's tools know their owner before the transport exists.
    const sid = randomUUID();
    const server = dk.connect(`http:${sid}`, key);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => sid,
      onsessioninitialized: async (sid) => {
        sessions.set(sid, { transport, server, lastSeen: Date.now(), keyId: key?.id ?? '' });
        dk.log.info(`MCP session ${sid} started`);
        // Control plane: record that this node holds the session (before the client learns its id).
        if (key) await dk.control?.claimSession(sid, key).catch((err) => dk.log.warn(`could not record session ${sid} in the store: ${String(err)}`));
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) void endSession(transport.sessionId, 'transport closed');
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const host = (req.headers.host ?? '').toLowerCase();
    if (!allowedHosts.has(host) || !originAllowed(header(req, 'origin'), allowedHosts)) {
      return jsonRpcError(res, 403, -32000, `Forbidden: Host "${host}" or Origin is not allowed (DNS-rebinding protection; use --allowed-host to add a name)`);
    }
    // Control plane: the key (stored keys, --api-key, or --no-auth) this request acts as.
    const key = gate ? await gate.authenticate(req, res) : undefined;
    if (gate && !key) return;
    if (!gate && !http.noAuth && !keyMatches(req.headers.authorization, http.apiKey)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="debugkit"');
      return jsonRpcError(res, 401, AUTH_FAILED, 'Authentication failed');
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/mcp') return handleMcp(req, res, key);
    const found = matchRoute(routes, req.method ?? 'GET', url.pathname);
    if (found) {
      const body = req.method === 'POST' ? await readBody(req, http.maxBodyBytes, { emptyAs: {} }) : undefined;
      // Control plane: REST routes need their toolset's scope, count as calls and are audited.
      const finish = gate && key ? await gate.admitRest(key, req, res, found.route.toolset, found.route.path, { ...found.params, ...(body && typeof body === 'object' ? body : {}) }) : undefined;
      if (gate && !finish) return;
      try {
        await found.route.handle(found.params, body, req, res);
        await finish?.({ ok: res.statusCode < 400 });
      } catch (err) {
        await finish?.({ ok: false, error: String(err) });
        throw err;
      }
      return;
    }
    sendJson(res, 404, { error: { code: 'NOT_FOUND', message: `no route ${req.method} ${url.pathname}; MCP is served at /mcp` } });
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) return void res.end();
      if (err instanceof DebugkitError && err.code === 'INVALID_ARGUMENT' && req.url?.startsWith('/mcp')) {
        return jsonRpcError(res, err instanceof BodyTooLargeError ? 413 : 400, -32700, err.message);
      }
      sendRestError(res, err);
    });
  };
  // --tls-cert/--tls-key: serve HTTPS directly.
  const server: Server = http.tls
    ? (createHttpsServer({ cert: readFileSync(http.tls.cert), key: readFileSync(http.tls.key) }, onRequest) as unknown as Server)
    : createServer(onRequest);
  server.requestTimeout = 0; // SSE streams and long tool calls outlive any fixed request timeout.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(http.port, http.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  allowedHosts = allowedHostHeaders(http.host, port, http.allowedHosts);

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [id, s] of sessions) {
      if (now - s.lastSeen > http.sessionIdleMs) void endSession(id, `idle for ${Math.round(http.sessionIdleMs / 1000)} s`);
    }
  }, Math.min(60_000, Math.max(1000, http.sessionIdleMs / 4)));
  sweep.unref();

  const hostForUrl = http.host.includes(':') ? `[${http.host}]` : http.host;
  const ownUrl = `${http.tls ? 'https' : 'http'}://${hostForUrl}:${port}/mcp`;
  if (dk.control && !dk.control.node.url) dk.control.node.url = ownUrl;
  return {
    url: ownUrl,
    port,
    server,
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.keys()].map((id) => endSession(id, 'server shutting down')));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id: null });
}
