import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_2025 as FIXTURE_2025, BUNDLE_EMPTY as FIXTURE_EMPTY, BUNDLE_K3S as FIXTURE_K3S, fenced, podsInBundle } from './helpers/bundles.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { waitFor } from './helpers/procs.js';
import { tempDir } from './helpers/programs.js';

let dk: TestClient;
let store: string;
let root: string;

// The workspace root holds the bundles: local sources must be inside it (or the store).
const workspace = tempDir('debugkit-bundles-root-');
for (const f of [FIXTURE_2025, FIXTURE_EMPTY, FIXTURE_K3S]) copyFileSync(f, path.join(workspace, path.basename(f)));
const BUNDLE_2025 = path.join(workspace, path.basename(FIXTURE_2025));
const BUNDLE_EMPTY = path.join(workspace, path.basename(FIXTURE_EMPTY));
const BUNDLE_K3S = path.join(workspace, path.basename(FIXTURE_K3S));

/** A tool call that must succeed: its text. */
async function text(name: string, args: Record<string, unknown> = {}): Promise<string> {
  const r = await dk.tool(name, args);
  if (r.isError) throw new Error(`${name} ${JSON.stringify(args)} failed: ${r.text}`);
  return r.text;
}

/** A tool call that must fail: the contract's error type and message. */
async function failure(name: string, args: Record<string, unknown>): Promise<{ type: string; message: string }> {
  const r = await dk.tool(name, args);
  if (!r.isError) throw new Error(`${name} ${JSON.stringify(args)} should have failed: ${r.text}`);
  // Text only (`Type: message`): an error's structuredContent would break the tool's output schema.
  expect(r.structured).toBeUndefined();
  const m = /^(\w+): ([\s\S]*)$/.exec(r.text);
  if (!m) throw new Error(`${name}: not a typed error: ${r.text}`);
  return { type: m[1]!, message: m[2]! };
}

const kubectl = async (command: string, extra: Record<string, unknown> = {}) => fenced(await text('kubectl', { command, json_output: false, ...extra }));

beforeAll(async () => {
  store = tempDir('debugkit-bundles-');
  dk = await connectStdio({ root: workspace, args: ['--bundle-dir', store, '--toolsets', 'bundles'] });
});
afterAll(async () => {
  await dk?.close();
});

describe('bundles: before a bundle is open', () => {
  it('asks for initialize_bundle first, on every bundle tool', async () => {
    for (const [name, args] of [
      ['kubectl', { command: 'get pods' }],
      ['list_files', { path: '/' }],
      ['read_file', { path: '/x' }],
      ['grep_files', { pattern: 'x' }],
    ] as const) {
      const error = await failure(name, args);
      expect(error.type).toBe('NoBundleInitializedError');
      expect(error.message).toMatch(/Use initialize_bundle first/);
    }
    expect(await text('list_available_bundles')).toMatch(/^No bundles in the store/);
  });

  it('refuses sources that are not bundles', async () => {
    expect((await failure('initialize_bundle', { source: 'no-such-bundle.tar.gz' })).type).toBe('BundleNotFoundError');
    const empty = await failure('initialize_bundle', { source: BUNDLE_EMPTY });
    expect(empty.type).toBe('BundleExtractionError');
    const junk = path.join(workspace, 'junk.tar.gz');
    writeFileSync(junk, 'this is not gzip');
    const corrupt = await failure('initialize_bundle', { source: junk });
    expect(corrupt).toMatchObject({ type: 'BundleExtractionError', message: expect.stringMatching(/^Failed to extract bundle/) });
    // A failed initialization leaves nothing behind in the store.
    expect((await dk.tool('list_available_bundles')).structured.bundles).toEqual([]);
    expect(readdirSync(store).filter((f) => !f.startsWith('.'))).toEqual([]);
  });

  it('takes local sources only inside the workspace root or the store, never a directory like /', async () => {
    for (const source of ['/', '/etc', '/etc/passwd', '../', `../${path.basename(workspace)}-evil/x.tar.gz`, FIXTURE_2025, '~/.ssh', '/no/such/bundle.tar.gz']) {
      const error = await failure('initialize_bundle', { source });
      expect(error.type).toBe('SecurityError');
      expect(error.message).toMatch(/is outside the workspace root .* and the bundle store/);
    }
    // A link inside the root that leads out of it is outside too.
    symlinkSync('/etc', path.join(workspace, 'etc-link'));
    expect((await failure('initialize_bundle', { source: 'etc-link' })).type).toBe('SecurityError');
    expect(readdirSync(store).filter((f) => !f.startsWith('.'))).toEqual([]);
  });

  it('downloads only from allowed hosts, never from a loopback address unless that exact host is listed', async () => {
    const body = readFileSync(FIXTURE_K3S);
    const server = http.createServer((req, res) => {
      if (req.url === '/redirect') return void res.writeHead(302, { Location: 'http://169.254.169.254/latest/meta-data/' }).end();
      res.writeHead(200, { 'Content-Length': body.length }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      // The default list (Replicated's hosts) does not include the local server.
      const refused = await failure('initialize_bundle', { source: `http://127.0.0.1:${port}/support-bundle.tar.gz` });
      expect(refused).toMatchObject({ type: 'SecurityError', message: expect.stringMatching(/Downloads from 127\.0\.0\.1:\d+ are not allowed: bundle URLs may come from replicated\.com/) });
      const local = await connectStdio({ root: workspace, args: ['--bundle-dir', tempDir(), '--toolsets', 'bundles', '--bundle-url-host', `127.0.0.1:${port}`] });
      try {
        const ok = await local.tool('initialize_bundle', { source: `http://127.0.0.1:${port}/support-bundle.tar.gz` });
        expect(ok.isError).toBe(false);
        expect(ok.structured).toMatchObject({ name: 'support-bundle', reused: false });
        const redirected = await local.tool('initialize_bundle', { source: `http://127.0.0.1:${port}/redirect` });
        expect(redirected.isError).toBe(true);
        expect(redirected.text).toMatch(/^SecurityError: .*Downloads from 169\.254\.169\.254 are not allowed/);
      } finally {
        await local.close();
      }
    } finally {
      server.close();
    }
    expect(readdirSync(store).filter((f) => !f.startsWith('.'))).toEqual([]);
  });

  it('the kubeconfig written for a served bundle goes with the server (attack 18m: a stopped server left them)', async () => {
    const local = await connectStdio({ root: workspace, args: ['--bundle-dir', tempDir(), '--toolsets', 'bundles'] });
    let kubeconfig: string;
    try {
      const r = await local.tool('initialize_bundle', { source: BUNDLE_K3S });
      expect(r.isError, r.text).toBe(false);
      kubeconfig = JSON.parse(fenced(r.text)).kubeconfig_path;
      expect(existsSync(kubeconfig)).toBe(true);
    } finally {
      await local.close();
    }
    expect(await waitFor(() => !existsSync(kubeconfig), 10_000)).toBe(true);
  });

  it("resolves relative sources against the workspace root, not the server's working directory", async () => {
    const r = await dk.tool('initialize_bundle', { source: path.basename(BUNDLE_K3S) });
    expect(r.isError).toBe(false);
    expect(r.structured.source).toBe(BUNDLE_K3S);
  });
});

describe('bundles: a real bundle, through the real kubectl', () => {
  beforeAll(async () => {
    const r = await dk.tool('initialize_bundle', { source: BUNDLE_2025 });
    expect(r.isError).toBe(false);
    expect(r.text).toMatch(/^Bundle initialized successfully:\n```json\n/);
    const shown = JSON.parse(fenced(r.text));
    expect(Object.keys(shown)).toEqual(['path', 'kubeconfig_path', 'source', 'api_server_pid', 'initialized_at']);
    expect(shown.source).toBe(BUNDLE_2025);
    expect(shown.path).toBe(path.join(store, 'support-bundle-2025-04-11T14_05_31'));
    expect(shown.initialized_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    root = path.join(shown.path, 'support-bundle-2025-04-11T14_05_31');
  });

  it('reuses the bundle without force, extracts again with force', async () => {
    const again = await dk.tool('initialize_bundle', { source: BUNDLE_2025 });
    expect(again.structured).toMatchObject({ reused: true });
    const forced = await dk.tool('initialize_bundle', { source: BUNDLE_2025, force: true });
    expect(forced.structured).toMatchObject({ reused: false });
    const listed = (await dk.tool('list_available_bundles')).structured.bundles;
    expect(listed.filter((b: { active: boolean }) => b.active).map((b: { name: string }) => b.name)).toEqual(['support-bundle-2025-04-11T14_05_31']);
  });

  it('get pods -A shows every pod the bundle holds', async () => {
    const out = await kubectl('get pods -A');
    const lines = out.split('\n');
    expect(lines[0]).toMatch(/^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
    const shown = lines
      .slice(1)
      .map((l) => l.split(/\s+/))
      .map(([ns, name]) => `${ns}/${name}`)
      .sort();
    expect(shown).toEqual(podsInBundle(root));
    expect(out).toMatch(/kube-system\s+coredns-ff8999cc5-6rpll\s+1\/1\s+Running\s+0\s+\d+m/);
  });

  it('answers with a table by default, and JSON when json_output is true as in the contract example', async () => {
    const table = await dk.tool('kubectl', { command: 'get pods -n kube-system' });
    expect(table.structured).toMatchObject({ json: false, truncated: false });
    expect(table.text).toMatch(/^kubectl command executed successfully:\n```\nNAME\s+READY\s+STATUS/);
    const t = await text('kubectl', { command: 'get pods -n kube-system', timeout: 30, json_output: true });
    expect(t).toMatch(/^kubectl command executed successfully:\n```json\n/);
    const list = JSON.parse(fenced(t));
    expect(list.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toContain('coredns-ff8999cc5-6rpll');
    const meta = JSON.parse(/Command metadata:\n```json\n([\s\S]*?)\n```/.exec(t)![1]!);
    expect(meta).toMatchObject({ command: 'kubectl get pods -n kube-system -o json', exit_code: 0 });
    expect(meta.duration_ms).toBeGreaterThan(0);
  });

  it('keeps answers within budget: JSON too large for one answer becomes the item names and a hint', async () => {
    const r = await dk.tool('kubectl', { command: 'get pods -A', json_output: true });
    expect(r.isError).toBe(false);
    expect(r.structured).toMatchObject({ json: false, truncated: true });
    expect(r.structured.output).toMatch(/^The JSON output is \d+ characters, over the 32000 an answer can hold\.\nItems \(\d+\):\n/);
    expect(r.structured.output).toContain('\nkube-system/coredns-ff8999cc5-6rpll');
    expect(r.text).toMatch(/get pod NAME -n NAMESPACE -o json/);
    expect(r.text.length).toBeLessThan(40_000);
  });

  it('get deploy -o wide, describe, logs, label selectors', async () => {
    const wide = await kubectl('get deploy -n kube-system -o wide');
    expect(wide.split('\n')[0]).toMatch(/^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR$/);
    expect(wide).toMatch(/^coredns\s+1\/1/m);
    const described = await kubectl('describe pod coredns-ff8999cc5-6rpll -n kube-system');
    expect(described).toMatch(/^Name:\s+coredns-ff8999cc5-6rpll$/m);
    expect(described).toMatch(/^Namespace:\s+kube-system$/m);
    expect(described).toMatch(/^Events:/m);
    // Event ages as of the bundle's collection, as in get (not the months since).
    expect(described).toMatch(/^ {2}Normal\s+Scheduled\s+48m\s+default-scheduler\s+Successfully assigned kube-system\/coredns-ff8999cc5-6rpll/m);
    expect(await kubectl('get events -n kube-system --field-selector involvedObject.name=coredns-ff8999cc5-6rpll')).toMatch(/^48m\s+Normal\s+Scheduled\s/m);
    // JSON keeps the times as collected.
    const json = JSON.parse(await kubectl('get events -n kube-system --field-selector reason=Scheduled,involvedObject.name=coredns-ff8999cc5-6rpll -o json'));
    expect(json.items[0].metadata.creationTimestamp.startsWith('2025-04-11T')).toBe(true);
    const logs = await kubectl('logs coredns-ff8999cc5-6rpll -n kube-system --tail 2');
    expect(logs.split('\n')).toHaveLength(2);
    const labelled = await kubectl('get pods -A -l k8s-app=kube-dns -o name');
    expect(labelled).toBe('pod/coredns-ff8999cc5-6rpll');
  });

  it('serves CRDs, custom resources, api-resources and version', async () => {
    expect(await kubectl('get crd')).toMatch(/^certificates\.cert-manager\.io\s/m);
    expect(await kubectl('get certificates -A')).toMatch(/^NAMESPACE\s+NAME/);
    const resources = await kubectl('api-resources');
    expect(resources).toMatch(/^pods\s+po\s+v1\s+true\s+Pod$/m);
    expect(resources).toMatch(/^deployments\s+deploy\s+apps\/v1\s+true\s+Deployment$/m);
    expect(await kubectl('version')).toMatch(/Server Version: v1\.32\.2\+k3s1/);
  });

  it('reports kubectl failures and refuses what a bundle cannot do', async () => {
    const missing = await failure('kubectl', { command: 'get pod nope -n kube-system' });
    expect(missing).toMatchObject({ type: 'KubectlError', message: expect.stringMatching(/Kubectl command failed: Error from server \(NotFound\): pods "nope" not found/) });
    for (const command of ['exec -it x -- sh', 'delete pod x', 'apply -f x.yaml', 'edit deploy x', 'port-forward x 80', 'cp x:/a b']) {
      expect((await failure('kubectl', { command })).type).toBe('CommandNotSupportedError');
    }
    expect((await failure('kubectl', { command: 'get pods | grep x' })).message).toMatch(/pipes, redirections/);
    expect((await failure('kubectl', { command: 'get pods --server https://example.com' })).type).toBe('CommandNotSupportedError');
  });

  it('refuses spellings that would reach past the bundle, and runs the argv it rebuilt', async () => {
    for (const [command, part] of [
      ['get pods -shttps://127.0.0.1:1', "'-s' (in '-shttps://127.0.0.1:1')"],
      ['get pods -As https://127.0.0.1:1', "'-s' (in '-As')"],
      ['get pods -o go-template-file=/etc/passwd', 'go-template-file=/etc/passwd'],
      ['get pods -ojsonpath-file=/etc/hostname', 'jsonpath-file=/etc/hostname'],
      ['get pods --profile=cpu --profile-output=/tmp/dk-profile', "'--profile'"],
      ['-n get delete pods', 'kubectl delete'],
      ['get pods --kubeconfig=/etc/hosts', "'--kubeconfig'"],
      ['logs coredns-ff8999cc5-6rpll -n kube-system --since=1h', "'--since'"],
    ]) {
      const error = await failure('kubectl', { command });
      expect(error.type).toBe('CommandNotSupportedError');
      expect(error.message).toContain(part);
    }
    const r = await dk.tool('kubectl', { command: '-nkube-system get pods -Ao=name' });
    expect(r.isError).toBe(false);
    expect(r.structured.metadata.command).toBe('kubectl get pods -n kube-system -A -o name');
    expect(r.structured.output).toContain('pod/coredns-ff8999cc5-6rpll');
  });

  it('lists, reads and searches the bundle with the contract texts', async () => {
    const listed = await text('list_files', { path: '/cluster-info' });
    expect(listed).toMatch(/^Listed files in \/cluster-info non-recursively:\n```json\n/);
    expect(JSON.parse(fenced(listed)).map((e: { name: string }) => e.name)).toContain('cluster_version.json');
    expect(listed).toMatch(/Directory metadata:\n```json\n\{\n {2}"path": "\/cluster-info",\n {2}"recursive": false,/);

    const read = await text('read_file', { path: '/cluster-info/cluster_version.json' });
    expect(read).toMatch(/^Read text file \/cluster-info\/cluster_version.json \(lines 1-14 of 14\):\n```\n {3}1 \| \{\n/);

    const grep = await text('grep_files', { pattern: 'GOMAXPROCS', path: '/cluster-resources/pods/logs', glob_pattern: '*.log' });
    expect(grep).toMatch(/^Found 1 match for case-insensitive pattern 'GOMAXPROCS' in \/cluster-resources\/pods\/logs \(matching \*\.log\):/);
    expect(grep).toContain('**File: /cluster-resources/pods/logs/kube-system/coredns-ff8999cc5-6rpll/coredns.log**');
    expect(grep).toMatch(/ {3}1 \| maxprocs: Leaving GOMAXPROCS=2/);

    expect((await failure('grep_files', { pattern: '(unclosed' })).type).toBe('InvalidPatternError');
    expect((await failure('read_file', { path: '/cluster-info' })).type).toBe('NotAFileError');
    expect((await failure('list_files', { path: '/cluster-info/cluster_version.json' })).type).toBe('NotADirectoryError');
    expect((await failure('read_file', { path: '/nope.txt' })).type).toBe('FileNotFoundError');
    expect((await failure('list_files', { path: '/nope' })).type).toBe('PathNotFoundError');
  });

  it('lists compactly on request: one line per entry, no extraction times, a fraction of the contract text', async () => {
    const contract = await dk.tool('list_files', { path: '/cluster-info' });
    const compact = await dk.tool('list_files', { path: '/cluster-info', compact: true });
    expect(compact.isError, compact.text).toBe(false);
    const entries = JSON.parse(fenced(contract.text)) as Array<{ name: string; size: number }>;
    const version = entries.find((e) => e.name === 'cluster_version.json')!;
    expect(compact.text.split('\n')[0]).toBe(`/cluster-info: 0 dirs, ${entries.length} file${entries.length === 1 ? '' : 's'}`);
    expect(compact.text).toContain(`\ncluster_version.json ${version.size} B`);
    expect(compact.text).not.toMatch(/modified|accessed|\d{4}-\d\d-\d\dT/);
    // Its structured entries say what its lines say: no times, no path the name and directory give, `is_binary` only when true.
    expect(compact.structured.entries.find((e: { name: string }) => e.name === 'cluster_version.json')).toEqual({ name: 'cluster_version.json', type: 'file', size: version.size });
    expect(compact.text.length).toBeLessThan(contract.text.length / 4);

    // A recursive listing names entries by their path under the directory listed; directories end in "/".
    const all = await dk.tool('list_files', { path: '/', recursive: true, compact: true });
    const lines = all.text.split('\n');
    expect(lines[0]).toMatch(/^\/ \(recursive\): \d+ dirs, \d+ files$/);
    expect(lines).toContain('cluster-info/');
    expect(lines.some((l) => /^cluster-info\/cluster_version\.json \d+ B$/.test(l))).toBe(true);
  });

  it('keeps every path inside the bundle', async () => {
    // A symlink inside the bundle that points out of it, and a sibling whose name extends the root's.
    symlinkSync('/etc', path.join(root, 'escape'));
    mkdirSync(`${root}-evil`, { recursive: true });
    writeFileSync(`${root}-evil/secret.txt`, 'secret');
    for (const [name, args] of [
      ['read_file', { path: '/../../../../etc/passwd' }],
      ['read_file', { path: '/escape/passwd' }],
      ['list_files', { path: '/escape' }],
      ['read_file', { path: `/../${path.basename(root)}-evil/secret.txt` }],
      ['grep_files', { pattern: 'root', path: '/escape' }],
      ['read_file', { path: '/cluster-info/\u0000x' }],
    ] as const) {
      expect((await failure(name, args)).type).toBe('SecurityError');
    }
  });

  it('never serves a pod log that is a link to a host file', async () => {
    const log = path.join(root, 'cluster-resources/pods/logs/kube-system/coredns-ff8999cc5-6rpll/coredns.log');
    const secret = path.join(tempDir(), 'host-secret.txt');
    writeFileSync(secret, 'HOST SECRET\n');
    renameSync(log, `${log}.orig`);
    symlinkSync(secret, log);
    try {
      const error = await failure('kubectl', { command: 'logs coredns-ff8999cc5-6rpll -n kube-system' });
      expect(error.type).toBe('KubectlError');
      expect(error.message).toMatch(/was not collected in this support bundle/);
      expect(error.message).not.toContain('HOST SECRET');
      expect((await failure('read_file', { path: '/cluster-resources/pods/logs/kube-system/coredns-ff8999cc5-6rpll/coredns.log' })).type).toBe('SecurityError');
    } finally {
      rmSync(log);
      renameSync(`${log}.orig`, log);
    }
    expect(await kubectl('logs coredns-ff8999cc5-6rpll -n kube-system --tail 1')).toMatch(/\S/);
  });

  it('switches to another bundle and serves it', async () => {
    await text('initialize_bundle', { source: BUNDLE_K3S });
    const out = await kubectl('get ns');
    expect(out.split('\n')[0]).toMatch(/^NAME\s+STATUS\s+AGE$/);
    expect(out).toMatch(/^kube-system\s+Active/m);
  });

  it('cuts a long log at its end, the newest lines, and says how to read the earlier ones', async () => {
    const r = await dk.tool('kubectl', { command: 'logs nginx-deployment-7986654d4-ztx2g -c hello' });
    expect(r.isError).toBe(false);
    expect(r.structured.truncated).toBe(true);
    expect(r.structured.output.endsWith('Hello from k3s (Evans Secret): Wed Dec 21 16:44:43 UTC 2022')).toBe(true);
    expect(r.structured.output.length).toBeLessThanOrEqual(32_000);
    const m =
      /Showing the last (\d+) of 4571 lines \(lines (\d+)-4571;.*read_file \{"path": "(\/cluster-resources\/pods\/logs\/default\/nginx-deployment-7986654d4-ztx2g\/hello\.log)", "start_line": 1, "end_line": (\d+)\}/.exec(
        r.text,
      );
    expect(m).not.toBeNull();
    expect(Number(m![2])).toBe(Number(m![4]) + 1);
    // The hint works as written: the line before the first one shown.
    const before = await dk.tool('read_file', { path: m![3], start_line: Number(m![4]), end_line: Number(m![4]) });
    expect(before.structured.content).toMatch(/^Hello from k3s/);
    expect(r.structured.output.startsWith(before.structured.content)).toBe(false);
  });
});
