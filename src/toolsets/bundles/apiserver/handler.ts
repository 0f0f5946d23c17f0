import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Bundle } from './bundle.js';
import { printerFor } from './columns/index.js';
import { apiVersions, type Discovery } from './discovery.js';
import type { K8sObject } from './json.js';
import { isDescribe, isEventType, shiftEventTimes } from './describe-clock.js';
import { ResourceFileError } from './loader.js';
import { parseLogQuery, serveLog } from './logs.js';
import { groupVersion, type ResourceType } from './resources.js';
import { route, type ResourceRoute } from './router.js';
import { labelsOf, matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector, SelectorError } from './selectors.js';
import { sendJson } from '../../../mcp/rest.js';
import { badRequest, failure, methodNotAllowed, notFound, pathNotFound, sendStatus, warningHeader } from './status.js';
import { buildTable, parseIncludeObject, partialObjectMetadata, tableHead, tableRow, wantsPartialMetadata, wantsTable } from './table.js';
import { parsePageQuery, selectPage, sendListJson, type Page } from './paging.js';
import { TimeSlice } from '../../../core/wait.js';
import { jsonSliced } from '../../../core/json-sliced.js';

export interface ServerContext {
  bundle: Bundle;
  /** The bundle's discovery answers, made once (discovery.ts). */
  discovery: Discovery;
  /** The reference time for ages, computed once on first use. */
  collectedAt(): Promise<Date>;
  /** host:port this server is reachable at, for /api's serverAddressByClientCIDRs. */
  address: string;
}

// Nothing in a snapshot changes, so there is no stream to watch; say so instead of hanging.
const RESOURCE_VERSION = '1';

/** Main-thread time a list request works before other requests get a turn (TimeSlice). */
const SLICE_MS = 10;

/**
 * Answers one request. A resource file past a bound is answered its Status; other failures become Status objects in server.ts.
 * `signal` aborts when the answer will not be read (server.ts): long work stops at its next pause.
 */
export async function handle(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> {
  try {
    await answer(ctx, req, res, signal);
  } catch (err) {
    if (!(err instanceof ResourceFileError) || res.headersSent) throw err;
    sendStatus(res, err.status);
  }
}

async function answer(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> {
  const method = req.method ?? 'GET';
  if (method !== 'GET' && method !== 'HEAD') {
    // Drain any body so the connection stays usable, then refuse: the bundle is read-only.
    req.resume();
    return sendStatus(res, methodNotAllowed(`${method} is not supported: this API server serves a read-only support bundle`));
  }
  const url = new URL(req.url ?? '/', 'http://localhost');
  const r = route(url.pathname);
  switch (r.kind) {
    case 'root':
      return sendJson(res, 200, { paths: ['/api', '/api/v1', '/apis', '/healthz', '/livez', '/readyz', '/version'] });
    case 'health':
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      return void res.end('ok');
    case 'version': {
      const info = await ctx.bundle.version();
      return info ? sendJson(res, 200, info) : sendStatus(res, failure(404, 'NotFound', 'this support bundle has no cluster-info/cluster_version.json'));
    }
    case 'openapi':
      // kubectl explain needs OpenAPI; a bundle has none, and a prompt 404 lets kubectl fail cleanly.
      return sendStatus(res, failure(404, 'NotFound', 'OpenAPI documents are not available from a support bundle'));
    case 'api':
      return sendJson(res, 200, apiVersions(ctx.address));
    case 'apis': {
      const notice = ctx.bundle.registry.notice;
      if (notice !== undefined) res.appendHeader('Warning', warningHeader(notice));
      return sendText(res, ctx.discovery.groupList());
    }
    case 'group': {
      const g = ctx.discovery.group(r.group);
      return g ? sendText(res, g) : sendStatus(res, pathNotFound());
    }
    case 'groupVersion': {
      const doc = ctx.discovery.resourceList(r.group, r.version);
      if (doc) return sendText(res, doc);
      const empty = { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: r.version, resources: [] };
      return r.group === '' && r.version === 'v1' ? sendJson(res, 200, empty) : sendStatus(res, pathNotFound());
    }
    case 'resource':
      return handleResource(ctx, r, url.searchParams, req, res, signal);
    case 'unknown':
      return sendStatus(res, pathNotFound());
  }
}

/** A JSON answer already serialized (discovery's, kept). */
function sendText(res: ServerResponse, json: Buffer): void {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': json.length });
  res.end(json);
}

async function handleResource(ctx: ServerContext, r: ResourceRoute, q: URLSearchParams, req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> {
  const t = ctx.bundle.registry.find(r.group, r.version, r.plural);
  if (!t || (r.namespace !== undefined && !t.namespaced)) return sendStatus(res, pathNotFound());
  if (r.watch || q.get('watch') === 'true' || q.get('watch') === '1') {
    return sendStatus(res, methodNotAllowed('watch is not supported: a support bundle is a snapshot and never changes'));
  }
  if (r.name === undefined) return handleList(ctx, t, r.namespace, q, req, res, signal);
  if (r.subresource === 'log' && t.group === '' && t.plural === 'pods') {
    const query = parseLogQuery(q);
    if (typeof query === 'string') return sendStatus(res, badRequest(query));
    return serveLog(ctx.bundle, r.namespace ?? 'default', r.name, query, res, signal);
  }
  if (r.subresource !== undefined && r.subresource !== 'status') return sendStatus(res, pathNotFound());
  const namespace = t.namespaced ? r.namespace : undefined;
  const obj = await ctx.bundle.get(t, namespace, r.name);
  // The files' problems say why an object may be missing (a file skipped, an object left out).
  for (const w of await ctx.bundle.warnings(t, namespace)) res.appendHeader('Warning', warningHeader(w));
  if (!obj) return sendStatus(res, notFound(t.plural, r.name, t.group));
  return sendObject(ctx, t, obj, req, q, res, signal);
}

async function handleList(ctx: ServerContext, t: ResourceType, namespace: string | undefined, q: URLSearchParams, req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> {
  const slices = { slice: new TimeSlice(SLICE_MS), signal };
  let page: Page;
  try {
    const labels = parseLabelSelector(q.get('labelSelector') ?? '');
    const fields = parseFieldSelector(q.get('fieldSelector') ?? '');
    const paging = parsePageQuery(q, RESOURCE_VERSION);
    if ('kind' in paging) return sendStatus(res, paging);
    const filtered = labels.length > 0 || fields.length > 0;
    page = await selectPage(await ctx.bundle.list(t, namespace), (o) => matchesLabels(labelsOf(o), labels) && matchesFields(o, fields), filtered, paging, RESOURCE_VERSION, slices);
  } catch (err) {
    if (err instanceof SelectorError) return sendStatus(res, badRequest(err.message));
    throw err;
  }
  for (const w of await ctx.bundle.warnings(t, namespace)) res.appendHeader('Warning', warningHeader(w));
  const metadata = {
    resourceVersion: RESOURCE_VERSION,
    ...(page.continue !== undefined ? { continue: page.continue } : {}),
    ...(page.remainingItemCount !== undefined ? { remainingItemCount: page.remainingItemCount } : {}),
  };
  const accept = req.headers.accept;
  const tableVersion = wantsTable(accept);
  if (tableVersion) {
    const opts = { now: await ctx.collectedAt(), includeObject: parseIncludeObject(q.get('includeObject')), version: tableVersion, resourceVersion: RESOURCE_VERSION };
    const printer = printerFor(t);
    return sendListJson(res, { ...tableHead(printer, opts), metadata }, 'rows', page.items, (o) => tableRow(printer, o, opts), slices);
  }
  if (wantsPartialMetadata(accept)) {
    return sendListJson(res, { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata }, 'items', page.items, partialObjectMetadata, slices);
  }
  const offset = isEventType(t) && isDescribe(req) ? Date.now() - (await ctx.collectedAt()).getTime() : undefined;
  const toJson = offset === undefined ? (o: K8sObject) => o : (o: K8sObject) => shiftEventTimes([o], offset)[0];
  return sendListJson(res, { kind: `${t.kind}List`, apiVersion: groupVersion(t), metadata }, 'items', page.items, toJson, slices);
}

async function sendObject(ctx: ServerContext, t: ResourceType, obj: K8sObject, req: IncomingMessage, q: URLSearchParams, res: ServerResponse, signal: AbortSignal): Promise<void> {
  const accept = req.headers.accept;
  const tableVersion = wantsTable(accept);
  if (tableVersion) {
    const opts = { now: await ctx.collectedAt(), includeObject: parseIncludeObject(q.get('includeObject')), version: tableVersion, resourceVersion: RESOURCE_VERSION };
    return sendSliced(res, buildTable(printerFor(t), [obj], opts), signal);
  }
  if (wantsPartialMetadata(accept)) return sendSliced(res, partialObjectMetadata(obj), signal);
  if (isEventType(t) && isDescribe(req)) obj = shiftEventTimes([obj], Date.now() - (await ctx.collectedAt()).getTime())[0]!;
  return sendSliced(res, obj, signal);
}

/**
 * One object's answer, serialized in slices (core/json-sliced): an object just under the bound on one (parse.ts
 * MAX_OBJECT_BYTES, a ConfigMap of 330,000 keys) took one JSON.stringify of 230 ms on every get (attack 18an Z2).
 */
async function sendSliced(res: ServerResponse, body: unknown, signal: AbortSignal): Promise<void> {
  const slice = new TimeSlice(SLICE_MS);
  const text = await jsonSliced(body, {
    over: () => slice.over(),
    pause: async () => {
      await slice.pause();
      signal.throwIfAborted();
    },
  });
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
