import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ModelBudget } from './budget.js';
import { Bundle } from './bundle.js';
import { estimateCollectedAt } from './clock.js';
import { Discovery } from './discovery.js';
import { handle, type ServerContext } from './handler.js';
import { failure, internalError, sendStatus, timeout, type Status } from './status.js';
import { boundPromise } from '../../../core/wait.js';

/**
 * A read-only Kubernetes API server over an extracted support bundle, so the real kubectl
 * (get, describe, logs, api-resources, -o json/yaml/wide...) works as if the cluster were
 * still there. Plain HTTP on 127.0.0.1 only: it serves files already on this machine, and only
 * to a client naming it as 127.0.0.1:PORT or localhost:PORT (no DNS rebinding) and, when the
 * server has a token, knowing it (no other local user; see BundleApiServerOptions.token).
 */
export interface BundleApiServer {
  /** What clients use: http://127.0.0.1:PORT, then /TOKEN when the server has a token. */
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface BundleApiServerOptions {
  /** The extracted bundle: the directory containing cluster-resources/, or its parent. */
  root: string;
  /** The reference time for AGE columns; by default, when the bundle was collected (see clock.ts). */
  collectedAt?: Date;
  /**
   * The secret every request's path must start with (/TOKEN/api/v1/...; `url` ends with it, and
   * so does the kubeconfig's server). A path, not an Authorization header: kubectl (client-go)
   * sends a kubeconfig's token only over TLS, never to a plain-HTTP server. The workspace always
   * sets a random one; without it, only the Host check applies (tests of the server alone).
   */
  token?: string;
  /** What the bundle's parsed objects are charged to besides its own budget: the shares of the keys using it (budget.ts SharedCharge); the server's by default. */
  model?: ModelBudget;
}

/** Longest any one request may take, file reads included; after it the client gets a Status. */
const REQUEST_BUDGET_MS = 30_000;

export async function startBundleApiServer(options: BundleApiServerOptions): Promise<BundleApiServer> {
  const bundle = await Bundle.open(options.root, options.model ? { serverModel: options.model } : undefined);
  let collectedAt: Promise<Date> | undefined = options.collectedAt ? Promise.resolve(options.collectedAt) : undefined;
  const ctx: ServerContext = {
    bundle,
    discovery: new Discovery(bundle.registry),
    collectedAt: () => (collectedAt ??= estimateCollectedAt(ctx.bundle)),
    address: '127.0.0.1:0',
  };
  const gate = { hosts: new Set<string>(), token: options.token === undefined ? undefined : digest(options.token) };
  const server = createServer((req, res) => {
    const refused = refusal(gate, req);
    if (refused) {
      req.resume();
      return sendStatus(res, refused);
    }
    void serve(ctx, req, res);
  });
  // Bounds on the transport too: slow or idle clients cannot hold sockets open.
  server.headersTimeout = 10_000;
  server.requestTimeout = REQUEST_BUDGET_MS;
  server.keepAliveTimeout = 5_000;
  const port = await listen(server);
  ctx.address = `127.0.0.1:${port}`;
  gate.hosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
  return {
    url: `http://127.0.0.1:${port}${options.token === undefined ? '' : `/${options.token}`}`,
    port,
    close: () => {
      ctx.bundle.close();
      return closeServer(server);
    },
  };
}

/**
 * Runs `handle` with a signal that ends its work once nobody will read the answer: the client
 * closed the connection (kubectl killed at its call's timeout) or the budget passed. Answering
 * alone left the work running: `kubectl logs --tail 1` of a 20 GB log without a newline read it
 * backwards for minutes, 96 such calls holding 104 descriptors and a CPU after they had returned,
 * and a list with 1,300 label requirements over 1M events matched to the end (attack 18r L3).
 */
async function serve(ctx: ServerContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const gone = new AbortController();
  const abort = (): void => gone.abort();
  req.once('close', abort);
  res.once('close', abort);
  try {
    const outcome = await boundPromise(handle(ctx, req, res, gone.signal), { timeoutMs: REQUEST_BUDGET_MS, keepAlive: true });
    if (outcome.kind !== 'timeout') return;
    gone.abort();
    if (res.destroyed || res.writableEnded) return;
    if (!res.headersSent) sendStatus(res, timeout());
    else res.destroy();
  } catch (err) {
    // Stopped because its client left: there is no one to answer.
    if (gone.signal.aborted) return;
    if (!res.headersSent) sendStatus(res, internalError(err instanceof Error ? err.message : String(err)));
    else res.destroy();
  }
}

/**
 * Why a request is refused before it is read: a Host other than this server's own (a page
 * reaching it through DNS rebinding), or a path that does not start with the token (compared in
 * constant time, as digests of equal length). An admitted request's path loses its token.
 */
function refusal(gate: { hosts: Set<string>; token: Buffer | undefined }, req: IncomingMessage): Status | undefined {
  if (!gate.hosts.has((req.headers.host ?? '').toLowerCase())) return failure(421, 'Misdirected', 'this support-bundle API server answers only to Host 127.0.0.1:PORT or localhost:PORT');
  if (gate.token === undefined) return undefined;
  const m = /^\/([^/?]*)(.*)$/s.exec(req.url ?? '');
  if (!m || !timingSafeEqual(digest(m[1]!), gate.token)) return failure(401, 'Unauthorized', 'Unauthorized: the path must start with the token of this support-bundle API server (see its kubeconfig)');
  req.url = m[2]!.startsWith('/') ? m[2]! : `/${m[2]!}`;
  return undefined;
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // kubectl keeps connections alive; close them so close() returns promptly.
    server.closeAllConnections();
  });
}
