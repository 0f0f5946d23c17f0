import { isJSONRPCRequest, type JSONRPCMessage, type McpServer, type Transport } from '@modelcontextprotocol/server';

/** Why a call is cancelled when its HTTP client leaves before its answer (MCP's reason, and REST's audit record). */
export const CLIENT_LEFT = 'the HTTP client closed the connection';

/**
 * Plain JSON-RPC over HTTP (the curl form of kindly-debugger's contract: one request per POST, no initialize, no session,
 * no 2026 envelope), answered without the web-standard transport: one McpServer per key, kept
 * for the server's life and connected to an in-memory transport that hands each request to the
 * server under an id of its own (clients reuse ids across concurrent POSTs) and gives back the
 * one response. Notifications the server sends on the way (progress, logs) have no stream to go
 * to and are dropped, as a JSON-answering server drops them; a request the server sends the
 * client (none of debugkit's tools do) is answered at once with an error, so nothing waits on it.
 */

/** One request's answer: the JSON-RPC response, with the client's own id. */
export type PlainAnswer = { jsonrpc: '2.0'; id: string | number; result?: unknown; error?: unknown };

/** Whether a parsed body is one request this path serves (anything else takes the SDK's transport). */
export function isPlainRequest(body: unknown): body is { jsonrpc: '2.0'; id: string | number; method: string } {
  return !Array.isArray(body) && isJSONRPCRequest(body);
}

class InMemoryTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private readonly waiting = new Map<number, (message: JSONRPCMessage) => void>();

  /** Requests handed to the server and not yet answered (or given up: their client left). */
  get pending(): number {
    return this.waiting.size;
  }
  private next = 0;

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    const m = message as { id?: unknown; method?: unknown };
    if (typeof m.method === 'string') {
      // A request to the client: there is no stream to ask it on.
      if (m.id !== undefined) {
        const id = m.id as string | number;
        queueMicrotask(() =>
          this.onmessage?.({ jsonrpc: '2.0', id, error: { code: -32601, message: 'this request was made without a session or stream: the client cannot be asked anything' } } as JSONRPCMessage),
        );
      }
      return;
    }
    const done = typeof m.id === 'number' ? this.waiting.get(m.id) : undefined;
    if (done) {
      this.waiting.delete(m.id as number);
      done(message);
    }
  }

  async close(): Promise<void> {
    for (const done of this.waiting.values()) done({ jsonrpc: '2.0', id: 0, error: { code: -32000, message: 'the server is shutting down' } } as JSONRPCMessage);
    this.waiting.clear();
    this.onclose?.();
  }

  /** Hands one request to the server; resolves with its response. `gone`: the HTTP client left. */
  exchange(request: { id: string | number } & Record<string, unknown>, extra: Parameters<NonNullable<Transport['onmessage']>>[1], gone: AbortSignal): Promise<PlainAnswer> {
    const own = ++this.next;
    return new Promise<PlainAnswer>((resolve) => {
      // The client left: the call is cancelled, and its answer is not waited for (the SDK sends
      // none for a cancelled request, so the entry, the request and its body would stay for good).
      const onGone = () => {
        this.waiting.delete(own);
        resolve({ jsonrpc: '2.0', id: request.id, error: { code: -32800, message: `Request cancelled: ${CLIENT_LEFT}` } });
        this.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: own, reason: CLIENT_LEFT } } as JSONRPCMessage);
      };
      this.waiting.set(own, (response) => {
        gone.removeEventListener('abort', onGone);
        resolve({ ...(response as unknown as PlainAnswer), id: request.id });
      });
      gone.addEventListener('abort', onGone, { once: true });
      this.onmessage?.({ ...request, id: own } as JSONRPCMessage, extra);
    });
  }
}

/** The long-lived servers of the plain path, one per key. */
export class PlainServers {
  private readonly byKey = new Map<string, Promise<{ server: McpServer; transport: InMemoryTransport }>>();

  /** One request of this key's; `connect` makes the key's server (its tools are the key's) on first use. */
  async answer(
    keyId: string,
    connect: () => McpServer,
    request: { id: string | number } & Record<string, unknown>,
    extra: Parameters<NonNullable<Transport['onmessage']>>[1],
    gone: AbortSignal,
  ): Promise<PlainAnswer> {
    let entry = this.byKey.get(keyId);
    if (!entry) {
      const transport = new InMemoryTransport();
      const server = connect();
      entry = server.connect(transport).then(() => ({ server, transport }));
      this.byKey.set(keyId, entry);
      entry.catch(() => this.byKey.delete(keyId));
    }
    return (await entry).transport.exchange(request, extra, gone);
  }

  /** Requests of this key's handed to its server and not yet answered or given up. */
  async pending(keyId: string): Promise<number> {
    const entry = this.byKey.get(keyId);
    return entry ? (await entry).transport.pending : 0;
  }

  async close(): Promise<void> {
    const all = [...this.byKey.values()];
    this.byKey.clear();
    await Promise.all(
      all.map(async (entry) => {
        const { server, transport } = await entry.catch(() => ({ server: undefined, transport: undefined }));
        await transport?.close().catch(() => undefined);
        await server?.close().catch(() => undefined);
      }),
    );
  }
}
