import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from '../../../test/helpers/client.js';
import { tempDir } from '../../../test/helpers/programs.js';
import { Bundle, findBaseDir } from './apiserver/bundle.js';
import { BUNDLE_2022, BUNDLE_2025, extractFixture, FIXTURES } from './apiserver/testkit.js';
import { summarizeBundle, TEXT_BUDGET, type BundleSummaryResult } from './summary.js';
import { longestBlock } from '../../../test/helpers/stall.js';

const roots: string[] = [];
afterAll(async () => {
  await Promise.all(roots.map((r) => rm(r, { recursive: true, force: true })));
});

async function summaryOf(root: string): Promise<BundleSummaryResult> {
  return summarizeBundle(await Bundle.open(root), 'test');
}

async function extracted(archive: string): Promise<{ root: string; base: string }> {
  const root = await extractFixture(archive);
  roots.push(root);
  return { root, base: await findBaseDir(root) };
}

/** Adds objects to a bundle list file (its items may be null). */
function addItems(file: string, items: unknown[]): void {
  const list = JSON.parse(readFileSync(file, 'utf8')) as { items: unknown[] | null };
  list.items = [...(list.items ?? []), ...items];
  writeFileSync(file, JSON.stringify(list));
}

const meta = (name: string, namespace = 'default') => ({ name, namespace, uid: `uid-${name}`, creationTimestamp: '2025-04-11T18:40:00Z' });

function pod(name: string, status: Record<string, unknown>, containers = ['app']): unknown {
  return { kind: 'Pod', apiVersion: 'v1', metadata: meta(name), spec: { containers: containers.map((c) => ({ name: c, image: `${c}:1` })) }, status };
}

describe('bundle_summary on the fixture bundles as collected', () => {
  it('2022 (k3s): the ready pods restarted hundreds of times, the BackOff event, the panics and fatals in their previous logs', async () => {
    const { root } = await extracted(BUNDLE_2022);
    const s = await summaryOf(root);
    expect(s.text.length).toBeLessThan(TEXT_BUDGET);
    const provisioner = s.pods.items.find((p) => p.pod === 'kube-system/local-path-provisioner-7b7dc8d6f5-45btl')!;
    expect(provisioner).toMatchObject({ ready: true, restarts: 189, reasons: ['local-path-provisioner last ended: Error exit 1'] });
    expect(s.pods.items[0]!.restarts).toBeGreaterThanOrEqual(s.pods.items.at(-1)!.restarts);
    expect(s.warning_events.items).toEqual([expect.objectContaining({ reason: 'BackOff', count: 1, objects: ['pod/default/static-hi'] })]);
    expect(s.log_errors.items.map((l) => l.line).join('\n')).toMatch(/^panic: unable to load configmap/m);
    expect(s.log_errors.items.some((l) => /level=fatal msg="Error starting daemon/.test(l.line) && l.file.endsWith('local-path-provisioner-previous.log'))).toBe(true);
    // A program's flag help is not an error line.
    expect(s.text).not.toMatch(/log to standard error/);
    expect(s.nodes.total).toBe(0);
    expect(s.text).toMatch(/^Nodes \(0\):\n {2}all Ready, no pressure, none cordoned$/m);
    expect(s.text).toMatch(/^Collection errors \(0\):\n {2}none$/m);
    expect(s.text).toMatch(/^ {2}BackOff ×1 \(last 2022-12-21T16:43:09Z\) on pod\/default\/static-hi: Back-off restarting failed container$/m);
    expect(s.text).toMatch(/read_file cluster-resources\/pods\/logs\/kube-system\/.*-previous\.log/);
  });

  it('2025 (k3s): no failing pods, the warning events grouped by reason newest first, the collection errors', async () => {
    const { root } = await extracted(BUNDLE_2025);
    const s = await summaryOf(root);
    expect(s.text.length).toBeLessThan(TEXT_BUDGET);
    expect(s.pods.total).toBe(0);
    expect(s.text).toMatch(/^Pods \(0\):\n {2}all ready or completed$/m);
    const byReason = Object.fromEntries(s.warning_events.items.map((g) => [g.reason, g]));
    expect(byReason.Unhealthy).toMatchObject({ count: 8, objects: ['pod/kube-system/metrics-server-6f4c6675d5-k9zz8'], message: 'Readiness probe failed: HTTP probe failed with statuscode: 500' });
    expect(byReason.FailedMount!.count).toBe(8);
    expect(byReason.FailedMount!.objects).toContain('pod/kube-system/coredns-ff8999cc5-6rpll');
    expect(byReason.BackOff).toMatchObject({ count: 2, objects: ['pod/kube-system/helm-install-traefik-z5src'] });
    const times = s.warning_events.items.map((g) => g.last);
    expect(times).toEqual([...times].sort().reverse());
    expect(s.warning_events.items[0]!.reason).toBe('FailedToCreateEndpoint');
    expect(s.collection_errors.items).toContain('cluster-resources/pod-disruption-budgets-errors.json: the server could not find the requested resource');
    expect(s.workloads.total).toBe(0);
    expect(s.healthy).toBe(false);
  });
});

describe('bundle_summary on a bundle made unhealthy', () => {
  let s: BundleSummaryResult;
  beforeAll(async () => {
    const { base } = await extracted(BUNDLE_2025);
    const cr = path.join(base, 'cluster-resources');
    addItems(path.join(cr, 'pods', 'default.json'), [
      pod('web-1', {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady' }],
        containerStatuses: [
          {
            name: 'web',
            ready: false,
            restartCount: 7,
            state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 5m0s restarting failed container=web' } },
            lastState: { terminated: { reason: 'Error', exitCode: 3 } },
          },
        ],
      }),
      pod(
        'worker-0',
        {
          phase: 'Running',
          conditions: [{ type: 'Ready', status: 'False' }],
          containerStatuses: [
            { name: 'worker', ready: false, restartCount: 2, state: { running: {} }, lastState: { terminated: { reason: 'OOMKilled', exitCode: 137 } } },
            { name: 'sidecar', ready: true, restartCount: 0, state: { running: {} } },
          ],
        },
        ['worker', 'sidecar'],
      ),
      pod('big-0', { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/1 nodes are available: 1 Insufficient memory.' }] }),
    ]);
    addItems(path.join(cr, 'events', 'default.json'), [
      {
        kind: 'Event',
        metadata: meta('worker-0.oom'),
        type: 'Warning',
        reason: 'OOMKilling',
        message: 'Memory cgroup out of memory: Killed process 4242 (worker)',
        count: 3,
        lastTimestamp: '2025-04-11T19:00:00Z',
        involvedObject: { kind: 'Pod', namespace: 'default', name: 'worker-0' },
      },
    ]);
    addItems(path.join(cr, 'jobs', 'default.json'), [
      {
        kind: 'Job',
        metadata: meta('migrate'),
        spec: {},
        status: { failed: 6, conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }] },
      },
    ]);
    const nodes = JSON.parse(readFileSync(path.join(cr, 'nodes.json'), 'utf8')) as { items: Array<{ spec: Record<string, unknown>; status: { conditions: Array<Record<string, string>> } }> };
    const node = nodes.items[0]!;
    node.spec.unschedulable = true;
    node.status.conditions.find((c) => c.type === 'MemoryPressure')!.status = 'True';
    node.status.conditions.find((c) => c.type === 'MemoryPressure')!.message = 'kubelet has insufficient memory available';
    writeFileSync(path.join(cr, 'nodes.json'), JSON.stringify(nodes));
    const deployments = JSON.parse(readFileSync(path.join(cr, 'deployments', 'wg-easy.json'), 'utf8')) as { items: Array<{ spec: { replicas: number } }> };
    deployments.items[0]!.spec.replicas = 3;
    writeFileSync(path.join(cr, 'deployments', 'wg-easy.json'), JSON.stringify(deployments));
    const logs = path.join(cr, 'pods', 'logs', 'default', 'web-1');
    mkdirSync(logs, { recursive: true });
    const crash = Array.from({ length: 2000 }, (_, i) => `2025-04-11T18:5${i % 10}:00Z INFO request ${i} ok\n2025-04-11T18:5${i % 10}:01Z FATAL: connection to db-${i} refused`).join('\n');
    writeFileSync(path.join(logs, 'web-previous.log'), `${crash}\npanic: ${'x'.repeat(1000)}\n`);
    s = await summaryOf(base);
  });

  it('names each thing made unhealthy, worst first, in under 6,000 characters', () => {
    expect(s.text.length).toBeLessThan(TEXT_BUDGET);
    expect(s.healthy).toBe(false);
    expect(s.pods.items.map((p) => p.pod)).toEqual(['default/web-1', 'default/worker-0', 'default/big-0']);
    expect(s.pods.items[0]).toMatchObject({ phase: 'Running', ready: false, restarts: 7 });
    expect(s.pods.items[0]!.reasons).toEqual(['web: CrashLoopBackOff (back-off 5m0s restarting failed container=web)', 'web last ended: Error exit 3']);
    expect(s.pods.items[1]!.reasons).toEqual(['worker last ended: OOMKilled exit 137']);
    expect(s.pods.items[2]!.reasons).toEqual(['unschedulable: 0/1 nodes are available: 1 Insufficient memory.']);
    expect(s.warning_events.items[0]).toMatchObject({ reason: 'OOMKilling', count: 3, objects: ['pod/default/worker-0'] });
    expect(s.workloads.items).toEqual([
      { kind: 'job', name: 'default/migrate', problem: 'failed: BackoffLimitExceeded Job has reached the specified backoff limit' },
      { kind: 'deployment', name: 'wg-easy/public', problem: '1/3 ready' },
    ]);
    expect(s.nodes.items).toEqual([{ node: 'b9aead2c1', problems: ['MemoryPressure (kubelet has insufficient memory available)', 'cordoned (unschedulable)'] }]);
  });

  it('reads the failing pod log first, de-duplicated and clipped, and says what to look at next', () => {
    const web = s.log_errors.items.filter((l) => l.file === 'cluster-resources/pods/logs/default/web-1/web-previous.log');
    expect(s.log_errors.items[0]!.file).toBe(web[0]!.file);
    // 2,000 FATAL lines of one shape are one line; the newest panic, clipped to 200 characters.
    expect(web.map((l) => l.line.slice(0, 30))).toEqual(['2025-04-11T18:59:01Z FATAL: co', `panic: ${'x'.repeat(23)}`]);
    expect(web[1]!.line.length).toBe(200);
    expect(s.text).toMatch(/^Pods \(3\):\n {2}default\/web-1 Running not ready, 7 restarts: web: CrashLoopBackOff/m);
    expect(s.text).toMatch(/^ {2}job default\/migrate: failed: BackoffLimitExceeded/m);
    expect(s.text).toMatch(/^ {2}b9aead2c1: MemoryPressure .*; cordoned/m);
    expect(s.next).toEqual([
      'kubectl describe pod web-1 -n default',
      'kubectl describe pod worker-0 -n default',
      'read_file cluster-resources/pods/logs/default/web-1/web-previous.log',
      'kubectl describe job migrate -n default',
      'kubectl describe node b9aead2c1',
    ]);
  });

  it('caps a bundle of thousands of failing pods to the budget, and keeps the event loop answering', async () => {
    const { base } = await extracted(BUNDLE_2025);
    const crashing = Array.from({ length: 60_000 }, (_, i) =>
      pod(`crash-${i}`, { phase: 'Running', containerStatuses: [{ name: 'app', ready: false, restartCount: i % 50, state: { waiting: { reason: 'CrashLoopBackOff' } } }] }),
    );
    addItems(path.join(base, 'cluster-resources', 'pods', 'default.json'), crashing);
    // Measured on the second summary: the first also loads the files (parsed off the loop, turning it whether or not the
    // summary itself is sliced).
    const bundle = await Bundle.open(base);
    await summarizeBundle(bundle, 'test');
    const { longest, turns, value: big } = await longestBlock(() => summarizeBundle(bundle, 'test'), { everyMs: 2 });
    expect(big.pods.total).toBe(60_000);
    expect(big.pods.items[0]!.restarts).toBe(49);
    expect(big.text.length).toBeLessThan(TEXT_BUDGET);
    expect(big.text).toMatch(/^ {2}and 59990 more$/m);
    // In one go (the slicing disabled) the summary of 60,000 pods held the loop about 350 ms here and the probe got 3 turns,
    // from its file reads; in slices of SLICE_MS, 21 here, and more on a slower host, never fewer. Not a bound on the
    // longest block: a busy host stretches that.
    expect(turns, `longest block ${longest.toFixed(0)} ms`).toBeGreaterThan(7);
  }, 60_000);
});

describe('bundle_summary over MCP', () => {
  let dk: TestClient;
  const workspace = tempDir('debugkit-summary-root-');
  const archive = path.join(workspace, BUNDLE_2025);
  copyFileSync(path.join(FIXTURES, BUNDLE_2025), archive);
  beforeAll(async () => {
    dk = await connectStdio({ root: workspace, args: ['--bundle-dir', tempDir('debugkit-summary-store-'), '--toolsets', 'bundles'] });
  });
  afterAll(async () => {
    await dk?.close();
    roots.push(workspace);
  });

  it('refuses before initialize_bundle, answers after it', async () => {
    const refused = await dk.tool('bundle_summary');
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/^NoBundleInitializedError: No bundle initialized\. Use initialize_bundle first/);
    expect((await dk.tool('initialize_bundle', { source: archive })).isError).toBe(false);
    const r = await dk.tool('bundle_summary');
    expect(r.isError).toBe(false);
    expect(r.text.length).toBeLessThan(TEXT_BUDGET);
    expect(r.text).toMatch(/^ {2}Unhealthy ×8 .* on pod\/kube-system\/metrics-server-6f4c6675d5-k9zz8: Readiness probe failed/m);
    expect(r.structured).toMatchObject({ healthy: false, pods: { items: [], total: 0 }, warning_events: { total: 5 } });
    expect(r.text).not.toMatch(/^\s*[{[]/);
  });
});
