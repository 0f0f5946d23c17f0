import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { FORWARDED_HEADER } from './http.js';

// Headers a forwarded MCP request keeps; hop-by-hop and Host are the proxy's own.
const KEEP = ['authorization', 'content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id', 'traceparent', 'tracestate', 'user-agent'];
/** How long the node holding a session may take to accept the connection (not to answer the call). */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Sends an MCP request on to the node that holds its session and streams the answer back
 * (JSON or SSE). When that node does not answer, the client learns which node holds the session.
 */
export function forwardRequest(
  target: { node: string; url: string },
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  token: string,
  via: string,
  { connectTimeoutMs = CONNECT_TIMEOUT_MS }: { connectTimeoutMs?: number } = {},
): Promise<void> {
  return new Promise<void>((resolve) => {
    const url = new URL(target.url);
    const headers: Record<string, string> = { [FORWARDED_HEADER]: token, 'x-debugkit-via': via };
    // MCP's own fields travel too (2026-07-28: Mcp-Method, Mcp-Name, Mcp-Param-*).
    for (const [name, v] of Object.entries(req.headers)) {
      if (typeof v === 'string' && (KEEP.includes(name) || name.startsWith('mcp-'))) headers[name] = v;
    }
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    if (payload) headers['content-length'] = String(payload.length);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const upstream = send(url, { method: req.method, headers, timeout: connectTimeoutMs });
    // The bound is on reaching the node. Once connected, the call takes what it takes there (a
    // `continue` waits 10 s by default, and plain JSON answers send their headers only when done):
    // its own bounds apply on that node, and this client leaving ends it.
    upstream.on('socket', (socket) => {
      if (!socket.connecting) upstream.setTimeout(0);
      else socket.once('connect', () => upstream.setTimeout(0));
    });
    const fail = (why: string) => {
      if (!res.headersSent) {
        const text = JSON.stringify({
          jsonrpc: '2.0',
          id: null,
          error: { code: -32000, message: `Session is held by node ${target.node} (${target.url}), which did not answer: ${why}`, data: { node: target.node, url: target.url } },
        });
        res.writeHead(502, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
        res.end(text);
      } else res.destroy();
      resolve();
    };
    upstream.on('timeout', () => upstream.destroy(new Error(`not reached within ${connectTimeoutMs / 1000} s`)));
    upstream.on('error', (err) => fail(err.message));
    upstream.on('response', (answer) => {
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(answer.headers)) {
        if (v !== undefined && !['connection', 'transfer-encoding', 'keep-alive'].includes(k)) out[k] = v;
      }
      res.writeHead(answer.statusCode ?? 502, out);
      answer.pipe(res);
      answer.on('end', resolve);
      answer.on('error', () => (res.destroy(), resolve()));
    });
    res.on('close', () => upstream.destroy());
    upstream.end(payload);
  });
}
