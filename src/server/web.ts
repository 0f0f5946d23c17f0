import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The Node side of the SDK's web-standard transports, kept small for speed: a `Request` built
 * from headers only (the body is always passed already parsed), and a `Response` written back in
 * one write when it is JSON, streamed when it is SSE.
 */

/** A web Request carrying the Node request's method, URL and headers; aborted when the client goes. */
export function toRequest(req: IncomingMessage, res: ServerResponse): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else headers.set(name, value);
  }
  const abort = new AbortController();
  res.once('close', () => abort.abort());
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, { method: req.method, headers, signal: abort.signal });
}

/**
 * Writes a web Response to a Node response. `extra`: JSON-RPC answers given outside the server (the
 * errors of a batch's refused requests) that go out with it. `collapse`: the id of the one request this exchange
 * answers, when the client did not ask for progress; an SSE answer is then turned into a plain JSON
 * answer holding just that response (one write instead of a stream; notifications related to the
 * request are dropped, as a JSON-answering server drops them).
 */
export async function writeResponse(res: ServerResponse, response: Response, collapse?: string | number, extra: readonly unknown[] = []): Promise<void> {
  if (extra.length > 0) response = await withMessages(response, extra);
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const type = response.headers.get('content-type') ?? '';
  if (!response.body) {
    res.writeHead(response.status, headers);
    res.end();
    return;
  }
  if (!type.startsWith('text/event-stream')) {
    const body = Buffer.from(await response.arrayBuffer());
    headers['content-length'] = String(body.length);
    res.writeHead(response.status, headers);
    res.end(body);
    return;
  }
  const reader = response.body.getReader();
  res.once('close', () => void reader.cancel().catch(() => undefined));
  if (collapse !== undefined) {
    const answer = await findResponse(reader, collapse);
    void reader.cancel().catch(() => undefined);
    if (res.destroyed) return;
    if (answer !== undefined) {
      delete headers['content-type'];
      delete headers['cache-control'];
      delete headers['connection'];
      delete headers['x-accel-buffering'];
      res.writeHead(200, { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(answer)) });
      res.end(answer);
    } else {
      res.writeHead(202, headers);
      res.end();
    }
    return;
  }
  res.writeHead(response.status, headers);
  res.flushHeaders();
  for (;;) {
    const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
    if (done || res.destroyed) break;
    if (!res.write(value)) await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
  }
  res.end();
}

/**
 * A Response that also carries `extra` JSON-RPC messages: a JSON answer becomes the array of its
 * messages and them, an SSE stream sends them first, and an answer with no body (202: only
 * notifications were served) becomes the array of them.
 */
async function withMessages(response: Response, extra: readonly unknown[]): Promise<Response> {
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  const type = headers.get('content-type') ?? '';
  if (response.body && type.startsWith('text/event-stream')) {
    const reader = response.body.getReader();
    const first = new TextEncoder().encode(extra.map((m) => `event: message\ndata: ${JSON.stringify(m)}\n\n`).join(''));
    let sent = false;
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (!sent) {
          sent = true;
          return controller.enqueue(first);
        }
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason).catch(() => undefined),
    });
    return new Response(stream, { status: response.status, headers });
  }
  let served: unknown[] = [];
  if (response.body) {
    const text = await response.text();
    try {
      const parsed = text ? (JSON.parse(text) as unknown) : undefined;
      served = parsed === undefined ? [] : Array.isArray(parsed) ? parsed : [parsed];
    } catch {
      // not JSON: nothing of it can be joined; the extra messages are the answer
    }
  }
  headers.set('content-type', 'application/json');
  return new Response(JSON.stringify([...served, ...extra]), { status: response.status === 202 || !response.body ? 200 : response.status, headers });
}

/** Reads SSE events until the JSON-RPC response with this id; its JSON text, or undefined at the end. */
async function findResponse(reader: ReadableStreamDefaultReader<Uint8Array>, id: string | number): Promise<string | undefined> {
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
    if (done) return undefined;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      const data = event
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n');
      if (!data) continue;
      try {
        const message = JSON.parse(data) as { id?: unknown; result?: unknown; error?: unknown };
        if (message.id === id && ('result' in message || 'error' in message)) return data;
      } catch {
        // not JSON: not ours
      }
    }
  }
}

/** The id of a single JSON-RPC request that asked for no progress, else undefined. */
export function collapsibleId(body: unknown): string | number | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const m = body as { id?: unknown; method?: unknown; params?: { _meta?: { progressToken?: unknown } } };
  if (typeof m.method !== 'string' || (typeof m.id !== 'string' && typeof m.id !== 'number')) return undefined;
  if (m.params?._meta?.progressToken !== undefined) return undefined;
  return m.id;
}

/** Protocol revisions served the 2025 way (initialize, sessions); anything newer is per-request. */
const LEGACY_VERSIONS = new Set(['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25']);
const VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';

/**
 * Whether a request belongs to the 2026-07-28 path: it carries the per-request `_meta` envelope
 * claim, or an MCP-Protocol-Version header naming a revision newer than the 2025 ones. The modern
 * handler then answers it, including its refusals (a bad envelope, headers that disagree).
 */
export function isModernRequest(req: IncomingMessage, body: unknown): boolean {
  const header = req.headers['mcp-protocol-version'];
  const version = Array.isArray(header) ? header[0] : header;
  if (version !== undefined && !LEGACY_VERSIONS.has(version)) return true;
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => {
    const meta = (m as { params?: { _meta?: unknown } } | null)?.params?._meta;
    return typeof meta === 'object' && meta !== null && VERSION_META_KEY in meta;
  });
}
