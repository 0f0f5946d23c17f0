import { closeSync, read, type Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { TimeSlice } from '../../core/wait.js';
import { compareCodeUnits, indexAfter, sortInSlices, type Bundle } from './apiserver/bundle.js';
import { at, list, nameOf, namespaceOf, num, str, timeOf, type K8sObject } from './apiserver/json.js';

/**
 * bundle_summary: what is unhealthy in a support bundle, in one answer of about 1,500 tokens. Read
 * through the bundle API server's model (the same listings kubectl gets), in time slices, with
 * bounded log reading: each section is capped, most important first, and says how many it left out.
 */

export interface PodProblem {
  pod: string;
  phase: string;
  ready: boolean;
  restarts: number;
  reasons: string[];
}
export interface WarningGroup {
  reason: string;
  count: number;
  last: string;
  message: string;
  /** The first GROUP_OBJECTS distinct objects the events are about. */
  objects: string[];
  /** Set when the events are about more objects than `objects` holds. */
  more_objects?: true;
}
export interface WorkloadProblem {
  kind: string;
  name: string;
  problem: string;
}
export interface NodeProblem {
  node: string;
  problems: string[];
}
export interface LogError {
  file: string;
  line: string;
  matches: number;
}
export interface Section<T> {
  items: T[];
  total: number;
}
export interface BundleSummaryResult {
  healthy: boolean;
  pods: Section<PodProblem>;
  workloads: Section<WorkloadProblem>;
  nodes: Section<NodeProblem>;
  /** `ungrouped`: Warning events whose reason came after the first MAX_GROUPS reasons, counted only. */
  warning_events: Section<WarningGroup> & { ungrouped: number };
  log_errors: Section<LogError> & { files_read: number; pods_with_logs: number };
  collection_errors: Section<string>;
  checked: { pods: number; events: number; workloads: number; nodes: number };
  next: string[];
  text: string;
}

/** The text's budget (about 1,500 tokens); sections shrink from CAP items until it fits. */
export const TEXT_BUDGET = 6000;
const CAP = 10;
const LINE = 200;
/** Log reading bounds: the last LOG_TAIL bytes of at most LOG_FILES files, LOG_PER_FILE lines each. */
const LOG_TAIL = 64 * 1024;
const LOG_FILES = 100;
const LOG_PER_FILE = 3;
const SLICE_MS = 10;
/**
 * Warning events are grouped by reason for the first MAX_GROUPS reasons, then only counted; each group keeps GROUP_OBJECTS
 * objects. One group and one Set per reason held 1.6 KB each: a bundle of 500,000 events of distinct reasons added 800 MB
 * of RSS for an answer that shows 10 groups (attack 18r L1).
 */
export const MAX_GROUPS = 10_000;
const GROUP_OBJECTS = 20;

const LOG_MATCH = /error|fatal|panic|exception/i;
/** A program's flag help (`--logtostderr log to standard error`), not an error. */
const USAGE = /^\s*-{1,2}[A-Za-z][\w-]*[ =]/;
const PRESSURE = ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'NetworkUnavailable'];

const clip = (s: string, n = LINE) => {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
};
const qualified = (o: unknown) => (namespaceOf(o) ? `${namespaceOf(o)}/${nameOf(o)}` : nameOf(o));

/** Objects of a built-in type (preferred version), or [] when the bundle did not collect it. */
async function objects(bundle: Bundle, group: string, plural: string): Promise<readonly K8sObject[]> {
  const t = bundle.registry.preferred(group, plural);
  return t ? bundle.list(t) : [];
}

function conditionOf(o: unknown, type: string): unknown {
  return list(at(o, 'status', 'conditions')).find((c) => str(at(c, 'type')) === type);
}

/** A container status's reasons: waiting/terminated now, and the last termination when it restarted. */
function containerReasons(cs: unknown, init: boolean): string[] {
  const name = `${init ? 'init ' : ''}${str(at(cs, 'name'))}`;
  const out: string[] = [];
  const waiting = at(cs, 'state', 'waiting');
  const terminated = at(cs, 'state', 'terminated');
  const last = at(cs, 'lastState', 'terminated');
  const ended = (t: unknown) => `${str(at(t, 'reason'), 'Terminated')} exit ${num(at(t, 'exitCode'))}`;
  if (waiting !== undefined && str(at(waiting, 'reason')) !== 'ContainerCreating') {
    const msg = str(at(waiting, 'message'));
    out.push(`${name}: ${str(at(waiting, 'reason'), 'Waiting')}${msg ? ` (${clip(msg, 80)})` : ''}`);
  } else if (terminated !== undefined && !(init && num(at(terminated, 'exitCode')) === 0)) {
    if (str(at(terminated, 'reason')) !== 'Completed' || num(at(terminated, 'exitCode')) !== 0) out.push(`${name}: ${ended(terminated)}`);
  }
  if (last !== undefined && num(at(cs, 'restartCount')) > 0) out.push(`${name} last ended: ${ended(last)}`);
  return out;
}

const SEVERE = /CrashLoopBackOff|ImagePullBackOff|ErrImagePull|OOMKilled|Error|CreateContainer|InvalidImageName/;

type RankedProblem = PodProblem & { rank: number };

/** Worst first: rank, then restarts, then the pod's namespace/name by code unit. */
function worseFirst(a: RankedProblem, b: RankedProblem): number {
  return b.rank - a.rank || b.restarts - a.restarts || compareCodeUnits(a.pod, b.pod);
}

/** What podProblems finds: the worst CAP problems (worst first), how many there are. */
interface PodProblems {
  top: RankedProblem[];
  total: number;
  /** Whether any pod is worse than ready with restarts (rank 1). */
  unhealthy: boolean;
}

/** A pod's problem (not ready, and why; or ready but restarted often), or undefined when it has none (Succeeded pods are done). */
function problemOf(pod: K8sObject): RankedProblem | undefined {
  const phase = str(at(pod, 'status', 'phase'), 'Unknown');
  if (phase === 'Succeeded') return undefined;
  const statuses = list(at(pod, 'status', 'containerStatuses'));
  const inits = list(at(pod, 'status', 'initContainerStatuses'));
  const readyCond = str(at(conditionOf(pod, 'Ready'), 'status'));
  const ready = phase === 'Running' && (readyCond ? readyCond === 'True' : statuses.every((c) => at(c, 'ready') === true));
  const restarts = [...statuses, ...inits].reduce<number>((n, c) => n + num(at(c, 'restartCount')), 0);
  if (ready && restarts < 5) return undefined;
  const reasons = [...inits.flatMap((c) => containerReasons(c, true)), ...statuses.flatMap((c) => containerReasons(c, false))];
  const podReason = str(at(pod, 'status', 'reason'));
  if (podReason) reasons.unshift(`${podReason}${str(at(pod, 'status', 'message')) ? `: ${clip(str(at(pod, 'status', 'message')), 100)}` : ''}`);
  const scheduled = conditionOf(pod, 'PodScheduled');
  if (phase === 'Pending' && str(at(scheduled, 'status')) === 'False') reasons.push(`unschedulable: ${clip(str(at(scheduled, 'message'), str(at(scheduled, 'reason'))), 140)}`);
  if (!ready && reasons.length === 0) {
    const msg = str(at(conditionOf(pod, 'Ready'), 'message')) || str(at(conditionOf(pod, 'ContainersReady'), 'message'));
    if (msg) reasons.push(clip(msg, 120));
  }
  const rank = ready ? 1 : phase === 'Failed' || reasons.some((r) => SEVERE.test(r)) ? 4 : phase === 'Pending' ? 3 : 2;
  return { pod: qualified(pod), phase, ready, restarts, reasons: reasons.slice(0, 4), rank };
}

/**
 * Pods not ready (and why), then ready pods that restarted often; Succeeded pods are done, not unhealthy. Only the worst
 * CAP are kept, in order, as the walk finds them (the answer shows no more): all problem pods sorted at the end, with
 * localeCompare, held the loop 3-3.9 s for a million not-ready pods (attack 18an Z5).
 */
async function podProblems(pods: readonly K8sObject[], slice: TimeSlice): Promise<PodProblems> {
  const top: RankedProblem[] = [];
  let unhealthy = false;
  let total = 0;
  for (const pod of pods) {
    await slice.pause();
    const problem = problemOf(pod);
    if (problem === undefined) continue;
    total++;
    unhealthy ||= problem.rank > 1;
    if (top.length === CAP && worseFirst(problem, top[CAP - 1]!) >= 0) continue;
    // After every kept one it does not come before (CAP at most: a few comparisons).
    let place = top.length;
    while (place > 0 && worseFirst(problem, top[place - 1]!) < 0) place--;
    top.splice(place, 0, problem);
    if (top.length > CAP) top.pop();
  }
  return { top, total, unhealthy };
}

/**
 * A pod's rank in podProblems (0: no problem, or not collected), found by a binary search of the pods' listing (sorted by
 * namespace, then name): no map of every problem pod's rank, whose growth past a million entries took 150-220 ms in one step.
 */
function rankIn(pods: readonly K8sObject[], namespace: string, name: string): number {
  const pod = pods[indexAfter(pods, { namespace, name }) - 1];
  return pod !== undefined && namespaceOf(pod) === namespace && nameOf(pod) === name ? (problemOf(pod)?.rank ?? 0) : 0;
}

function eventTime(e: unknown): number {
  for (const v of [at(e, 'series', 'lastObservedTime'), at(e, 'lastTimestamp'), at(e, 'eventTime'), at(e, 'firstTimestamp'), at(e, 'metadata', 'creationTimestamp')]) {
    const t = timeOf(v);
    if (t !== undefined) return t;
  }
  return 0;
}

/**
 * Warning events grouped by reason: how many in all, the newest's message, the objects they are about; newest group first.
 * The first MAX_GROUPS reasons are grouped; events of later reasons are `ungrouped`, counted only.
 */
async function warningGroups(events: readonly K8sObject[], slice: TimeSlice): Promise<{ groups: WarningGroup[]; ungrouped: number }> {
  const groups = new Map<string, { count: number; last: number; message: string; objects: Set<string>; more: boolean }>();
  let ungrouped = 0;
  for (const e of events) {
    await slice.pause();
    if (str(at(e, 'type')) !== 'Warning') continue;
    const reason = str(at(e, 'reason'), 'Unknown');
    const count = Math.max(1, num(at(e, 'series', 'count')) || num(at(e, 'count')));
    let g = groups.get(reason);
    if (!g) {
      if (groups.size >= MAX_GROUPS) {
        ungrouped += count;
        continue;
      }
      g = { count: 0, last: -1, message: '', objects: new Set<string>(), more: false };
      groups.set(reason, g);
    }
    g.count += count;
    const obj = at(e, 'involvedObject') ?? at(e, 'regarding');
    const ns = str(at(obj, 'namespace'));
    const shown = `${str(at(obj, 'kind')).toLowerCase()}/${ns ? `${ns}/` : ''}${str(at(obj, 'name'))}`;
    if (g.objects.size < GROUP_OBJECTS) g.objects.add(shown);
    else if (!g.objects.has(shown)) g.more = true;
    const t = eventTime(e);
    if (t >= g.last) {
      g.last = t;
      g.message = clip(str(at(e, 'message')) || str(at(e, 'note')), 140);
    }
  }
  const sorted = [...groups.entries()]
    .sort((a, b) => b[1].last - a[1].last || b[1].count - a[1].count)
    .map(([reason, g]) => ({
      reason,
      count: g.count,
      last: g.last > 0 ? new Date(g.last).toISOString().replace(/\.\d{3}Z$/, 'Z') : '',
      message: g.message,
      objects: [...g.objects],
      ...(g.more ? { more_objects: true as const } : {}),
    }));
  return { groups: sorted, ungrouped };
}

/** Failed jobs, cronjobs whose last run did not succeed, and workloads with fewer ready than desired. */
async function workloadProblems(bundle: Bundle, slice: TimeSlice): Promise<{ items: WorkloadProblem[]; checked: number }> {
  const items: WorkloadProblem[] = [];
  let checked = 0;
  for (const job of await objects(bundle, 'batch', 'jobs')) {
    await slice.pause();
    checked++;
    const failed = conditionOf(job, 'Failed');
    const owner = list(at(job, 'metadata', 'ownerReferences')).find((o) => str(at(o, 'kind')) === 'CronJob');
    const of = owner ? ` (of cronjob ${str(at(owner, 'name'))})` : '';
    if (str(at(failed, 'status')) === 'True') {
      items.push({ kind: 'job', name: qualified(job), problem: `failed${of}: ${clip(`${str(at(failed, 'reason'))} ${str(at(failed, 'message'))}`, 120)}` });
    } else if (num(at(job, 'status', 'failed')) > 0 && str(at(conditionOf(job, 'Complete'), 'status')) !== 'True') {
      items.push({ kind: 'job', name: qualified(job), problem: `${num(at(job, 'status', 'failed'))} failed pod(s), not complete${of}` });
    }
  }
  for (const cj of await objects(bundle, 'batch', 'cronjobs')) {
    await slice.pause();
    checked++;
    const scheduled = timeOf(at(cj, 'status', 'lastScheduleTime'));
    const succeeded = timeOf(at(cj, 'status', 'lastSuccessfulTime'));
    const running = list(at(cj, 'status', 'active')).length > 0;
    if (scheduled !== undefined && !running && (succeeded === undefined || succeeded < scheduled)) {
      items.push({
        kind: 'cronjob',
        name: qualified(cj),
        problem: `last run (${str(at(cj, 'status', 'lastScheduleTime'))}) did not succeed; last success ${str(at(cj, 'status', 'lastSuccessfulTime'), 'never')}`,
      });
    }
  }
  for (const [plural, kind] of [
    ['deployments', 'deployment'],
    ['statefulsets', 'statefulset'],
    ['daemonsets', 'daemonset'],
  ] as const) {
    for (const w of await objects(bundle, 'apps', plural)) {
      await slice.pause();
      checked++;
      const desired = kind === 'daemonset' ? num(at(w, 'status', 'desiredNumberScheduled')) : num(at(w, 'spec', 'replicas'), 1);
      const ready = num(at(w, 'status', kind === 'daemonset' ? 'numberReady' : 'readyReplicas'));
      if (ready >= desired) continue;
      const unavailable = kind === 'deployment' ? conditionOf(w, 'Available') : undefined;
      const why = str(at(unavailable, 'status')) === 'False' ? `: ${clip(str(at(unavailable, 'message')), 100)}` : '';
      items.push({ kind, name: qualified(w), problem: `${ready}/${desired} ready${why}` });
    }
  }
  return { items, checked };
}

/** Nodes not Ready, under pressure, or cordoned. */
async function nodeProblems(nodes: readonly K8sObject[], slice: TimeSlice): Promise<NodeProblem[]> {
  const out: NodeProblem[] = [];
  for (const node of nodes) {
    await slice.pause();
    const problems: string[] = [];
    const ready = conditionOf(node, 'Ready');
    if (str(at(ready, 'status')) !== 'True') problems.push(`NotReady (${ready === undefined ? 'no Ready condition' : clip(`${str(at(ready, 'reason'))} ${str(at(ready, 'message'))}`, 100)})`);
    for (const type of PRESSURE) {
      const c = conditionOf(node, type);
      if (str(at(c, 'status')) === 'True') problems.push(`${type}${str(at(c, 'message')) ? ` (${clip(str(at(c, 'message')), 80)})` : ''}`);
    }
    if (at(node, 'spec', 'unschedulable') === true) problems.push('cordoned (unschedulable)');
    if (problems.length > 0) out.push({ node: nameOf(node), problems });
  }
  return out;
}

/**
 * Subdirectories of a bundle directory by name (code unit), read through the checked descriptor (the containment every
 * bundle read has). Sorted in slices: a directory used in place has no bound on its entries.
 */
async function subdirs(bundle: Bundle, dir: string, slice: TimeSlice): Promise<string[]> {
  const opened = bundle.cache.open(dir, 'directory');
  if (!opened) return [];
  try {
    const entries: Dirent[] = await readdir(`/proc/self/fd/${opened.fd}`, { withFileTypes: true });
    const names = entries.filter((e) => e.isDirectory()).map((e) => e.name);
    return await sortInSlices(names, compareCodeUnits, slice);
  } catch {
    return [];
  } finally {
    closeSync(opened.fd);
  }
}

const readAt = promisify(read);

/** The last LOG_TAIL bytes of a bundle file (from its first whole line), or undefined when it is not a file inside the bundle. */
async function tailOf(bundle: Bundle, file: string): Promise<string | undefined> {
  const opened = bundle.cache.open(file, 'file');
  if (!opened) return undefined;
  try {
    const len = Math.min(LOG_TAIL, opened.stats.size);
    const buf = Buffer.alloc(len);
    const { bytesRead } = await readAt(opened.fd, buf, 0, len, opened.stats.size - len);
    const text = buf.subarray(0, bytesRead).toString('utf8');
    return len < opened.stats.size ? text.slice(text.indexOf('\n') + 1) : text;
  } catch {
    return undefined;
  } finally {
    closeSync(opened.fd);
  }
}

/** A line's shape for de-duplication: digits, hex ids and times blanked. */
const shape = (line: string) => line.replace(/[0-9a-f]{8,}/gi, '#').replace(/\d+/g, '0');

/**
 * Error lines of the collected pod logs (`pods/logs/<ns>/<pod>/<container>[-previous].log`): unhealthy pods' logs first
 * (podProblems' rank of each, found in `pods`, the pods' listing), previous containers' before current ones, at most LOG_FILES files and
 * LOG_TAIL bytes of each, the last few distinct lines per file.
 */
async function logErrors(bundle: Bundle, pods: readonly K8sObject[], slice: TimeSlice): Promise<{ items: LogError[]; read: number; total: number }> {
  const base = path.join(bundle.clusterDir, 'pods', 'logs');
  const logged: Array<{ ns: string; pod: string; rank: number }> = [];
  for (const ns of await subdirs(bundle, base, slice)) {
    for (const pod of await subdirs(bundle, path.join(base, ns), slice)) {
      await slice.pause();
      logged.push({ ns, pod, rank: rankIn(pods, ns, pod) });
    }
    await slice.pause();
  }
  // Pods' directories are listed worst first, only until LOG_FILES logs are found: a bundle of 60,000 pods costs 100 reads, not
  // 60,000. Sorted in slices (a directory used in place has no bound on its pods).
  const worstFirst = await sortInSlices(logged, (a, b) => b.rank - a.rank, slice);
  const files: Array<{ file: string; rank: number }> = [];
  for (const { ns, pod, rank } of worstFirst) {
    if (files.length >= LOG_FILES) break;
    await slice.pause();
    for (const name of await bundle.cache.listDir(path.join(base, ns, pod))) {
      if (name.endsWith('.log')) files.push({ file: path.join(base, ns, pod, name), rank: rank * 2 + (name.endsWith('-previous.log') ? 1 : 0) });
    }
  }
  // In slices too: one pod's directory may hold any number of logs.
  const ordered = await sortInSlices(files, (a, b) => b.rank - a.rank || compareCodeUnits(a.file, b.file), slice);
  const items: LogError[] = [];
  const seen = new Set<string>();
  let read = 0;
  for (const { file } of ordered.slice(0, LOG_FILES)) {
    const text = await tailOf(bundle, file);
    read++;
    if (text === undefined) continue;
    const lines = text.split('\n');
    const picked: string[] = [];
    let matches = 0;
    for (let i = lines.length - 1; i >= 0; i--) {
      if (i % 512 === 0) await slice.pause();
      const line = lines[i]!;
      if (!LOG_MATCH.test(line) || USAGE.test(line)) continue;
      matches++;
      const key = shape(line.slice(0, LINE));
      if (picked.length >= LOG_PER_FILE || seen.has(key)) continue;
      seen.add(key);
      picked.push(clip(line));
    }
    const rel = path.relative(bundle.baseDir, file);
    // The newest lines are found first; shown in the log's order.
    for (const line of picked.reverse()) items.push({ file: rel, line, matches });
  }
  return { items, read, total: files.length };
}

/**
 * The bundle's collection errors (`*-errors.json` files, and `*-errors` directories of per-namespace files) and its
 * unreadable files: one line per place and message, the same message of several files counted once.
 */
async function collectionErrors(bundle: Bundle, slice: TimeSlice): Promise<string[]> {
  const found = new Map<string, number>();
  const describe = async (label: string, file: string) => {
    const raw = await bundle.cache.loadRaw(file);
    const messages = new Set<string>();
    if (typeof at(raw, 'kind') === 'string') messages.add(`holds a ${str(at(raw, 'kind'))}, not errors`);
    else
      for (const m of Array.isArray(raw) ? raw : raw !== null && typeof raw === 'object' ? Object.values(raw) : raw === undefined ? [] : [raw])
        messages.add(clip(typeof m === 'string' ? m : (JSON.stringify(m) ?? ''), 120));
    for (const m of messages) if (m) found.set(`${label}: ${m}`, (found.get(`${label}: ${m}`) ?? 0) + 1);
  };
  for (const dir of [bundle.clusterDir, bundle.baseDir]) {
    const rel = (...parts: string[]) => path.relative(bundle.baseDir, path.join(dir, ...parts));
    for (const name of await bundle.cache.listDir(dir)) if (/-errors\.json$/.test(name)) await describe(rel(name), path.join(dir, name));
    for (const name of await subdirs(bundle, dir, slice)) {
      if (!/-errors(\.json)?$/.test(name)) continue;
      for (const f of await bundle.cache.listDir(path.join(dir, name))) await describe(`${rel(name)}/`, path.join(dir, name, f));
    }
  }
  const lines = [...found.entries()].map(([line, n]) => (n > 1 ? `${line} (${n} files)` : line));
  for (const problem of bundle.cache.problems.values()) lines.push(`unreadable: ${clip(problem, 160)}`);
  return lines;
}

/** Summarizes the bundle's health; `bundleName` names it in the text. */
export async function summarizeBundle(bundle: Bundle, bundleName: string): Promise<BundleSummaryResult> {
  const slice = new TimeSlice(SLICE_MS);
  const [pods, events, nodes] = await Promise.all([objects(bundle, '', 'pods'), objects(bundle, '', 'events'), objects(bundle, '', 'nodes')]);
  const podItems = await podProblems(pods, slice);
  const { groups: warnings, ungrouped } = await warningGroups(events, slice);
  const workloads = await workloadProblems(bundle, slice);
  const nodeItems = await nodeProblems(nodes, slice);
  const logs = await logErrors(bundle, pods, slice);
  const errors = await collectionErrors(bundle, slice);
  const all = {
    pods: podItems.top.map(({ rank: _rank, ...p }) => p),
    warning_events: warnings,
    workloads: workloads.items,
    nodes: nodeItems,
    log_errors: logs.items,
    collection_errors: errors,
  };
  const checked = { pods: pods.length, events: events.length, workloads: workloads.checked, nodes: nodes.length };
  const healthy = !podItems.unhealthy && warnings.length === 0 && ungrouped === 0 && workloads.items.length === 0 && nodeItems.length === 0;
  // The largest caps whose text fits the budget; the structured fields hold what the text shows.
  for (const cap of [CAP, 8, 6, 5, 4, 3, 2, 1]) {
    const capped = {
      pods: { items: all.pods.slice(0, cap), total: podItems.total },
      warning_events: { ...section(all.warning_events, cap), ungrouped },
      workloads: section(all.workloads, cap),
      nodes: section(all.nodes, cap),
      log_errors: { ...section(all.log_errors, cap), files_read: logs.read, pods_with_logs: logs.total },
      collection_errors: section(all.collection_errors, Math.min(cap, 5)),
    };
    const next = nextSteps(capped);
    const result = { healthy, ...capped, checked, next, text: '' };
    result.text = render(result, bundleName);
    if (result.text.length <= TEXT_BUDGET || cap === 1) return result;
  }
  throw new Error('unreachable');
}

function section<T>(items: T[], cap: number): Section<T> {
  return { items: items.slice(0, cap), total: items.length };
}

/** What to look at next: the worst pod's describe and log, the newest warning's object, a failed job. */
function nextSteps(s: Pick<BundleSummaryResult, 'pods' | 'warning_events' | 'workloads' | 'nodes' | 'log_errors'>): string[] {
  const next: string[] = [];
  const describe = (kind: string, qualifiedName: string) => {
    const [ns, name] = qualifiedName.includes('/') ? qualifiedName.split('/') : ['', qualifiedName];
    return `kubectl describe ${kind} ${name}${ns ? ` -n ${ns}` : ''}`;
  };
  for (const p of s.pods.items.filter((x) => !x.ready).slice(0, 2)) next.push(describe('pod', p.pod));
  const podLog = s.log_errors.items.find((l) => s.pods.items.some((p) => l.file.includes(`/logs/${p.pod}/`))) ?? s.log_errors.items[0];
  if (podLog) next.push(`read_file ${podLog.file}`);
  const w = s.workloads.items[0];
  if (w) next.push(describe(w.kind, w.name));
  const n = s.nodes.items[0];
  if (n) next.push(describe('node', n.node));
  if (s.warning_events.total > 0 || s.warning_events.ungrouped > 0) next.push('kubectl get events -A --field-selector type=Warning');
  return [...new Set(next)].slice(0, 5);
}

function more(s: Section<unknown>): string[] {
  return s.total > s.items.length ? [`  and ${s.total - s.items.length} more`] : [];
}

function render(r: Omit<BundleSummaryResult, 'text'>, bundleName: string): string {
  const out: string[] = [];
  const notReady = r.pods.items.filter((p) => !p.ready).length;
  out.push(
    `Bundle ${bundleName}: ${r.healthy ? 'no unhealthy pods, workloads or nodes found' : 'unhealthy'} (${r.checked.pods} pods, ${r.checked.events} events, ${r.checked.workloads} workloads, ${r.checked.nodes} nodes checked)`,
  );
  out.push('', `Pods (${r.pods.total}${notReady < r.pods.items.length ? ', incl. ready ones restarted 5+ times' : ''}):`);
  if (r.pods.total === 0) out.push('  all ready or completed');
  for (const p of r.pods.items) out.push('  ' + clip(`${p.pod} ${p.phase}${p.ready ? ' (ready)' : ' not ready'}, ${p.restarts} restarts${p.reasons.length ? `: ${p.reasons.join('; ')}` : ''}`, 260));
  out.push(...more(r.pods));
  out.push('', `Warning events by reason (${r.warning_events.total}), newest first:`);
  if (r.warning_events.total === 0 && r.warning_events.ungrouped === 0) out.push('  none');
  for (const g of r.warning_events.items) {
    const objs = g.objects.slice(0, 2).join(', ') + (g.objects.length > 2 ? ` +${g.objects.length - 2}${g.more_objects ? ' or more' : ''}` : '');
    out.push('  ' + clip(`${g.reason} ×${g.count} (last ${g.last || '?'}) on ${objs}: ${g.message}`, 260));
  }
  out.push(...more(r.warning_events));
  if (r.warning_events.ungrouped > 0) out.push(`  and ${r.warning_events.ungrouped} more events of reasons past the first ${MAX_GROUPS}, counted only`);
  out.push('', `Workloads (${r.workloads.total}):`);
  if (r.workloads.total === 0) out.push('  no failed jobs; deployments, statefulsets and daemonsets have their replicas ready');
  for (const w of r.workloads.items) out.push('  ' + clip(`${w.kind} ${w.name}: ${w.problem}`, 220));
  out.push(...more(r.workloads));
  out.push('', `Nodes (${r.nodes.total}):`);
  if (r.nodes.total === 0) out.push(`  ${r.checked.nodes === 0 ? 'no nodes collected' : 'all Ready, no pressure, none cordoned'}`);
  for (const n of r.nodes.items) out.push('  ' + clip(`${n.node}: ${n.problems.join('; ')}`, 220));
  out.push(...more(r.nodes));
  out.push('', `Pod log error lines (${r.log_errors.total}, from ${r.log_errors.files_read} logs of ${r.log_errors.pods_with_logs} pods, last ${LOG_TAIL / 1024} KiB each):`);
  if (r.log_errors.total === 0) out.push('  none');
  let file = '';
  for (const l of r.log_errors.items) {
    if (l.file !== file) out.push(`  ${l.file} (${l.matches} matching):`);
    file = l.file;
    out.push(`    ${l.line}`);
  }
  out.push(...more(r.log_errors));
  out.push('', `Collection errors (${r.collection_errors.total}):`);
  if (r.collection_errors.total === 0) out.push('  none');
  for (const e of r.collection_errors.items) out.push(`  ${e}`);
  out.push(...more(r.collection_errors));
  if (r.next.length > 0) out.push('', 'Next:', ...r.next.map((n) => `  ${n}`));
  return out.join('\n');
}
