// The bundles toolset on a support bundle enlarged to ~200 MB: (1) grep_files throughput against
// `grep -rn` on the same tree, as a library call and through the MCP tool; (2) the whole-process
// time of `kubectl get pods -A` against the bundle's API server against kubectl's own floor, and
// the server's own time per request kubectl makes; (3) initialize_bundle on the enlarged .tar.gz
// (fresh store, then reuse) against `tar -xzf` of the same archive.
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { grepFilesWith } from '../src/toolsets/bundles/files/grep.js';
import {
  drain,
  envInt,
  fullEnv,
  isAlive,
  killPid,
  ms,
  percentile,
  releaseTempDir,
  summarize,
  track,
  trackTempDir,
  untrack,
  withTimeout,
  type BenchModule,
  type BenchResult,
  type Table,
} from './util.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli.js');

/** The bundle that is enlarged (never modified: it is extracted into the run's temporary directory). */
const FIXTURE = process.env.BENCH_BUNDLE_FIXTURE || new URL('../test/fixtures/support-bundles/support-bundle-2025-04-11T14_05_31.tar.gz', import.meta.url).pathname;
const KUBECTL = process.env.BENCH_KUBECTL || 'kubectl';

/** Bytes of file data the enlarged bundle reaches (at least), in MB of 10^6 bytes. */
const TARGET_MB = envInt('BENCH_BUNDLE_MB', 200);
const GZIP_LEVEL = envInt('BENCH_BUNDLE_GZIP_LEVEL', 6);
const GREP_RUNS = envInt('BENCH_BUNDLE_GREP_RUNS', 5);
const KUBECTL_RUNS = envInt('BENCH_BUNDLE_KUBECTL_RUNS', 10);
const REPLAYS = envInt('BENCH_BUNDLE_REPLAYS', 200);
const REPLAY_WARMUP = 10;
const INIT_RUNS = envInt('BENCH_BUNDLE_INIT_RUNS', 3);

/** grep_files' own ceiling on max_results (src/toolsets/bundles/tools/grep-files.ts). */
const TOOL_MAX_RESULTS = 100_000;
/** The library call has no ceiling: large enough never to stop early. */
const LIBRARY_MAX_RESULTS = 100_000_000;

/** Bound on one grep (either side), one kubectl, one HTTP request, one MCP call that extracts nothing. */
const RUN_TIMEOUT_MS = 60_000;
/** Bound on building the enlarged bundle's archive, and on one initialize_bundle or `tar -xzf` of it. */
const ARCHIVE_TIMEOUT_MS = 120_000;
const REQUEST_TIMEOUT_MS = 20_000;

const GREP_GOAL = 1.0;
const INIT_GOAL = 1.3;
const KUBECTL_GOAL_MS = 10;
const MEMORY_GOAL_MB = 300;

/** The search patterns: grep's flags for each, and whether debugkit searches case-sensitively. */
interface GrepPattern {
  pattern: string;
  caseSensitive: boolean;
  grepFlags: string[];
  what: string;
}

const PATTERNS: GrepPattern[] = [
  { pattern: 'OOMKilled', caseSensitive: true, grepFlags: ['-rn'], what: 'literal, absent' },
  { pattern: 'FailedMount', caseSensitive: true, grepFlags: ['-rn'], what: 'rare literal' },
  { pattern: 'error', caseSensitive: false, grepFlags: ['-rni'], what: 'common literal, case-insensitive' },
  { pattern: 'fail(ed|ure)', caseSensitive: true, grepFlags: ['-rnE'], what: 'alternation' },
  { pattern: 'E[0-9]{4} [0-9:.]+', caseSensitive: true, grepFlags: ['-rnE'], what: 'klog-style prefix regex' },
];

// ---------------------------------------------------------------- processes

interface Ran {
  ms: number;
  code: number | null;
  /** Newlines written to stdout (grep: matching lines). */
  lines: number;
  stdoutBytes: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end (its own process group, stdout read through a pipe, so grep cannot
 * take /dev/null's shortcut), timing from spawn to the close of its output. Bounded: the group is
 * killed after `timeoutMs` and the promise rejects.
 */
function runProcess(command: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; keep?: boolean }): Promise<Ran> {
  const timeoutMs = opts.timeoutMs ?? RUN_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    track(child.pid, command, true);
    let lines = 0;
    let bytes = 0;
    const kept: Buffer[] = [];
    const err = { text: '' };
    let timedOut = false;
    child.stdout!.on('data', (b: Buffer) => {
      bytes += b.length;
      for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) lines++;
      if (opts.keep) kept.push(b);
    });
    drain(child.stderr, err);
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) killPid(child.pid, true);
    }, timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      untrack(child.pid);
      reject(new Error(`${command}: ${e.message}`));
    });
    child.once('close', (code) => {
      const elapsed = performance.now() - started;
      clearTimeout(timer);
      untrack(child.pid);
      if (timedOut) reject(new Error(`${command} ${args.join(' ')}: still running after ${timeoutMs} ms; killed`));
      else resolve({ ms: elapsed, code, lines, stdoutBytes: bytes, stdout: Buffer.concat(kept).toString('utf8'), stderr: err.text });
    });
  });
}

async function mustRun(command: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; keep?: boolean }): Promise<Ran> {
  const r = await runProcess(command, args, opts);
  if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${r.code}: ${r.stderr.slice(-2000)}`);
  return r;
}

function versionLine(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] })
      .split('\n')[0]!
      .trim();
  } catch (err) {
    throw new Error(`${command} is needed for this benchmark: ${(err as Error).message}`, { cause: err });
  }
}

// ---------------------------------------------------------------- debugkit over stdio

interface ToolReply {
  isError?: boolean;
  structuredContent?: any;
  content?: Array<{ text?: string }>;
}

interface Called {
  value: any;
  text: string;
  /** Bytes of the tool result as JSON (text content and structuredContent): about what crosses the pipe. */
  bytes: number;
  ms: number;
}

/** `node dist/cli.js --toolsets bundles --bundle-dir <store>` over stdio, driven by the MCP SDK client. */
class Debugkit {
  private constructor(
    private readonly client: Client,
    readonly pid: number | undefined,
    private readonly log: { text: string },
  ) {}

  /** Runs in `cwd` with HOME and TMPDIR inside the run's directory: kubectl's cache and the kubeconfigs it writes stay there. */
  static async start(cwd: string, store: string, home: string): Promise<Debugkit> {
    const env = { ...fullEnv(), HOME: home, TMPDIR: path.join(home, 'tmp') };
    mkdirSync(env.TMPDIR, { recursive: true });
    const args = [CLI, '--root', cwd, '--toolsets', 'bundles', '--bundle-dir', store, '--kubectl', KUBECTL, '--log-level', 'warn'];
    const transport = new StdioClientTransport({ command: process.execPath, args, cwd, env, stderr: 'pipe' });
    const log = { text: '' };
    drain(transport.stderr as Readable | null, log);
    const client = new Client({ name: 'debugkit-bench-bundles', version: '1.0.0' });
    try {
      await withTimeout(client.connect(transport), REQUEST_TIMEOUT_MS, 'connecting to debugkit over stdio');
    } catch (err) {
      const pid = transport.pid ?? undefined;
      await withTimeout(client.close(), 5000, 'closing the client').catch(() => undefined);
      if (pid !== undefined && isAlive(pid)) killPid(pid, false);
      throw new Error(`${String(err)}\n${log.text}`, { cause: err });
    }
    track(transport.pid ?? undefined, 'debugkit (stdio)', false);
    return new Debugkit(client, transport.pid ?? undefined, log);
  }

  /** Calls a tool, timed from the request to the parsed answer; an error names the tool and debugkit's message. */
  async call(name: string, args: Record<string, unknown>, timeoutMs = RUN_TIMEOUT_MS): Promise<Called> {
    const started = performance.now();
    const r = (await this.client.callTool({ name, arguments: args }, undefined, { timeout: timeoutMs })) as ToolReply;
    const elapsed = performance.now() - started;
    const text = (r.content ?? []).map((c) => c.text ?? '').join('');
    if (r.isError || r.structuredContent === undefined) throw new Error(`debugkit ${name} failed: ${text.slice(0, 2000)}\n${this.log.text.slice(-2000)}`);
    return { value: r.structuredContent, text, bytes: Buffer.byteLength(JSON.stringify(r)), ms: elapsed };
  }

  async close(): Promise<void> {
    await withTimeout(this.client.close(), 8000, 'closing the stdio client').catch(() => undefined);
    if (this.pid !== undefined && isAlive(this.pid)) killPid(this.pid, false);
    untrack(this.pid);
  }
}

// ---------------------------------------------------------------- the enlarged bundle

interface BigBundle {
  /** The directory holding cluster-resources/: what grep -rn and grep_files search. */
  base: string;
  fixtureFiles: number;
  fixtureBytes: number;
  /** The fixture's files by kind: `.json`, `.log`... and how many. */
  fixtureKinds: string;
  copies: number;
  /** Regular files (and their bytes) in the enlarged tree; symlinks are not counted. */
  files: number;
  bytes: number;
  archive: string;
  archiveBytes: number;
  buildMs: number;
  archiveMs: number;
}

const SNIFF = 8192;

function isText(file: string): boolean {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(SNIFF);
    const n = readSync(fd, buf, 0, SNIFF, 0);
    return !buf.subarray(0, n).includes(0);
  } finally {
    closeSync(fd);
  }
}

/** Regular files under `dir` (symlinks skipped), relative paths and sizes. */
function regularFiles(dir: string, rel = ''): Array<{ rel: string; size: number }> {
  const out: Array<{ rel: string; size: number }> = [];
  for (const d of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel === '' ? d.name : `${rel}/${d.name}`;
    if (d.isDirectory()) out.push(...regularFiles(dir, r));
    else if (d.isFile()) out.push({ rel: r, size: statSync(path.join(dir, r)).size });
  }
  return out;
}

/**
 * Extracts the fixture, then copies its text files (logs, JSON, YAML) into `copies/001/`,
 * `copies/002/`... under the bundle's base directory, keeping their relative paths, until the
 * tree holds TARGET_MB; then archives it with tar + gzip. The API server does not see the copies
 * (they are outside cluster-resources/), so kubectl sees the fixture's objects.
 */
async function buildBundle(root: string): Promise<BigBundle> {
  const started = performance.now();
  const extractDir = path.join(root, 'bundle');
  mkdirSync(extractDir);
  await mustRun('tar', ['-xzf', FIXTURE, '-C', extractDir], { cwd: root, timeoutMs: ARCHIVE_TIMEOUT_MS });
  await mustRun('chmod', ['-R', 'u+w', extractDir], { cwd: root });
  const base = existsSync(path.join(extractDir, 'cluster-resources'))
    ? extractDir
    : readdirSync(extractDir, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => path.join(extractDir, d.name))
        .find((d) => existsSync(path.join(d, 'cluster-resources')));
  if (!base) throw new Error(`${FIXTURE} holds no cluster-resources/ within one level`);
  const all = regularFiles(base);
  const text = all.filter((f) => isText(path.join(base, f.rel)));
  const fixtureBytes = all.reduce((s, f) => s + f.size, 0);
  const copyBytes = text.reduce((s, f) => s + f.size, 0);
  if (copyBytes === 0) throw new Error(`${FIXTURE} holds no text files to replicate`);
  const copies = Math.max(0, Math.ceil((TARGET_MB * 1e6 - fixtureBytes) / copyBytes));
  const width = String(copies).length < 3 ? 3 : String(copies).length;
  const dirs = [...new Set(text.map((f) => path.posix.dirname(f.rel)))];
  for (let k = 1; k <= copies; k++) {
    const copy = path.join(base, 'copies', String(k).padStart(width, '0'));
    for (const d of dirs) mkdirSync(path.join(copy, d), { recursive: true });
    for (const f of text) copyFileSync(path.join(base, f.rel), path.join(copy, f.rel));
  }
  const buildMs = performance.now() - started;

  const archive = path.join(root, 'enlarged-bundle.tar.gz');
  const t = performance.now();
  await mustRun('tar', ['-I', `gzip -${GZIP_LEVEL}`, '-cf', archive, '-C', path.dirname(base), path.basename(base)], { cwd: root, timeoutMs: ARCHIVE_TIMEOUT_MS });
  const archiveMs = performance.now() - t;
  const kinds = new Map<string, number>();
  for (const f of all) {
    const ext = path.posix.extname(f.rel) || '(none)';
    kinds.set(ext, (kinds.get(ext) ?? 0) + 1);
  }
  return {
    base: realpathSync(base),
    fixtureFiles: all.length,
    fixtureBytes,
    fixtureKinds: [...kinds]
      .sort((a, b) => b[1] - a[1])
      .map(([ext, n]) => `${n} ${ext}`)
      .join(', '),
    copies,
    files: all.length + copies * text.length,
    bytes: fixtureBytes + copies * copyBytes,
    archive,
    archiveBytes: statSync(archive).size,
    buildMs,
    archiveMs,
  };
}

// ---------------------------------------------------------------- (1) grep

type GrepWay = 'grep' | 'rg' | 'builtin' | 'library' | 'tool';
const GREP_WAYS: GrepWay[] = ['grep', 'rg', 'builtin', 'library', 'tool'];

interface GrepSamples {
  p: GrepPattern;
  ms: Record<GrepWay, number[]>;
  matches: Record<GrepWay, number>;
  filesSearched: number;
  /** The grep_files answer: bytes of the result as JSON, characters of its text content. */
  toolBytes: number;
  toolTextChars: number;
  toolTruncated: boolean;
  /** The engine grepFiles used (auto): 'ripgrep' when rg is installed and the pattern translates. */
  engine: string;
  /** The whole answer of each library way, JSON: checked identical between the engines. */
  answers: Partial<Record<'library' | 'builtin', string>>;
}

async function grepOnce(way: GrepWay, p: GrepPattern, big: BigBundle, dk: Debugkit, s: GrepSamples, timed: boolean): Promise<void> {
  let elapsed: number;
  let matches: number;
  if (way === 'grep') {
    const r = await runProcess('grep', [...p.grepFlags, '--', p.pattern, '.'], { cwd: big.base });
    if (r.code !== 0 && r.code !== 1) throw new Error(`grep ${p.grepFlags.join(' ')} ${p.pattern} exited with ${r.code}: ${r.stderr}`);
    elapsed = r.ms;
    matches = r.lines;
  } else if (way === 'rg') {
    // rg as a user would run it on the whole tree: no ignore files, hidden files too, binary files skipped.
    const r = await runProcess('rg', ['--no-config', '-n', '--no-heading', '--no-ignore', '--hidden', ...(p.caseSensitive ? [] : ['-i']), '-e', p.pattern, '.'], { cwd: big.base });
    if (r.code !== 0 && r.code !== 1) throw new Error(`rg ${p.pattern} exited with ${r.code}: ${r.stderr}`);
    elapsed = r.ms;
    matches = r.lines;
  } else if (way === 'library' || way === 'builtin') {
    const started = performance.now();
    const engine = way === 'library' ? 'auto' : 'builtin';
    const r = await withTimeout(grepFilesWith(big.base, { pattern: p.pattern, case_sensitive: p.caseSensitive, max_results: LIBRARY_MAX_RESULTS }, engine), RUN_TIMEOUT_MS, `grepFiles ${p.pattern}`);
    elapsed = performance.now() - started;
    matches = r.result.metadata.total_matches;
    s.filesSearched = r.result.metadata.files_searched;
    if (way === 'library') s.engine = r.engine;
    const answer = JSON.stringify(r.result);
    if (s.answers[way] !== undefined && s.answers[way] !== answer) throw new Error(`grepFiles (${engine}) answered differently from one run to the next for ${p.pattern}`);
    s.answers[way] = answer;
  } else {
    const r = await dk.call('grep_files', { pattern: p.pattern, case_sensitive: p.caseSensitive, max_results: TOOL_MAX_RESULTS });
    elapsed = r.ms;
    matches = r.value.metadata.total_matches;
    s.toolBytes = r.bytes;
    s.toolTextChars = r.text.length;
    s.toolTruncated = r.value.metadata.truncated === true;
  }
  if (s.matches[way] >= 0 && s.matches[way] !== matches) throw new Error(`${way} found ${matches} lines for ${p.pattern}, earlier ${s.matches[way]}`);
  s.matches[way] = matches;
  if (timed) s.ms[way].push(elapsed);
}

/** Per pattern: one untimed run of each way (which also warms the page cache), then GREP_RUNS rounds, the order rotating. */
async function measureGrep(big: BigBundle, dk: Debugkit): Promise<GrepSamples[]> {
  // Read every file once so the first pattern does not pay for the disk.
  await mustRun('grep', ['-rc', 'x', '.'], { cwd: big.base });
  const out: GrepSamples[] = [];
  for (const p of PATTERNS) {
    const s: GrepSamples = {
      p,
      ms: { grep: [], rg: [], builtin: [], library: [], tool: [] },
      matches: { grep: -1, rg: -1, builtin: -1, library: -1, tool: -1 },
      filesSearched: 0,
      toolBytes: 0,
      toolTextChars: 0,
      toolTruncated: false,
      engine: '',
      answers: {},
    };
    for (const way of GREP_WAYS) await grepOnce(way, p, big, dk, s, false);
    for (let round = 0; round < GREP_RUNS; round++) {
      for (let k = 0; k < GREP_WAYS.length; k++) await grepOnce(GREP_WAYS[(round + k) % GREP_WAYS.length]!, p, big, dk, s, true);
    }
    const { grep, rg, builtin, library, tool } = s.matches;
    if (library !== grep || builtin !== grep || rg !== grep || (tool !== grep && !(s.toolTruncated && grep > TOOL_MAX_RESULTS))) {
      throw new Error(`"${p.pattern}": grep ${p.grepFlags.join(' ')} found ${grep} lines, rg ${rg}, grepFiles ${library} (built-in ${builtin}), grep_files ${tool}`);
    }
    if (s.answers.library !== s.answers.builtin) throw new Error(`"${p.pattern}": grepFiles answered differently with ${s.engine} and with the built-in search`);
    process.stdout.write(
      `bundles:   ${p.pattern}: ${grep} lines; grep ${sec(median(s.ms.grep))} s, rg ${sec(median(s.ms.rg))} s, built-in ${sec(median(s.ms.builtin))} s, ` +
        `library (${s.engine}) ${sec(median(s.ms.library))} s, tool ${sec(median(s.ms.tool))} s\n`,
    );
    out.push(s);
  }
  return out;
}

// ---------------------------------------------------------------- (2) kubectl and the API server

interface Captured {
  method: string;
  path: string;
  headers: Record<string, string>;
}

interface Recorder {
  url: string;
  /** The requests recorded since the last take. */
  take(): Captured[];
  close(): Promise<void>;
}

/** A pass-through proxy to `target` that records each request kubectl makes through it. */
async function startRecorder(target: URL): Promise<Recorder> {
  let seen: Captured[] = [];
  const proxy = http.createServer((req, res) => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    seen.push({ method: req.method ?? 'GET', path: req.url ?? '/', headers });
    const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      ur.pipe(res);
    });
    up.setTimeout(REQUEST_TIMEOUT_MS, () => up.destroy(new Error('upstream timeout')));
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve, reject) => {
    proxy.once('error', reject);
    proxy.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    take: () => {
      const out = seen;
      seen = [];
      return out;
    },
    close: () =>
      new Promise<void>((resolve) => {
        proxy.close(() => resolve());
        proxy.closeAllConnections();
      }),
  };
}

function writeKubeconfig(file: string, server: string): void {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'bundle', cluster: { server } }],
    users: [{ name: 'bundle', user: { token: 'support-bundle' } }],
    contexts: [{ name: 'bundle', context: { cluster: 'bundle', user: 'bundle', namespace: 'default' } }],
    'current-context': 'bundle',
  };
  writeFileSync(file, JSON.stringify(config, null, 2), { mode: 0o600 });
}

/** One GET over a keep-alive connection, timed to the end of the body. */
function httpGet(agent: http.Agent, base: URL, req: Captured): Promise<{ ms: number; status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers };
    delete headers.host;
    delete headers.connection;
    const started = performance.now();
    const r = http.request({ host: base.hostname, port: base.port, path: req.path, method: req.method, headers, agent }, (res) => {
      let bytes = 0;
      res.on('data', (b: Buffer) => (bytes += b.length));
      res.on('end', () => resolve({ ms: performance.now() - started, status: res.statusCode ?? 0, bytes }));
      res.on('error', reject);
    });
    r.setTimeout(REQUEST_TIMEOUT_MS, () => r.destroy(new Error(`GET ${req.path}: no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    r.on('error', reject);
    r.end();
  });
}

/** tool: the same table (json_output false); toolJson: the tool's default, which adds `-o json`. */
type KubectlWay = 'floor' | 'cold' | 'warm' | 'tool' | 'toolJson';
const KUBECTL_WAYS: KubectlWay[] = ['floor', 'cold', 'warm', 'tool', 'toolJson'];

interface ReplayRow {
  label: string;
  accept: string;
  paths: number;
  samples: number[];
  bytes: number;
}

interface KubectlData {
  ms: Record<KubectlWay, number[]>;
  pods: number;
  coldRequests: Captured[];
  warmRequests: Captured[];
  replay: ReplayRow[];
  /** The tool's default answer (`-o json`): characters of output, whether cut, pods in it when whole, bytes of the tool result. */
  toolJson: { chars: number; truncated: boolean; items: number | undefined; bytes: number };
}

function shortAccept(accept: string): string {
  if (accept.includes('as=Table')) return 'Table (meta.k8s.io/v1), else JSON';
  if (accept.includes('as=APIGroupDiscoveryList')) return 'aggregated discovery v2/v2beta1, else JSON';
  return accept;
}

/** Rows of the replay: kubectl's distinct requests, the per-group-version discovery pooled into one row. */
function replayRows(requests: Captured[]): Array<{ label: string; requests: Captured[] }> {
  const distinct = new Map<string, Captured>();
  for (const r of requests) if (r.method === 'GET') distinct.set(`${r.path}\n${r.headers.accept ?? ''}`, r);
  const rows = new Map<string, Captured[]>();
  for (const r of distinct.values()) {
    const bare = r.path.replace(/\?timeout=[^&]*$/, '');
    const label = /^\/apis\/[^/]+\/[^/?]+$/.test(bare) ? '`/apis/<group>/<version>` (each group kubectl asked for, in turn)' : `\`${bare}\``;
    rows.set(label, [...(rows.get(label) ?? []), r]);
  }
  return [...rows].map(([label, list]) => ({ label, requests: list }));
}

async function measureKubectl(root: string, dk: Debugkit, apiServerUrl: string, kubeconfig: string): Promise<KubectlData> {
  const home = path.join(root, 'kubectl-home');
  mkdirSync(home);
  const env = { ...process.env, HOME: home, KUBECONFIG: kubeconfig, KUBECTL_COMMAND_HEADERS: 'false' };
  const caches = path.join(root, 'kubectl-cache');
  let cold = 0;
  const args: Record<Exclude<KubectlWay, 'tool' | 'toolJson'>, () => string[]> = {
    floor: () => ['version', '--client'],
    cold: () => ['get', 'pods', '-A', '--cache-dir', path.join(caches, `cold-${++cold}`)],
    warm: () => ['get', 'pods', '-A', '--cache-dir', path.join(caches, 'warm')],
  };

  // The requests kubectl makes, cold then warm, through a recording proxy (with a cache of its own).
  const target = new URL(apiServerUrl);
  const recorder = await startRecorder(target);
  let coldRequests: Captured[];
  let warmRequests: Captured[];
  try {
    const proxied = path.join(root, 'kubeconfig-proxy');
    writeKubeconfig(proxied, recorder.url);
    const recorded = ['get', 'pods', '-A', '--cache-dir', path.join(caches, 'proxy')];
    await mustRun(KUBECTL, recorded, { cwd: root, env: { ...env, KUBECONFIG: proxied } });
    coldRequests = recorder.take();
    await mustRun(KUBECTL, recorded, { cwd: root, env: { ...env, KUBECONFIG: proxied } });
    warmRequests = recorder.take();
  } finally {
    await recorder.close();
  }

  const ms: Record<KubectlWay, number[]> = { floor: [], cold: [], warm: [], tool: [], toolJson: [] };
  let reference: string | undefined;
  let toolJson: KubectlData['toolJson'] = { chars: 0, truncated: false, items: undefined, bytes: 0 };
  const once = async (way: KubectlWay, timed: boolean) => {
    let elapsed: number;
    let out: string;
    if (way === 'toolJson') {
      const r = await dk.call('kubectl', { command: 'get pods -A', json_output: true });
      const output = String(r.value.output ?? '');
      // Over 32,000 characters the tool answers the item names instead (and it is then no longer JSON).
      const items = r.value.json === true ? (JSON.parse(output) as { items?: unknown[] }).items?.length : undefined;
      // Cut: a note with the size and the item names (not JSON); whole: JSON with every item.
      if (r.value.truncated === true ? !output.startsWith('The JSON output is') : items === undefined) throw new Error(`kubectl tool, -o json: ${output.slice(0, 500)}`);
      toolJson = { chars: output.length, truncated: r.value.truncated === true, items, bytes: r.bytes };
      if (timed) ms[way].push(r.ms);
      return;
    }
    if (way === 'tool') {
      const r = await dk.call('kubectl', { command: 'get pods -A', json_output: false });
      elapsed = r.ms;
      out = String(r.value.output ?? '').trim();
    } else {
      const r = await mustRun(KUBECTL, args[way](), { cwd: root, env, keep: true });
      elapsed = r.ms;
      out = r.stdout.trim();
    }
    if (way !== 'floor') {
      reference ??= out;
      if (out !== reference) throw new Error(`kubectl get pods -A (${way}) printed something else:\n${out.slice(0, 1000)}\n-- vs --\n${reference.slice(0, 1000)}`);
    }
    if (timed) ms[way].push(elapsed);
  };
  for (const way of KUBECTL_WAYS) await once(way, false);
  for (let round = 0; round < KUBECTL_RUNS; round++) {
    for (let k = 0; k < KUBECTL_WAYS.length; k++) await once(KUBECTL_WAYS[(round + k) % KUBECTL_WAYS.length]!, true);
  }
  const pods = Math.max(0, (reference ?? '').split('\n').length - 1);
  if (toolJson.items !== undefined && toolJson.items !== pods) throw new Error(`kubectl tool: -o json lists ${toolJson.items} pods, the table ${pods}`);

  // The server's own time: kubectl's requests (cold run) replayed over one keep-alive connection, interleaved.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const groups = replayRows(coldRequests);
    const version: Captured = { method: 'GET', path: '/version?timeout=32s', headers: { ...(coldRequests[0]?.headers ?? {}), accept: 'application/json, */*' } };
    const asked = groups.some((g) => g.label === '`/version`');
    const all = asked ? groups : [{ label: '`/version` (reference: the least a request costs)', requests: [version] }, ...groups];
    const rows: ReplayRow[] = all.map((g) => ({ label: g.label, accept: shortAccept(g.requests[0]!.headers.accept ?? ''), paths: g.requests.length, samples: [], bytes: 0 }));
    for (let i = 0; i < REPLAY_WARMUP + REPLAYS; i++) {
      for (let k = 0; k < all.length; k++) {
        const j = (i + k) % all.length;
        const g = all[j]!;
        const req = g.requests[i % g.requests.length]!;
        const r = await httpGet(agent, target, req);
        if (r.status !== 200) throw new Error(`GET ${req.path} answered ${r.status}`);
        if (i >= REPLAY_WARMUP) {
          rows[j]!.samples.push(r.ms);
          rows[j]!.bytes = Math.max(rows[j]!.bytes, r.bytes);
        }
      }
    }
    return { ms, pods, coldRequests, warmRequests, replay: rows, toolJson };
  } finally {
    agent.destroy();
  }
}

// ---------------------------------------------------------------- (3) initialize_bundle

interface InitData {
  tar: number[];
  cold: number[];
  reuse: number[];
  /** CPU seconds per extraction (medians): tar and its gzip; the debugkit server (its threads and children). */
  cpu: { tar: number; debugkit: number };
  /** Regular files and bytes of the first extraction of each way (checked equal to the enlarged tree). */
  checked: string;
}

/** Bytes and count of regular files under `dir`. */
function treeStats(dir: string): { files: number; bytes: number } {
  const all = regularFiles(dir);
  return { files: all.length, bytes: all.reduce((s, f) => s + f.size, 0) };
}

/**
 * INIT_RUNS rounds, the order alternating: `tar -xzf` into a fresh directory; and a fresh debugkit
 * server with an empty store (started untimed) calling initialize_bundle on the archive, then again
 * without force (the reuse path). Each extraction is removed before the next.
 */
async function measureInit(root: string, big: BigBundle): Promise<InitData> {
  const dir = path.join(root, 'init');
  mkdirSync(dir);
  const data: InitData = { tar: [], cold: [], reuse: [], cpu: { tar: 0, debugkit: 0 }, checked: '' };
  const cpuTar: number[] = [];
  const cpuDk: number[] = [];
  const want = { files: big.files, bytes: big.bytes };
  const check = (what: string, got: { files: number; bytes: number }) => {
    if (got.files !== want.files || got.bytes !== want.bytes) throw new Error(`${what} holds ${got.files} files, ${got.bytes} bytes; the enlarged tree ${want.files}, ${want.bytes}`);
  };
  for (let round = 0; round < INIT_RUNS; round++) {
    for (const way of round % 2 === 0 ? (['tar', 'debugkit'] as const) : (['debugkit', 'tar'] as const)) {
      if (way === 'tar') {
        const dest = path.join(dir, `tar-${round}`);
        mkdirSync(dest);
        const before = childCpu();
        const r = await mustRun('tar', ['-xzf', big.archive, '-C', dest], { cwd: root, timeoutMs: ARCHIVE_TIMEOUT_MS });
        data.tar.push(r.ms);
        cpuTar.push(childCpu() - before);
        if (round === 0) check('`tar -xzf`', treeStats(path.join(dest, path.basename(big.base))));
        rmSync(dest, { recursive: true, force: true });
        continue;
      }
      const store = path.join(dir, `store-${round}`);
      const home = path.join(dir, `home-${round}`);
      mkdirSync(home);
      const dk = await Debugkit.start(root, store, home);
      try {
        const cpuBefore = processCpu(dk.pid);
        const cold = await dk.call('initialize_bundle', { source: big.archive, force: false }, ARCHIVE_TIMEOUT_MS);
        cpuDk.push(processCpu(dk.pid) - cpuBefore);
        if (cold.value.reused !== false) throw new Error(`initialize_bundle on a fresh store answered reused: ${cold.value.reused}`);
        const again = await dk.call('initialize_bundle', { source: big.archive, force: false }, ARCHIVE_TIMEOUT_MS);
        if (again.value.reused !== true) throw new Error(`initialize_bundle again answered reused: ${again.value.reused}`);
        data.cold.push(cold.ms);
        data.reuse.push(again.ms);
        if (round === 0) {
          const got = treeStats(cold.value.path);
          // The store adds its metadata file next to the bundle's directory.
          const meta = regularFiles(cold.value.path).filter((f) => f.rel === '.debugkit-bundle.json');
          check('the store', { files: got.files - meta.length, bytes: got.bytes - meta.reduce((s, f) => s + f.size, 0) });
          data.checked = `${got.files - meta.length} files, ${mb(got.bytes)} MB`;
        }
      } finally {
        await dk.close();
        rmSync(store, { recursive: true, force: true });
        rmSync(home, { recursive: true, force: true });
      }
    }
  }
  data.cpu = { tar: median(cpuTar), debugkit: median(cpuDk) };
  return data;
}

/** CPU seconds (user + system) of the children this process has waited for (tar and the gzip it runs). */
function childCpu(): number {
  // /proc/self/stat fields 16 and 17: cutime, cstime (clock ticks) of waited-for children.
  const f = readFileSync('/proc/self/stat', 'utf8')
    .slice(readFileSync('/proc/self/stat', 'utf8').lastIndexOf(')') + 2)
    .split(' ');
  return (Number(f[13]) + Number(f[14])) / CLOCK_TICKS;
}

/** CPU seconds (user + system) of a process, its threads and its waited-for children, from /proc. */
function processCpu(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // utime, stime, cutime, cstime: fields 14-17 (1-based), 12-15 here.
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLOCK_TICKS;
}

const CLOCK_TICKS = 100;

// ---------------------------------------------------------------- (4) memory on a 2 GB bundle

const BIG_MB = envInt('BENCH_BUNDLE_BIG_MB', 2000);
const BIG_GZIP_LEVEL = envInt('BENCH_BUNDLE_BIG_GZIP_LEVEL', 1);
/** Bound on building, archiving or initializing the big bundle. */
const BIG_TIMEOUT_MS = 20 * 60_000;

interface MemoryReport {
  table: Table;
  verdict: { goal: string; met: boolean; detail: string };
  method: string;
}

/** Peak resident memory (VmHWM) of a process, in bytes; reset with clear_refs where the kernel allows. */
function peakRss(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/**
 * A bundle of BIG_MB: the enlarged tree's copies again, each text file's content repeated so the
 * files are ten times larger (the file count stays under the extraction's entry limit), archived
 * with gzip -1; the tree is removed once archived. A fresh server initializes it from the archive,
 * then answers `kubectl get pods -A`, grep_files (a pattern found nowhere, so every byte is read;
 * a common one with the default max_results) and read_file of lines deep in the largest file. The
 * server's peak resident memory (VmHWM) is read after each step, reset between steps.
 */
async function measureMemory(root: string, big: BigBundle): Promise<MemoryReport> {
  const dir = path.join(root, 'big');
  const tree = path.join(dir, 'tree', path.basename(big.base));
  mkdirSync(tree, { recursive: true });
  let t = performance.now();
  // The fixture as it is, then copies with each text file repeated.
  const fixtureFiles = regularFiles(big.base).filter((f) => !f.rel.startsWith('copies/'));
  for (const f of fixtureFiles) {
    mkdirSync(path.dirname(path.join(tree, f.rel)), { recursive: true });
    copyFileSync(path.join(big.base, f.rel), path.join(tree, f.rel));
  }
  const text = fixtureFiles.filter((f) => isText(path.join(big.base, f.rel)));
  const repeat = 10;
  const copyBytes = text.reduce((s, f) => s + f.size, 0) * repeat;
  const copies = Math.max(1, Math.ceil((BIG_MB * 1e6 - big.fixtureBytes) / copyBytes));
  let largest = { rel: '', size: 0 };
  for (let k = 1; k <= copies; k++) {
    for (const f of text) {
      const rel = `copies/${String(k).padStart(4, '0')}/${f.rel}`;
      const out = path.join(tree, rel);
      mkdirSync(path.dirname(out), { recursive: true });
      const body = readFileSync(path.join(big.base, f.rel));
      const data = Buffer.concat(Array.from({ length: repeat }, () => body));
      writeFileSync(out, data);
      if (data.length > largest.size) largest = { rel, size: data.length };
    }
  }
  const totalBytes = big.fixtureBytes + copies * copyBytes;
  const files = fixtureFiles.length + copies * text.length;
  const buildMs = performance.now() - t;
  const archive = path.join(dir, 'big-bundle.tar.gz');
  t = performance.now();
  await mustRun('tar', ['-I', `gzip -${BIG_GZIP_LEVEL}`, '-cf', archive, '-C', path.dirname(tree), path.basename(tree)], { cwd: root, timeoutMs: BIG_TIMEOUT_MS });
  const archiveMs = performance.now() - t;
  rmSync(path.join(dir, 'tree'), { recursive: true, force: true });
  process.stdout.write(`bundles:   ${files} files, ${mb(totalBytes)} MB; archive ${mb(statSync(archive).size)} MB in ${sec(archiveMs)} s\n`);

  const home = path.join(dir, 'home');
  mkdirSync(home);
  const dk = await Debugkit.start(root, path.join(dir, 'store'), home);
  const rows: string[][] = [];
  let worst = 0;
  let resets = true;
  try {
    const pid = dk.pid!;
    const step = async (label: string, name: string, args: Record<string, unknown>, summary: (v: any) => string, timeoutMs = RUN_TIMEOUT_MS) => {
      resets = resetPeak(pid) && resets;
      const r = await dk.call(name, args, timeoutMs);
      const peak = peakRss(pid);
      worst = Math.max(worst, peak);
      rows.push([label, sec(r.ms), mb(peak), summary(r.value)]);
      process.stdout.write(`bundles:   ${label}: ${sec(r.ms)} s, peak RSS ${mb(peak)} MB\n`);
      return r;
    };
    rows.push(['server started (idle)', '—', mb(peakRss(pid)), '']);
    worst = peakRss(pid);
    await step('`initialize_bundle {source: <archive>}`', 'initialize_bundle', { source: archive, force: false }, (v) => `${v.path ? 'extracted' : ''}`, BIG_TIMEOUT_MS);
    await step('`kubectl get pods -A`', 'kubectl', { command: 'get pods -A', json_output: false }, (v) => `${String(v.output ?? '').split('\n').length - 1} pods`);
    await step(
      '`grep_files OOMKilled` (case-sensitive, found nowhere: every byte read)',
      'grep_files',
      { pattern: 'OOMKilled', case_sensitive: true },
      (v) => `${v.metadata.total_matches} matches, ${v.metadata.files_searched} files`,
      BIG_TIMEOUT_MS,
    );
    await step(
      '`grep_files error` (default max_results 1000)',
      'grep_files',
      { pattern: 'error' },
      (v) => `${v.metadata.total_matches} matches${v.metadata.truncated ? ', truncated' : ''}`,
      BIG_TIMEOUT_MS,
    );
    // 10,000: answers over 10 MiB end the stdio connection (the SDK's line limit), and 100,000 matches of this line length would be ~20 MB.
    await step(
      '`grep_files fail(ed|ure)` (max_results 10,000)',
      'grep_files',
      { pattern: 'fail(ed|ure)', case_sensitive: true, max_results: 10_000 },
      (v) => `${v.metadata.total_matches} matches${v.metadata.truncated ? ', truncated' : ''}`,
      BIG_TIMEOUT_MS,
    );
    const deep = Math.max(0, Math.floor(largest.size / 200));
    await step(
      `\`read_file\` of 100 lines deep in the largest file (${mb(largest.size)} MB)`,
      'read_file',
      { path: `/${largest.rel}`, start_line: deep, end_line: deep + 100 },
      (v) => `${String(v.content ?? '').length} characters`,
    );
  } finally {
    await dk.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const met = worst < MEMORY_GOAL_MB * 1e6;
  return {
    table: {
      title: `Memory of the debugkit process on a ${mb(totalBytes)} MB bundle (${files} files)`,
      columns: ['step', 's', 'peak RSS, MB', 'answer'],
      rows,
      note: resets
        ? "Peak RSS: VmHWM from /proc/<pid>/status, reset before each step (clear_refs 5), so each row is that step's own peak. rg and kubectl are separate processes, not counted."
        : 'Peak RSS: VmHWM from /proc/<pid>/status; the kernel refused to reset it, so each row is the peak so far. rg and kubectl are separate processes, not counted.',
    },
    verdict: {
      goal: `a ${mb(totalBytes)} MB bundle initializes and answers kubectl, grep_files and read_file with the debugkit process under ${MEMORY_GOAL_MB} MB`,
      met,
      detail: `peak RSS ${mb(worst)} MB`,
    },
    method:
      `(4) memory: the copies again with every text file repeated ${repeat} times (${copies} copies, ${files} files, ${mb(totalBytes)} MB), built in ${sec(buildMs)} s and ` +
      `archived with gzip -${BIG_GZIP_LEVEL} in ${sec(archiveMs)} s (\`BENCH_BUNDLE_BIG_MB\` sets the size); a fresh server (stdio, private HOME and store) initializes it ` +
      'from the archive and answers each step in turn.',
  };
}

// ---------------------------------------------------------------- run

async function run(): Promise<BenchResult> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
  if (!existsSync(FIXTURE)) throw new Error(`the fixture bundle ${FIXTURE} is missing (BENCH_BUNDLE_FIXTURE names another)`);
  const versions = {
    kubectl: versionLine(KUBECTL, ['version', '--client']),
    grep: versionLine('grep', ['--version']),
    tar: versionLine('tar', ['--version']),
    gzip: versionLine('gzip', ['--version']),
    fs: '',
  };
  const loadBefore = os.loadavg()[0]!;
  const tmp = tempParent();
  const root = realpathSync(mkdtempSync(path.join(tmp, 'debugkit-bench-bundles-')));
  trackTempDir(root);
  versions.fs = `${root.slice(0, root.lastIndexOf('/')) || '/'} (${versionLine('stat', ['-f', '-c', '%T', root])})`;
  const servers: Debugkit[] = [];
  const phase = (what: string) => process.stdout.write(`bundles: ${what}\n`);
  try {
    let t = performance.now();
    phase(`building a ${TARGET_MB} MB bundle from ${path.basename(FIXTURE)}`);
    const big = await buildBundle(root);
    phase(
      `${big.files} files, ${mb(big.bytes)} MB (${big.copies} copies of the fixture's text files) in ${sec(big.buildMs)} s; ` +
        `archive ${mb(big.archiveBytes)} MB (gzip -${GZIP_LEVEL}) in ${sec(big.archiveMs)} s`,
    );

    // One server for (1) and (2): the enlarged directory as the source, used in place.
    const home = path.join(root, 'server-home');
    mkdirSync(home);
    const dk = await Debugkit.start(root, path.join(root, 'store'), home);
    servers.push(dk);
    const init = await dk.call('initialize_bundle', { source: big.base, force: false }, ARCHIVE_TIMEOUT_MS);
    const apiServerUrl = kubeconfigServer(init.value.kubeconfig_path);
    const setupSeconds = (performance.now() - t) / 1000;

    t = performance.now();
    phase(`(1) grep: ${PATTERNS.length} patterns, 1 + ${GREP_RUNS} runs per way`);
    const grep = await measureGrep(big, dk);
    const grepSeconds = (performance.now() - t) / 1000;

    t = performance.now();
    phase(`(2) kubectl: 1 + ${KUBECTL_RUNS} runs per way; then ${REPLAY_WARMUP} + ${REPLAYS} replays of each request`);
    const kubectl = await measureKubectl(root, dk, apiServerUrl, init.value.kubeconfig_path);
    const kubectlSeconds = (performance.now() - t) / 1000;
    for (const server of servers.splice(0)) await server.close();

    t = performance.now();
    phase(`(3) initialize_bundle vs tar -xzf: ${INIT_RUNS} runs each`);
    const initData = await measureInit(root, big);
    const initSeconds = (performance.now() - t) / 1000;

    phase(`(4) memory: a ${BIG_MB} MB bundle, initialized and queried by a fresh server`);
    const memory = await measureMemory(root, big);
    return report({ big, versions, grep, kubectl, init: initData, memory, seconds: [setupSeconds, grepSeconds, kubectlSeconds, initSeconds], load: [loadBefore, os.loadavg()[0]!] });
  } finally {
    for (const server of servers) await server.close();
    const killed = releaseTempDir(root);
    if (killed.length > 0) process.stderr.write(`bench: killed leftover processes: ${killed.join(', ')}\n`);
  }
}

/**
 * Where the run's directory goes: BENCH_BUNDLE_TMPDIR, else /dev/shm when it is there. Every tree
 * the bench writes (the enlarged bundle, each extraction) is then in memory: on a disk, creating and
 * removing some 19,000 files can take from 2 to 20 s of kernel time from one run to the next (as on
 * the VM this was written on), which buries the difference between tar and initialize_bundle.
 */
function tempParent(): string {
  const chosen = process.env.BENCH_BUNDLE_TMPDIR;
  if (chosen) return chosen;
  try {
    if (statSync('/dev/shm').isDirectory()) {
      const probe = mkdtempSync('/dev/shm/debugkit-bench-probe-');
      rmSync(probe, { recursive: true, force: true });
      return '/dev/shm';
    }
  } catch {
    /* not there, or not writable */
  }
  return os.tmpdir();
}

/** The API server a kubeconfig written by debugkit points at. */
function kubeconfigServer(file: string): string {
  const config = JSON.parse(readFileSync(file, 'utf8')) as { clusters?: Array<{ cluster?: { server?: string } }> };
  const server = config.clusters?.[0]?.cluster?.server;
  if (!server) throw new Error(`no server in the kubeconfig ${file}`);
  return server;
}

// ---------------------------------------------------------------- report

function spread(samples: number[]): { n: number; median: number; p90: number; min: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { n: sorted.length, median: percentile(sorted, 50), p90: percentile(sorted, 90), min: sorted[0] ?? NaN, max: sorted.at(-1) ?? NaN };
}

const median = (samples: number[]) => spread(samples).median;
const ratio = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}x` : 'n/a');
const sec = (msecs: number) => (msecs / 1000).toFixed(2);
const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
const kb = (bytes: number) => (bytes < 10_000 ? `${(bytes / 1e3).toFixed(2)} kB` : bytes < 1e6 ? `${(bytes / 1e3).toFixed(0)} kB` : `${(bytes / 1e6).toFixed(1)} MB`);
/** MB/s of `bytes` searched in `msecs`. */
const rate = (bytes: number, msecs: number) => (bytes / 1e6 / (msecs / 1000)).toFixed(0);

interface RunData {
  big: BigBundle;
  versions: Record<'kubectl' | 'grep' | 'tar' | 'gzip' | 'fs', string>;
  grep: GrepSamples[];
  kubectl: KubectlData;
  init: InitData;
  memory: MemoryReport;
  seconds: [number, number, number, number];
  load: [number, number];
}

function report({ big, versions, grep, kubectl, init, memory, seconds, load }: RunData): BenchResult {
  const locale = process.env.LC_ALL || process.env.LC_CTYPE || process.env.LANG || 'POSIX';
  const grepLabel = (p: GrepPattern) => `\`grep ${p.grepFlags.join(' ')}\``;

  // (1)
  const grepTable: Table = {
    title: `grep_files vs grep -rn over ${mb(big.bytes)} MB (${big.files} files), s`,
    columns: ['pattern', 'way', 'matching lines', 'runs', 'median', 'min', 'max', 'MB/s', 'speed vs grep'],
    rows: grep.flatMap((s) => {
      const base = median(s.ms.grep);
      const label = `\`${s.p.pattern}\` (${s.p.what})`;
      return (
        [
          ['grep', grepLabel(s.p)],
          ['rg', `\`rg -n --no-ignore --hidden${s.p.caseSensitive ? '' : ' -i'}\``],
          ['builtin', `debugkit \`grepFiles()\`, built-in search${s.p.caseSensitive ? ', case_sensitive' : ''}`],
          ['library', `debugkit \`grepFiles()\`, engine ${s.engine}${s.p.caseSensitive ? ', case_sensitive' : ''}`],
          ['tool', `**debugkit \`grep_files\`** (MCP)${s.p.caseSensitive ? ', case_sensitive' : ''}`],
        ] as const
      ).map(([way, name]) => {
        const x = spread(s.ms[way]);
        return [label, name, String(s.matches[way]), String(x.n), sec(x.median), sec(x.min), sec(x.max), rate(big.bytes, x.median), way === 'grep' ? '—' : ratio(base, x.median)];
      });
    }),
    note:
      `"speed vs grep": grep's median time over the way's (1.00x = as fast as grep; the goal is at least ${GREP_GOAL}x). ` +
      'The built-in search and the ripgrep engine gave byte-identical answers (whole result, JSON) on every pattern. ' +
      `MB/s: the tree's ${mb(big.bytes)} MB of file data over the median time. grep runs in the locale ${locale}, as the bench was started.`,
  };
  const answerTable: Table = {
    title: 'grep_files answers',
    columns: ['pattern', 'matching lines', 'files searched', 'answer (JSON)', 'text content', 'truncated'],
    rows: grep.map((s) => [
      `\`${s.p.pattern}\``,
      String(s.matches.tool),
      String(s.filesSearched),
      kb(s.toolBytes),
      `${s.toolTextChars} chars`,
      s.toolTruncated ? `yes, at max_results ${TOOL_MAX_RESULTS}` : 'no',
    ]),
    note:
      `Every call asked for max_results ${TOOL_MAX_RESULTS} (the tool's ceiling), so nothing was cut. The answer is the whole tool result as JSON ` +
      '(the rendered text plus structuredContent with every match); the server bounds it only by max_results.',
  };

  // (2)
  const floor = median(kubectl.ms.floor);
  const kubectlTable: Table = {
    title: '`kubectl get pods -A`, whole process, ms',
    columns: ['run', 'n', 'median', 'p90', 'min', 'max', 'median minus floor'],
    rows: (
      [
        ['floor', "`kubectl version --client` (kubectl's floor: start-up, no request)"],
        ['cold', `\`kubectl get pods -A\`, empty cache dir (${kubectl.coldRequests.length} requests)`],
        ['warm', `\`kubectl get pods -A\`, warm discovery cache (${kubectl.warmRequests.length} request${kubectl.warmRequests.length === 1 ? '' : 's'})`],
        ['tool', '**debugkit `kubectl` tool** `{command: "get pods -A", json_output: false}` (MCP; warm cache)'],
        ['toolJson', '**debugkit `kubectl` tool** `{command: "get pods -A"}` (default: adds `-o json`)'],
      ] as const
    ).map(([way, label]) => {
      const x = spread(kubectl.ms[way]);
      return [label, String(x.n), ms(x.median), ms(x.p90), ms(x.min), ms(x.max), way === 'floor' ? '—' : ms(x.median - floor, true)];
    }),
    note:
      `The bundle's ${kubectl.pods} pods (the copies are outside cluster-resources/, so the API server serves the fixture's objects). ` +
      `The tool's default answer (\`-o json\`): ${kubectl.toolJson.chars} characters of output` +
      (kubectl.toolJson.truncated ? ", over the tool's 32,000-character budget (so the item names, not JSON)" : `, ${kubectl.toolJson.items} pods`) +
      `; the tool result is ${kb(kubectl.toolJson.bytes)} as JSON.`,
  };
  const serverTable: Table = {
    title: "API server time per request, kubectl's requests replayed, ms",
    columns: ['request', 'Accept', 'paths', 'n', 'p50', 'p99', 'mean', 'answer'],
    rows: kubectl.replay.map((r) => {
      const x = summarize(r.samples);
      return [r.label, r.accept, String(r.paths), String(x.n), ms(x.p50), ms(x.p99), ms(x.mean), kb(r.bytes)];
    }),
    note:
      'Timed in the bench from writing the request to the end of the answer, over one keep-alive connection to the API server debugkit runs ' +
      "(in its own process): the bench's HTTP client is included, as `/version` shows.",
  };

  // (3)
  const tarMedian = median(init.tar);
  const initTable: Table = {
    title: `Opening the enlarged bundle: ${mb(big.archiveBytes)} MB .tar.gz (gzip -${GZIP_LEVEL}) of ${mb(big.bytes)} MB, s`,
    columns: ['way', 'n', 'median', 'min', 'max', 'content MB/s', 'vs tar -xzf'],
    rows: (
      [
        ['tar', '`tar -xzf` into an empty directory (baseline)', init.tar],
        ['cold', '**debugkit `initialize_bundle`**, fresh store', init.cold],
        ['reuse', '**debugkit `initialize_bundle`** again, no force (reuse)', init.reuse],
      ] as const
    ).map(([way, label, samples]) => {
      const x = spread([...samples]);
      const s3 = (v: number) => (v / 1000).toFixed(3);
      return [label, String(x.n), s3(x.median), s3(x.min), s3(x.max), way === 'reuse' ? '—' : rate(big.bytes, x.median), way === 'cold' ? ratio(x.median, tarMedian) : '—'];
    }),
    note: `"vs tar -xzf": the way's median time over tar's. initialize_bundle includes starting the bundle's API server. Extracted: ${init.checked} (as the enlarged tree).`,
  };

  const worst = grep.map((s) => ({ s, r: median(s.ms.grep) / median(s.ms.tool), lib: median(s.ms.grep) / median(s.ms.library) })).sort((a, b) => a.r - b.r);
  const cpu = os.cpus();
  const requestsCold = kubectl.coldRequests.map((r) => `\`${r.path.replace(/\?timeout=[^&]*$/, '')}\``);
  return {
    name: 'bundles',
    date: new Date(),
    machine: [
      ['CPU', `${cpu[0]?.model.trim() ?? 'unknown'}, ${cpu.length} cores`],
      ['OS', `${os.type()} ${os.release()} ${os.arch()}`],
      ['Node', process.version],
      ['kubectl', versions.kubectl],
      ['grep', `${versions.grep}, locale ${locale}`],
      ['tar, gzip', `${versions.tar}; ${versions.gzip}`],
      ["the run's directory", `in ${versions.fs}`],
      ['load average (1 min) before/after', `${load[0].toFixed(2)} / ${load[1].toFixed(2)}`],
    ],
    summary:
      `The bundles toolset on a support bundle enlarged to ${mb(big.bytes)} MB: grep_files against \`grep -rn\` on the same tree (as a library ` +
      "call and through the MCP tool); the whole-process time of `kubectl get pods -A` against the bundle's API server next to kubectl's own floor, " +
      "and the server's own time for each request kubectl makes; and initialize_bundle on the enlarged .tar.gz against `tar -xzf` of it.",
    method: [
      `Bundle: \`${path.basename(FIXTURE)}\` (${big.fixtureFiles} files, ${mb(big.fixtureBytes)} MB: ${big.fixtureKinds}) extracted into a temporary ` +
        `directory, then its text files copied ${big.copies} times into \`copies/001/\`... under the bundle's directory, relative paths kept: ` +
        `${big.files} files, ${mb(big.bytes)} MB (MB = 10^6 bytes). Archived with \`tar -I 'gzip -${GZIP_LEVEL}'\` to ${mb(big.archiveBytes)} MB. ` +
        `Building took ${sec(big.buildMs)} s, archiving ${sec(big.archiveMs)} s (set-up in all ${seconds[0].toFixed(1)} s). \`BENCH_BUNDLE_MB\` sets the size. ` +
        `Everything the run writes (this tree, the archive, every extraction, the store) is in ${versions.fs}; the default is /dev/shm ` +
        "(`BENCH_BUNDLE_TMPDIR` picks another place), since on this VM's disk creating and removing ~19,000 files took from 2 to 20 s of kernel " +
        'time from one run of the same `tar -xzf` to the next.',
      '**debugkit**: MCP SDK `Client` + `StdioClientTransport` running `node dist/cli.js --toolsets bundles --bundle-dir <tmp>/store` (HOME and TMPDIR ' +
        "inside the run's directory, so kubectl's cache and the kubeconfig stay there), started before any measurement; `initialize_bundle` with the " +
        'enlarged directory as the source (used in place). The debugkit figures include the MCP client side.',
      `(1) grep: ${PATTERNS.map((p) => `\`${p.pattern}\` (${grepLabel(p)})`).join(', ')}, each run by: \`grep\` in the bundle's directory (\`.\`), its ` +
        'output read through a pipe and its lines counted; `rg -n --no-ignore --hidden` the same way; `grepFiles()` from src/ in the bench process ' +
        '(max_results 10^8) with the built-in search and with its default engine (ripgrep when installed), whose whole answers are checked identical; ' +
        `and the \`grep_files\` tool (max_results ${TOOL_MAX_RESULTS}, the tool's ceiling). The matching-line counts of all are checked equal. \`grep -rc\` reads the whole tree ` +
        `first (page cache warm); per pattern one untimed run of each way, then ${GREP_RUNS} rounds, the order rotating. The ripgrep engine keeps the last ` +
        'file listing (names in order, text or binary) while no directory changes: the untimed run fills it, so the timed runs are rg plus the check of its ' +
        `candidate lines; a first search of a bundle also walks and sniffs every file, alongside rg. Took ${seconds[1].toFixed(1)} s.`,
      `(2) kubectl: \`${KUBECTL}\` with KUBECONFIG set to the kubeconfig debugkit wrote, a private empty HOME and KUBECTL_COMMAND_HEADERS=false (as the ` +
        '`kubectl` tool runs it). Cold: `--cache-dir` a new empty directory each run; warm: one cache directory filled by an untimed run. The tool runs ' +
        "kubectl with the server's HOME, whose cache the untimed call fills. Timed from spawn to the end of the output; each run's output is checked " +
        `equal. 1 untimed + ${KUBECTL_RUNS} runs per way, the order rotating. Requests of a cold run (recorded through a pass-through proxy): ` +
        `${requestsCold.join(', ')}; warm: ${kubectl.warmRequests.map((r) => `\`${r.path.replace(/\?timeout=[^&]*$/, '')}\``).join(', ')}.`,
      `(2) server: each distinct request of the cold run replayed with kubectl's own headers (Accept, User-Agent, Authorization), ${REPLAY_WARMUP} untimed ` +
        `+ ${REPLAYS} timed per row, rows interleaved; the per-group discovery requests share one row, taking the groups in turn. Took ${seconds[2].toFixed(1)} s for (2).`,
      `(3) initialize: ${INIT_RUNS} rounds, alternating which goes first: \`tar -xzf\` into an empty directory; and a fresh debugkit server (started ` +
        'untimed) with an empty store calling `initialize_bundle {source: <archive>}` (extraction, store metadata, API server start), then the same call ' +
        'again (answered `reused: true`). Each extraction is removed before the next; the first of each is checked to hold the enlarged tree. ' +
        `Took ${seconds[3].toFixed(1)} s.`,
      memory.method,
      'Median/p90/p50/p99: nearest rank. The temporary directory, the servers and every process started are gone at the end.',
    ],
    tables: [grepTable, answerTable, kubectlTable, serverTable, initTable, memory.table],
    verdicts: [
      {
        goal: `grep_files at least ${GREP_GOAL}x of \`grep -rn\`'s speed on a ${mb(big.bytes)} MB bundle (median, every pattern, through MCP)`,
        met: worst[0]!.r >= GREP_GOAL,
        detail:
          `slowest ${worst[0]!.r.toFixed(2)}x on \`${worst[0]!.s.p.pattern}\` (${sec(median(worst[0]!.s.ms.tool))} vs ${sec(median(worst[0]!.s.ms.grep))} s), ` +
          `fastest ${worst.at(-1)!.r.toFixed(2)}x on \`${worst.at(-1)!.s.p.pattern}\`; as a library call ${Math.min(...worst.map((w) => w.lib)).toFixed(2)}x to ` +
          `${Math.max(...worst.map((w) => w.lib)).toFixed(2)}x (engine: ${[...new Set(grep.map((g) => g.engine))].join(', ')}); against \`rg\` the tool runs at ` +
          `${Math.min(...grep.map((g) => median(g.ms.rg) / median(g.ms.tool))).toFixed(2)}x to ${Math.max(...grep.map((g) => median(g.ms.rg) / median(g.ms.tool))).toFixed(2)}x of rg's speed; ` +
          `the built-in search (no rg) ${Math.min(...grep.map((g) => median(g.ms.grep) / median(g.ms.builtin))).toFixed(2)}x to ${Math.max(...grep.map((g) => median(g.ms.grep) / median(g.ms.builtin))).toFixed(2)}x of grep's`,
      },
      {
        goal: `\`kubectl get pods -A\` through the tool within ${KUBECTL_GOAL_MS} ms of kubectl's own cost with a warm discovery cache (medians)`,
        met: median(kubectl.ms.tool) - median(kubectl.ms.warm) <= KUBECTL_GOAL_MS,
        detail:
          `tool ${ms(median(kubectl.ms.tool))} ms, kubectl warm ${ms(median(kubectl.ms.warm))} ms: ${ms(median(kubectl.ms.tool) - median(kubectl.ms.warm), true)} ms; ` +
          `kubectl's floor (\`version --client\`) ${ms(floor)} ms, so kubectl itself spends ${ms(median(kubectl.ms.warm) - floor, true)} ms on its warm cache, one request and the table`,
      },
      {
        goal: `initialize_bundle of the ${mb(big.archiveBytes)} MB .tar.gz within ${INIT_GOAL}x of \`tar -xzf\` (medians)`,
        met: median(init.cold) <= INIT_GOAL * tarMedian,
        detail: `${ratio(median(init.cold), tarMedian)} (${sec(median(init.cold))} vs ${sec(tarMedian)} s); CPU time (user + system, all threads and children) debugkit ${init.cpu.debugkit.toFixed(2)} s, tar + gzip ${init.cpu.tar.toFixed(2)} s per extraction (medians)`,
      },
      memory.verdict,
    ],
  };
}

export const bundlesBench: BenchModule = { name: 'bundles', run };
