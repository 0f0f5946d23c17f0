import { closeSync, createReadStream, read } from 'node:fs';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import type { Bundle } from './bundle.js';
import { at, list, str } from './json.js';
import { badRequest, failure, notFound, sendStatus, warningHeader } from './status.js';

/**
 * `GET /api/v1/namespaces/{ns}/pods/{name}/log`, served from
 * `cluster-resources/pods/logs/<ns>/<pod>/<container>[-previous].log`.
 * Honours container, previous, tailLines and limitBytes; follow just returns what was
 * collected (a snapshot never grows); timestamps and since* cannot be honoured because
 * collected logs carry no per-line times, so they are refused (400), never ignored. The log file
 * is read only when it leads to a file inside the bundle (the containment read_file uses), through
 * the descriptor that was checked (a log swapped for a link after the check is never read).
 */
export interface LogQuery {
  container?: string;
  previous: boolean;
  tailLines?: number;
  limitBytes?: number;
}

// Names come from the URL and become path segments: allow only Kubernetes name characters.
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function parseLogQuery(q: URLSearchParams): LogQuery | string {
  // Refused rather than ignored: an answer that silently dropped the filter would be untrue.
  for (const key of ['sinceSeconds', 'sinceTime']) {
    if (q.get(key)) return `${key} cannot be honoured: the logs in a support bundle carry no per-line times; use tailLines (kubectl logs --tail N)`;
  }
  if (q.get('timestamps') === 'true') return 'timestamps cannot be honoured: the logs in a support bundle carry no per-line times';
  const int = (key: string): number | undefined | string => {
    const v = q.get(key);
    if (v === null || v === '') return undefined;
    return /^\d+$/.test(v) ? Number(v) : `${key} must be a non-negative integer, got "${v}"`;
  };
  const tailLines = int('tailLines');
  const limitBytes = int('limitBytes');
  if (typeof tailLines === 'string') return tailLines;
  if (typeof limitBytes === 'string') return limitBytes;
  const previous = q.get('previous');
  return { container: q.get('container') || undefined, previous: previous === 'true' || previous === '1', tailLines, limitBytes };
}

/** Containers of a pod object, or (when the pod object was not collected) those with log files. */
async function containerNames(bundle: Bundle, pod: unknown, dir: string): Promise<{ app: string[]; init: string[] }> {
  if (pod !== undefined) {
    const names = (key: string) =>
      list(at(pod, 'spec', key))
        .map((c) => str(at(c, 'name')))
        .filter(Boolean);
    return { app: [...names('containers'), ...names('ephemeralContainers')], init: names('initContainers') };
  }
  const files = await bundle.cache.listDir(dir);
  const app = files.filter((f) => f.endsWith('.log') && !f.endsWith('-previous.log')).map((f) => f.slice(0, -4));
  return { app, init: [] };
}

/** The container the request means, or the 400 message a real API server would give. */
function chooseContainer(podName: string, requested: string | undefined, c: { app: string[]; init: string[] }): string | { error: string } {
  const all = [...c.app, ...c.init];
  if (requested !== undefined) {
    return all.includes(requested) ? requested : { error: `container ${requested} is not valid for pod ${podName}` };
  }
  if (c.app.length === 1) return c.app[0]!;
  let msg = `a container name must be specified for pod ${podName}, choose one of: [${c.app.join(' ')}]`;
  if (c.init.length > 0) msg += ` or one of the init containers: [${c.init.join(' ')}]`;
  return { error: msg };
}

/** `signal` aborts when the answer will not be read (server.ts): the search for the tail stops, and its descriptor is closed. */
export async function serveLog(bundle: Bundle, namespace: string, podName: string, query: LogQuery, res: ServerResponse, signal: AbortSignal): Promise<void> {
  if (!SAFE_NAME.test(namespace) || !SAFE_NAME.test(podName)) return sendStatus(res, notFound('pods', podName));
  const podsType = bundle.registry.find('', 'v1', 'pods');
  const pod = podsType ? await bundle.get(podsType, namespace, podName) : undefined;
  const dir = path.join(bundle.clusterDir, 'pods', 'logs', namespace, podName);
  const names = await containerNames(bundle, pod, dir);
  if (pod === undefined && names.app.length === 0) return sendStatus(res, notFound('pods', podName));

  const container = chooseContainer(podName, query.container, names);
  if (typeof container !== 'string') return sendStatus(res, badRequest(container.error));
  if (!SAFE_NAME.test(container)) return sendStatus(res, badRequest(`container ${container} is not valid for pod ${podName}`));

  // The same containment as read_file: a log that is a link out of the bundle was not collected.
  const opened = bundle.cache.open(path.join(dir, `${container}${query.previous ? '-previous' : ''}.log`), 'file');
  if (!opened) {
    if (query.previous) return sendStatus(res, badRequest(`previous terminated container "${container}" in pod "${podName}" not found`));
    return sendStatus(
      res,
      failure(404, 'NotFound', `the log of container "${container}" in pod "${podName}" was not collected in this support bundle`, {
        name: podName,
        kind: 'pods',
      }),
    );
  }
  const { fd, stats: info } = opened;
  let streaming = false;
  try {
    // From where the tail starts (or the start), to the byte limit: streamed from the file, never
    // held (a tail of one line of 1.5 GB was read into memory whole, 3 GB, to answer 10 bytes).
    const tail = query.tailLines !== undefined ? await tailStart(fd, info.size, query.tailLines, signal) : { start: 0, cut: false };
    const start = tail.start;
    if (tail.cut)
      res.appendHeader('Warning', warningHeader(`fewer than ${query.tailLines} lines end in the last ${TAIL_SEARCH_BYTES / MiB} MiB of this log: the answer starts there, possibly inside a line`));
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    const stop = query.limitBytes !== undefined ? Math.min(start + query.limitBytes, info.size) : info.size;
    if (stop <= start) return void res.end();
    streaming = true;
    await pipeline(createReadStream('', { fd, start, end: stop - 1, autoClose: true }), res);
  } finally {
    if (!streaming) closeSync(fd);
  }
}

const readAt = promisify(read);

const CHUNK = 64 * 1024;
const MiB = 1024 * 1024;

/**
 * How far back from its end a log is searched for the lines asked for. Unbounded, `--tail 1` of a
 * 20 GB log without a newline read all of it, minutes a request (attack 18r L3).
 */
export const TAIL_SEARCH_BYTES = 64 * MiB;

/**
 * Where the last `lines` lines of the file open on `fd` (`size` bytes) start: read backwards a
 * chunk at a time into one buffer, nothing kept, so a tail of a large log (or of one long line)
 * costs no memory; the caller streams from there. At most TAIL_SEARCH_BYTES are searched: `cut`
 * when the lines were not all found there, and the tail starts where the search stopped. An
 * aborted `signal` stops the search (the abort is thrown).
 */
export async function tailStart(fd: number, size: number, lines: number, signal?: AbortSignal): Promise<{ start: number; cut: boolean }> {
  if (lines === 0) return { start: size, cut: false };
  const buf = Buffer.alloc(CHUNK);
  const floor = Math.max(0, size - TAIL_SEARCH_BYTES);
  let pos = size;
  let found = 0;
  while (pos > floor) {
    signal?.throwIfAborted();
    const len = Math.min(CHUNK, pos - floor);
    pos -= len;
    await readAt(fd, buf, 0, len, pos);
    for (let i = buf.lastIndexOf(0x0a, len - 1); i >= 0; i = i > 0 ? buf.lastIndexOf(0x0a, i - 1) : -1) {
      // A newline as the file's last byte ends the last line rather than starting an empty one.
      if (pos + i === size - 1) continue;
      if (++found === lines) return { start: pos + i + 1, cut: false };
    }
  }
  return { start: floor, cut: floor > 0 };
}
