import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Bundle } from './bundle.js';
import { estimateCollectedAt } from './clock.js';
import { handle, type ServerContext } from './handler.js';
import { internalError, sendStatus, timeout } from './status.js';
import { boundPromise } from '../../../core/wait.js';

/**
 * A read-only Kubernetes API server over an extracted support bundle, so the real kubectl
 * (get, describe, logs, api-resources, -o json/yaml/wide...) works as if the cluster were
 * still there. Plain HTTP on 127.0.0.1 only: it serves files already on this machine.
 */
export interface BundleApiServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface BundleApiServerOptions {
  /** The extracted bundle: the directory containing cluster-resources/, or its parent. */
  root: string;
  /** The reference time for AGE columns; by default, when the bundle was collected (see clock.ts). */
  collectedAt?: Date;
}

/** Longest any one request may take, file reads included; after it the client gets a Status. */
const REQUEST_BUDGET_MS = 30_000;

export async function startBundleApiServer(options: BundleApiServerOptions): Promise<BundleApiServer> {
  const bundle = await Bundle.open(options.root);
  let collectedAt: Promise<Date> | undefined = options.collectedAt ? Promise.resolve(options.collectedAt) : undefined;
  const ctx: ServerContext = {
    bundle,
    collectedAt: () => (collectedAt ??= estimateCollectedAt(bundle)),
    address: '127.0.0.1:0',
  };
  const server = createServer((req, res) => void serve(ctx, req, res));
  // Bounds on the transport too: slow or idle clients cannot hold sockets open.
  server.headersTimeout = 10_000;
  server.requestTimeout = REQUEST_BUDGET_MS;
  server.keepAliveTimeout = 5_000;
  const port = await listen(server);
  ctx.address = `127.0.0.1:${port}`;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () => closeServer(server),
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
