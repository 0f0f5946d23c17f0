import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, readlinkSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { DebugkitError } from './errors.js';
import { boundPromise, pollUntil, sleep, TimeSlice, waitBounded } from './wait.js';

/**
 * Every child process debugkit starts goes through `spawnChild`, and so does everything that child
 * starts in turn: forks, background jobs, `setsid` and double-forking daemons. Each child is the
 * root of a tree that ends as a whole, when the child exits (a recorded command's background job
 * dies when the command does) or is terminated (a session's gdb and whatever its program forked),
 * and at server exit. The tree is found in one of two ways (`processTracking`):
 *
 * - **cgroup**: where debugkit may create cgroup v2 groups below its own (root, or a delegated
 *   subtree; Linux >= 5.14 for `cgroup.kill`), the child enters a group of its own before it runs
 *   its program (a `/bin/sh` stub writes itself into `cgroup.procs`, then execs it). Everything it
 *   starts is born in that group whatever it does with sessions and process groups, and
 *   `cgroup.kill` ends them all at once. Cost: the stub (~15 ms before the program starts, off the
 *   event loop) and a few ms to kill and remove the group. A process can still leave: its user may
 *   write it into another group (the server's own), and `setsid` takes it out of the process
 *   group (attack q2-1). So the tree's marks below are set here too, and swept for after the
 *   group is killed.
 * - **environment**: otherwise every child gets `DEBUGKIT_OWNER=<random token>`, which its
 *   descendants inherit through forks, `setsid` and exec; ending the tree scans every
 *   `/proc/PID/environ` (readable for processes of debugkit's own user) for the token, and that of
 *   every pid given out while it scans (so a chain that forks and exits faster than a scan is
 *   found too: sweepMarked), SIGKILLs what carries it and scans again until nothing does. A process
 *   that clears or rewrites its own environment is not found this way (its limit below finds it). Cost:
 *   one scan when a tree ends (two when it left processes to end), ~15-35 us per process on the
 *   machine (bench/process-tracking.ts) and per pid given out meanwhile, in slices of 2 ms so the
 *   event loop never waits on it longer; no periodic scan.
 *   A process that is not dumpable (`prctl(PR_SET_DUMPABLE, 0)`, or the exec of a setuid or setgid
 *   program such as ssh-agent) has a /proc/PID/environ only root can read (attack g1-5). So where
 *   util-linux's `prlimit` works (in both modes), the child also starts through it with a second copy of the token
 *   in a resource limit: the soft limit of RLIMIT_LOCKS (which Linux has not enforced since 2.4.25,
 *   so the value changes nothing), a random number of 48 bits. Limits are inherited through fork,
 *   setsid and every exec, setuid and setgid ones included, and /proc/PID/limits is readable by
 *   anyone; a process whose environment cannot be read, or holds no token, is matched by it
 *   (limitsMarked). And whatever did not start a session of its own is in the child's (which
 *   starts one), whatever process group it is in (gdb gives its program one of its own: attack
 *   s2-1): every process of that session is the tree's. What still escapes: a process that leaves
 *   its cgroup (or runs where there is none), the child's session (setsid), the token in its
 *   environment and its RLIMIT_LOCKS, all four; and where `prlimit` is missing or fails, one that
 *   leaves the cgroup and the session and clears its environment. Only a user or PID namespace of
 *   its own would stop that. endMarkedProcesses's second mark is in the
 *   environment alone: a non-dumpable process of a debuggee is ended with the tree, not before.
 *
 * The token is set in both modes; gdb's exec-wrapper adds `DEBUGKIT_INFERIOR=<pid>` so one
 * debuggee's processes can be ended apart from its session (`endMarkedProcesses`).
 * `DEBUGKIT_CGROUP=off` in debugkit's environment chooses the environment mode.
 */

/** The variable that marks every process of one child's tree. */
export const OWNER_VAR = 'DEBUGKIT_OWNER';

/** The resource limit whose soft value marks the tree too (where `prlimit` works). */
const LIMITS_MARK = 'locks';

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface OwnedChild {
  child: ChildProcess;
  /** Settles once the process has exited (never rejects). */
  exited: Promise<ChildExit>;
  /** Settles once the process has exited and every process of its tree is gone (never rejects). */
  ended: Promise<ChildExit>;
}

/** How the trees of child processes are found and ended on this machine. */
export type ProcessTracking = { kind: 'cgroup'; dir: string } | { kind: 'environment'; reason: string };

/** One child and everything it starts. */
interface Tree {
  /** The value of OWNER_VAR in the tree's environments. */
  token: string;
  /** The soft RLIMIT_LOCKS of the tree's processes, in decimal (when `prlimit` works). */
  limits?: string;
  /** The tree's cgroup directory (cgroup mode). */
  cgroup?: string;
  /** The child's process group, signalled too (it costs nothing). */
  pgid?: number;
  /**
   * The child's session (it starts one: spawned detached), with the start time of its leader, the
   * child: whatever of the tree did not call setsid is in it, whatever process group it moved to
   * (gdb gives its program one of its own: attack s2-1).
   */
  session?: { sid: number; start: string | undefined };
  /** Set once the tree is being ended. */
  ending?: Promise<void>;
}

/** Trees not yet known to be empty: server exit ends whatever is left, even from a synchronous handler. */
const live = new Set<Tree>();
const treeOf = new WeakMap<ChildProcess, Tree>();

/**
 * Variables of debugkit's own environment that hold its secrets (the full-scope `--api-key`, the
 * store's connection string with its password): never handed to a child. A debuggee, gdb (`show
 * environment`) or a recorded command runs code of the key holder's choosing and would read them.
 */
const SECRET_ENV = new Set(['DEBUGKIT_API_KEY', 'DEBUGKIT_STORE']);

/**
 * Marks another variable of debugkit's environment as its secret: e.g. PGPASSWORD when the store's
 * connection string leaves its password to libpq's variable.
 */
export function keepFromChildren(name: string): void {
  SECRET_ENV.add(name);
}

/** The environment a child gets: `env` (default: debugkit's own) without debugkit's secrets. */
export function childEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const name of SECRET_ENV) delete out[name];
  return out;
}

// --- how trees are tracked ------------------------------------------------------------------

/** Run by /bin/sh as `sh -c ENTER_CGROUP <cgroup dir> <program> <args...>`: join the group, then become the program. */
const ENTER_CGROUP = 'echo 0 > "$0/cgroup.procs" || exit 126; exec "$@"';
let tracking: Promise<ProcessTracking> | undefined;
/** The same, once known (for the synchronous exit path). */
let trackingKnown: ProcessTracking | undefined;
let groups = 0;

/** `prlimit`, when trees are also marked by a resource limit. */
let limitsMarker: string | undefined;

/** How this server tracks its children's trees; decided once, at the first spawn. */
export function processTracking(): Promise<ProcessTracking> {
  tracking ??= detectTracking().then(async (t) => {
    limitsMarker = await findLimitsMarker();
    return (trackingKnown = t);
  });
  return tracking;
}

/**
 * The path of util-linux's `prlimit` when it starts a program with a soft RLIMIT_LOCKS of the
 * marker's size (a probe runs `/bin/sh -c` under it and reads the limit back); undefined when it
 * is missing or cannot (a hard limit below the marker, a sandbox that refuses prlimit64).
 */
async function findLimitsMarker(): Promise<string | undefined> {
  let file: string;
  try {
    file = resolveCommand('prlimit', process.env.PATH ?? '/usr/bin:/bin', '/');
  } catch {
    return undefined;
  }
  const value = limitsToken();
  return new Promise<string | undefined>((resolve) => {
    try {
      const probe = 'exec cat /proc/self/limits';
      const child = spawn(file, [`--${LIMITS_MARK}=${value}:`, '--', '/bin/sh', '-c', probe], { stdio: ['ignore', 'pipe', 'ignore'], env: childEnv() });
      let out = '';
      child.stdout.setEncoding('latin1');
      child.stdout.on('data', (chunk: string) => (out += chunk));
      child.once('error', () => resolve(undefined));
      child.once('close', (code) => resolve(code === 0 && softLocks(out) === value ? file : undefined));
    } catch {
      resolve(undefined);
    }
  });
}

/** A fresh limits marker: a random number in [2^47, 2^48), in decimal. */
function limitsToken(): string {
  return String(2 ** 47 + (randomBytes(6).readUIntBE(0, 6) % 2 ** 47));
}

async function detectTracking(): Promise<ProcessTracking> {
  const env = (reason: string): ProcessTracking => ({ kind: 'environment', reason });
  if (process.env.DEBUGKIT_CGROUP === 'off') return env('cgroups turned off (DEBUGKIT_CGROUP=off)');
  const own = ownCgroupDir();
  if (!own) return env('no cgroup v2 hierarchy is mounted');
  const dir = path.join(own, `debugkit-${ownMark()}`);
  try {
    mkdirSync(dir);
  } catch (err) {
    return env(`cannot create a cgroup in ${own} (${(err as NodeJS.ErrnoException).code}): it is not delegated to this user`);
  }
  if (!existsSync(path.join(dir, 'cgroup.kill'))) {
    removeDir(dir);
    return env('cgroup.kill is missing (Linux before 5.14)');
  }
  // A child must be able to move itself in (write access to the common ancestor's cgroup.procs too).
  const probe = path.join(dir, 'probe');
  const ok = await new Promise<boolean>((resolve) => {
    try {
      mkdirSync(probe);
      const child = spawn('/bin/sh', ['-c', ENTER_CGROUP, probe, '/bin/sh', '-c', 'exit 0'], { stdio: 'ignore', env: childEnv() });
      child.once('error', () => resolve(false));
      child.once('exit', (code) => resolve(code === 0));
    } catch {
      resolve(false);
    }
  });
  removeDir(probe);
  if (!ok) {
    removeDir(dir);
    return env(`a child cannot move itself into a cgroup below ${own}`);
  }
  await endLeftovers(own);
  return { kind: 'cgroup', dir };
}

/**
 * A server that was SIGKILLed ran no code to end its trees: what they left is still in its
 * groups. Those of a server of this pid namespace that no longer runs (no process with its pid and
 * start time) are ended and removed here, when the next server starts tracking.
 */
async function endLeftovers(own: string): Promise<void> {
  for (const dir of leftByGone(own, /^debugkit-(\d+-\d+-\d+)$/)) {
    if (await endCgroup(dir, false)) removeCgroups(dir);
  }
}

/** Removes a cgroup and the groups below it (each must be empty of processes). */
function removeCgroups(dir: string): boolean {
  try {
    for (const sub of readdirSync(dir, { withFileTypes: true })) if (sub.isDirectory()) removeCgroups(path.join(dir, sub.name));
  } catch {
    /* gone */
  }
  return removeDir(dir);
}

/**
 * This process's mark: its pid namespace, pid and start time ("NS-PID-START"), which no other
 * process of this machine has had or will have. What a server leaves for its exit to remove (its
 * cgroups, its temporary directory) is named with it, so the next server can tell what a
 * SIGKILLed one left (markIsGone).
 */
export function ownMark(): string {
  return `${pidNamespace()}-${process.pid}-${processStartTime(process.pid)}`;
}

/** Whether `mark` (ownMark's form) names a process of this pid namespace that no longer runs; another namespace's marks are never judged gone. */
export function markIsGone(mark: string): boolean {
  const m = /^(\d+)-(\d+)-(\d+)$/.exec(mark);
  return m !== null && m[1] === pidNamespace() && processStartTime(Number(m[2])) !== m[3];
}

/**
 * What servers that no longer run left in `dir`: the paths of its entries named by `pattern`, whose
 * first group is a mark (ownMark) that markIsGone; none when `dir` cannot be read.
 */
export function leftByGone(dir: string, pattern: RegExp): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((name) => {
      const mark = pattern.exec(name)?.[1];
      return mark !== undefined && markIsGone(mark);
    })
    .map((name) => path.join(dir, name));
}

/** The inode of this process's pid namespace: pids name processes only within one. */
function pidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '0';
  } catch {
    return '0';
  }
}

/** debugkit's own cgroup v2 directory, from /proc/self/cgroup and the cgroup2 mount. */
export function ownCgroupDir(): string | undefined {
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'));
    if (!line) return undefined;
    const cgroup = line.slice(3);
    for (const mount of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
      const [left, right] = mount.split(' - ');
      if (!left || !right?.startsWith('cgroup2 ')) continue;
      const fields = left.split(' ');
      const root = unescapeMount(fields[3]!);
      const point = unescapeMount(fields[4]!);
      if (cgroup !== root && !cgroup.startsWith(root === '/' ? '/' : `${root}/`)) continue;
      const dir = path.join(point, cgroup.slice(root === '/' ? 0 : root.length));
      if (statSync(dir).isDirectory()) return dir;
    }
  } catch {
    /* no /proc, or no cgroup2 */
  }
  return undefined;
}

function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_: string, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

function removeDir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/**
 * What `spawn` would run for `command`: a name is looked up on the child's PATH (the default path
 * when it has none, as Node does), a path with a slash is taken relative to `cwd`. Failing the way
 * spawn fails (ENOENT, EACCES), so a missing engine is still ENGINE_MISSING.
 */
function resolveCommand(command: string, envPath: string | undefined, cwd: string | undefined): string {
  const executable = (file: string) => {
    try {
      accessSync(file, constants.X_OK);
      return statSync(file).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes('/')) {
    const file = path.resolve(cwd ?? process.cwd(), command);
    if (executable(file)) return file;
    throw spawnError(command, existsSync(file) ? 'EACCES' : 'ENOENT');
  }
  for (const dir of (envPath ?? '/usr/bin:/bin').split(':')) {
    const file = path.resolve(cwd ?? process.cwd(), dir || '.', command);
    if (executable(file)) return file;
  }
  throw spawnError(command, 'ENOENT');
}

function spawnError(command: string, code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`spawn ${command} ${code}`), { code, syscall: `spawn ${command}`, path: command });
}

// --- spawning -------------------------------------------------------------------------------

export async function spawnChild(command: string, args: readonly string[], options: SpawnOptions = {}): Promise<OwnedChild> {
  const mode = await processTracking();
  const token = randomBytes(16).toString('hex');
  const base = childEnv(options.env);
  delete base[OWNER_VAR];
  const env: NodeJS.ProcessEnv = { [OWNER_VAR]: token, ...base };
  const tree: Tree = { token };
  const failed = (err: NodeJS.ErrnoException) => {
    if (tree.cgroup) removeDir(tree.cgroup);
    const hint = err.code === 'ENOENT' ? ` (is ${command} installed and on PATH?)` : '';
    return new DebugkitError('ENGINE_MISSING', `cannot start ${command}: ${err.message}${hint}`, { cause: err });
  };
  let file = command;
  let argv: readonly string[] = args;
  if (limitsMarker || mode.kind === 'cgroup') {
    // The stub and prlimit find the program as spawn would (argv[0] stays as given); a missing one
    // is refused here, as spawn refuses it, rather than by their exit code.
    try {
      resolveCommand(command, env.PATH, options.cwd?.toString());
    } catch (err) {
      throw failed(err as NodeJS.ErrnoException);
    }
  }
  if (limitsMarker) {
    // prlimit sets its own limit, then execs the program.
    tree.limits = limitsToken();
    file = limitsMarker;
    argv = [`--${LIMITS_MARK}=${tree.limits}:`, '--', command, ...args];
  }
  if (mode.kind === 'cgroup') {
    try {
      tree.cgroup = path.join(mode.dir, String(++groups));
      mkdirSync(tree.cgroup, { recursive: true });
      argv = ['-c', ENTER_CGROUP, tree.cgroup, file, ...argv];
      file = '/bin/sh';
    } catch (err) {
      throw failed(err as NodeJS.ErrnoException);
    }
  }
  return new Promise<OwnedChild>((resolve, reject) => {
    const child = spawn(file, argv, { ...options, env, detached: true, shell: false });
    const exited = new Promise<ChildExit>((done) => {
      child.once('exit', (code, signal) => done({ code, signal }));
    });
    const ended = exited.then(async (exit) => {
      await endTree(tree);
      return exit;
    });
    child.once('error', (err: NodeJS.ErrnoException) => {
      live.delete(tree);
      reject(failed(err));
    });
    child.once('spawn', () => {
      tree.pgid = child.pid;
      if (child.pid !== undefined) tree.session = { sid: child.pid, start: processStartTime(child.pid) };
      live.add(tree);
      treeOf.set(child, tree);
      resolve({ child, exited, ended });
    });
  });
}

// --- ending ---------------------------------------------------------------------------------

/** Ends every process of the tree; resolves once none is left (bounded: a process stuck in the kernel is given up on after 5 s). */
function endTree(tree: Tree): Promise<void> {
  tree.ending ??= (async () => {
    if (tree.pgid !== undefined) killQuietly(-tree.pgid);
    const own = entry(OWNER_VAR, tree.token);
    const grouped = tree.cgroup ? await endCgroup(tree.cgroup) : true;
    // A process may leave its group (it may write itself into any group its user may, the
    // server's own among them) and its process group (setsid): it still carries the tree's marks,
    // and a sweep of every process ends it (attack q2-1: `keploy_mock_record` and a python
    // session's program left a `sleep` running past the call, the session and the server).
    const swept = await endMarked((env) => hasEntry(env, own), undefined, limitsOf([tree]), sessionsOf([tree]));
    if (grouped && swept) live.delete(tree);
  })();
  return tree.ending;
}

/** cgroup.kill, then waits (bounded) until the group is empty and removes it (unless `remove` is false). */
async function endCgroup(dir: string, remove = true): Promise<boolean> {
  try {
    writeFileSync(path.join(dir, 'cgroup.kill'), '1');
  } catch {
    return !remove || removeDir(dir);
  }
  if (!(await pollUntil(() => !populated(dir), { timeoutMs: 5000, intervalMs: 5 }))) return false;
  return !remove || removeDir(dir);
}

function populated(dir: string): boolean {
  try {
    return /^populated 1$/m.test(readFileSync(path.join(dir, 'cgroup.events'), 'utf8'));
  } catch {
    return false;
  }
}

/**
 * SIGKILLs every process whose environment `matches`, round after round, until a round finds none;
 * resolves true then, false when a round still found some after `timeoutMs`. One sweep serves
 * both drivers (endMarked, endMarkedSync): it yields 'check' before each process it reads (the
 * async driver pauses there when its slice of the event loop is spent) and 'wait' when it found
 * only processes it had already killed (on their way out: wait 5 ms, then look again).
 *
 * A round reads the environment of every process listed (the members of `cgroup` when given, else
 * every process on the machine), then of every pid allocated since the listing began (the pid
 * counter, lastPid): each pid is read after it was allocated, until the counter stands still
 * between two reads. So a round that finds nothing proves that no marked process is left: one
 * that lived through the round was listed, or was born during it and read then, alive either way.
 * Listing and reading alone is not enough: a chain whose every process forks the next and exits
 * (one process alive at any instant, always a new one) is gone from the pid the listing gave by
 * the time it is read, and its successor was born after the listing (attack f1-2).
 * A process is killed as soon as it is found: a killed one forks no more (a fork under way fails).
 * Where /proc gives no pid counter, a round reads only what it listed, and such a chain can escape.
 * A process whose environment may not be read (not dumpable) is matched when its soft RLIMIT_LOCKS
 * is one of `limits` (the trees' limit markers; none when `prlimit` did not mark them).
 */
function* sweepMarked(
  matches: (env: Buffer) => boolean,
  cgroup: string | undefined,
  timeoutMs: number,
  limits: ReadonlySet<string>,
  sessions: ReadonlySet<number> = new Set(),
): Generator<'check' | 'wait', boolean, void> {
  const deadline = Date.now() + timeoutMs;
  const killed = new Set<number>();
  for (;;) {
    const found: number[] = [];
    const check = (pid: number) => {
      if (pid === process.pid) return;
      if (!inSession(pid, sessions)) {
        const env = readEnviron(pid);
        // The limit marks a process whose environment is hidden, or was cleared or rewritten.
        if (env === undefined || ((env === HIDDEN || !matches(env)) && !limitsMarked(pid, limits))) return;
      }
      killQuietly(pid);
      found.push(pid);
    };
    let seen = lastPid();
    for (const pid of cgroup ? cgroupMembers(cgroup) : allPids()) {
      yield 'check';
      check(pid);
    }
    for (let now = lastPid(); seen !== undefined && now !== undefined && now !== seen; seen = now, now = lastPid()) {
      // Pids given out faster than they are read for the whole bound: nothing is proven.
      if (Date.now() > deadline) return false;
      for (const pid of pidsAfter(seen, now)) {
        yield 'check';
        check(pid);
      }
    }
    if (found.length === 0) return true;
    if (Date.now() > deadline) return false;
    const fresh = found.filter((pid) => !killed.has(pid));
    for (const pid of found) killed.add(pid);
    if (fresh.length === 0) yield 'wait';
  }
}

/** endMarked's bound: a process stuck in the kernel is given up on after it. */
const END_MARKED_MS = 5000;

async function endMarked(matches: (env: Buffer) => boolean, cgroup?: string, limits: ReadonlySet<string> = new Set(), sessions?: ReadonlySet<number>): Promise<boolean> {
  const slice = new TimeSlice(SCAN_SLICE_MS);
  const sweep = sweepMarked(matches, cgroup, END_MARKED_MS, limits, sessions);
  for (;;) {
    const step = sweep.next();
    if (step.done) return step.value;
    if (step.value === 'wait') await sleep(5, undefined, { keepAlive: true });
    else await slice.pause();
  }
}

/** The same at process exit, holding the thread (bounded more tightly: the process is on its way out). */
function endMarkedSync(matches: (env: Buffer) => boolean, limits: ReadonlySet<string>, sessions: ReadonlySet<number>): boolean {
  const sweep = sweepMarked(matches, undefined, 2000, limits, sessions);
  for (;;) {
    const step = sweep.next();
    if (step.done) return step.value;
    if (step.value === 'wait') sleepSync(5);
  }
}

/**
 * Ends the processes of `owned`'s tree whose environment holds `name=value` (a subtree a program
 * marked, such as the debuggee gdb's exec-wrapper starts), leaving the rest of the tree alone.
 * Resolves true once they are gone, false when some were still found after 5 s.
 */
export async function endMarkedProcesses(owned: OwnedChild, name: string, value: string): Promise<boolean> {
  const tree = treeOf.get(owned.child);
  if (!tree) return true;
  const own = entry(OWNER_VAR, tree.token);
  const mark = entry(name, value);
  return endMarked((env) => hasEntry(env, own) && hasEntry(env, mark), tree.cgroup);
}

/** The longest a sweep holds the event loop before it yields. */
const SCAN_SLICE_MS = 2;
const environBuffer = Buffer.alloc(64 * 1024);
/** For /proc/PID/stat and /proc/PID/limits (readProcFile). */
const procBuffer = Buffer.alloc(4096);

function allPids(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid) pids.push(pid);
  }
  return pids;
}

/**
 * The last pid allocated in this pid namespace (every process and thread born in it or below it
 * takes one), or undefined when /proc does not say.
 */
function lastPid(): number | undefined {
  for (const [file, field] of [
    ['/proc/sys/kernel/ns_last_pid', 0],
    ['/proc/loadavg', 4],
  ] as const) {
    try {
      const n = Number(readFileSync(file, 'latin1').trim().split(/\s+/)[field]);
      if (Number.isInteger(n) && n > 0) return n;
    } catch {
      /* try the next */
    }
  }
  return undefined;
}

/** Members of a cgroup and of the groups below it. */
function cgroupMembers(dir: string): number[] {
  const pids: number[] = [];
  try {
    for (const line of readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (line) pids.push(Number(line));
    for (const sub of readdirSync(dir, { withFileTypes: true })) if (sub.isDirectory()) pids.push(...cgroupMembers(path.join(dir, sub.name)));
  } catch {
    /* removed meanwhile */
  }
  return pids;
}

let pidMax: number | undefined;

/** The pids allocated after `from` up to `to`, in the order they were given: past pid_max they start again low. */
function* pidsAfter(from: number, to: number): Generator<number> {
  if (to < from) {
    pidMax ??= readPidMax();
    for (let pid = from + 1; pid < pidMax; pid++) yield pid;
    from = 0;
  }
  for (let pid = from + 1; pid <= to; pid++) yield pid;
}

function readPidMax(): number {
  try {
    return Number(readFileSync('/proc/sys/kernel/pid_max', 'latin1')) || 4_194_304;
  } catch {
    return 4_194_304;
  }
}

/** readEnviron's answer for a process whose environment exists but only root may read. */
const HIDDEN = 'hidden';

/**
 * /proc/PID/environ (NUL-separated NAME=VALUE entries); HIDDEN when it may not be opened (EACCES:
 * a process of another user, or one that is not dumpable); undefined when it cannot be read
 * otherwise (gone; ESRCH: a kernel thread or a process that has released its memory on its way
 * out, nothing that runs code).
 */
function readEnviron(pid: number): Buffer | typeof HIDDEN | undefined {
  let fd: number;
  try {
    fd = openSync(`/proc/${pid}/environ`, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'EACCES' || code === 'EPERM' ? HIDDEN : undefined;
  }
  try {
    const n = readSync(fd, environBuffer, 0, environBuffer.length, 0);
    if (n < environBuffer.length) return environBuffer.subarray(0, n);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
  try {
    return readFileSync(`/proc/${pid}/environ`);
  } catch {
    return undefined;
  }
}

/**
 * Whether `pid` is a process of a tree debugkit runs (a session's program, gdb, a recorded command, or
 * anything they started, setsid and double forks included): by its tree's cgroup, its environment's
 * token, or its limits marker, as the trees are ended. Attaching to one is refused: it runs for a
 * session, maybe another key's.
 */
export function runsForDebugkit(pid: number): boolean {
  const trees = [...live];
  if (inSession(pid, sessionsOf(trees))) return true;
  if (trees.some((tree) => tree.cgroup !== undefined && cgroupMembers(tree.cgroup).includes(pid))) return true;
  const env = readEnviron(pid);
  if (env !== undefined && env !== HIDDEN && trees.some((tree) => hasEntry(env, entry(OWNER_VAR, tree.token)))) return true;
  return limitsMarked(pid, limitsOf(trees));
}

/**
 * The sessions of `trees` that are still theirs: a session outlives its leader while a member
 * lives, and its id (the leader's pid) is given to no other process meanwhile; once none is left it
 * may be, and the new process with that pid may start a session of the same id. So a session counts
 * while no process has its id, or the one that has is the leader that started it (its start time).
 */
function sessionsOf(trees: readonly Tree[]): Set<number> {
  const out = new Set<number>();
  for (const { session } of trees) {
    if (!session) continue;
    const start = processStartTime(session.sid);
    if (start === undefined || start === session.start) out.add(session.sid);
  }
  return out;
}

/** Whether process `pid` is alive in one of `sessions` (/proc/PID/stat's session field; a zombie is in none: nothing to kill). */
function inSession(pid: number, sessions: ReadonlySet<number>): boolean {
  if (sessions.size === 0) return false;
  const fields = procStat(pid);
  return fields !== undefined && isLive(fields) && sessions.has(Number(fields[3]));
}

/** Whether /proc/PID/stat's fields (procStat) are those of a process that runs: a zombie or a dead one has nothing to kill. */
function isLive(fields: readonly string[]): boolean {
  return fields[0] !== 'Z' && fields[0] !== 'X';
}

/**
 * /proc/PID/`name` (stat: some 300 bytes; limits: some 1,400) as latin1 text, or undefined when it
 * cannot be read. One read into a buffer: readFileSync costs several times as much, and a sweep
 * reads this for every process on the machine (a server that is not root, for every process of
 * another user too: their environments are hidden from it).
 */
function readProcFile(pid: number, name: 'stat' | 'limits'): string | undefined {
  try {
    const fd = openSync(`/proc/${pid}/${name}`, 'r');
    try {
      return procBuffer.toString('latin1', 0, readSync(fd, procBuffer, 0, procBuffer.length, 0));
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** The limit markers of `trees` (those that have one). */
function limitsOf(trees: readonly Tree[]): Set<string> {
  return new Set(trees.flatMap((t) => (t.limits ? [t.limits] : [])));
}

/**
 * Whether process `pid`'s soft RLIMIT_LOCKS (/proc/PID/limits, readable for any process) is one of
 * `limits`. A dead process awaiting its reaper (a zombie: its environment is gone, its limits are
 * not) is not: there is nothing left to kill, and an init that reaps slowly would keep the sweep
 * finding it until its bound.
 */
function limitsMarked(pid: number, limits: ReadonlySet<string>): boolean {
  if (limits.size === 0) return false;
  const text = readProcFile(pid, 'limits');
  if (text === undefined) return false;
  const soft = softLocks(text);
  if (soft === undefined || !limits.has(soft)) return false;
  const fields = procStat(pid);
  return fields !== undefined && isLive(fields);
}

/** The soft limit on the "Max file locks" line of a /proc/PID/limits text. */
function softLocks(text: string): string | undefined {
  return /^Max file locks +(\S+)/m.exec(text)?.[1];
}

function entry(name: string, value: string): Buffer {
  return Buffer.from(`${name}=${value}`);
}

/** Whether the NUL-separated environment holds exactly the entry `wanted`. */
function hasEntry(env: Buffer, wanted: Buffer): boolean {
  for (let at = env.indexOf(wanted); at !== -1; at = env.indexOf(wanted, at + 1)) {
    const end = at + wanted.length;
    if ((at === 0 || env[at - 1] === 0) && (end === env.length || env[end] === 0)) return true;
  }
  return false;
}

function killQuietly(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* gone */
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid !== undefined) killProcessGroup(child.pid, signal);
}

/**
 * Signals the process group `pid` leads, or the process alone when it leads none. For
 * processes debugkit did not start itself (a debuggee that debugpy put in a group of its own).
 */
export function killProcessGroup(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, signal);
      return;
    } catch {
      /* not a group leader, or gone: try the process itself */
    }
  }
}

function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Ends a child and its whole tree: close stdin (polite tools quit on EOF), then SIGTERM, then
 * SIGKILL to its process group, each after a grace period; then everything else it started
 * (SIGKILL). Resolves once all of it is gone.
 */
export async function terminate(owned: OwnedChild, { graceMs = 1000 }: { graceMs?: number } = {}): Promise<ChildExit> {
  const { child, exited } = owned;
  const waitExit = async (ms: number) => (await boundPromise(exited, { timeoutMs: ms })).kind === 'value';
  if (!hasExited(child)) {
    child.stdin?.end();
    if (!(await waitExit(Math.min(graceMs, 200)))) {
      signalGroup(child, 'SIGTERM');
      if (!(await waitExit(graceMs))) {
        signalGroup(child, 'SIGKILL');
        await waitExit(5000);
      }
    }
  }
  // The leader may be gone while members of its group live on (a debuggee gdb left behind).
  signalGroup(child, 'SIGKILL');
  return owned.ended;
}

/**
 * Synchronous last resort for process exit: every tree still alive is SIGKILLed (its cgroup, its
 * process group, every process carrying its token), and the cgroups are removed once empty.
 */
export function killAllChildrenSync(): void {
  const trees = [...live];
  live.clear();
  for (const tree of trees) {
    if (tree.pgid !== undefined) killQuietly(-tree.pgid);
    if (tree.cgroup) {
      try {
        writeFileSync(path.join(tree.cgroup, 'cgroup.kill'), '1');
      } catch {
        /* already removed */
      }
    }
  }
  // What left its group still carries its tree's marks (endTree).
  const tokens = trees.map((t) => entry(OWNER_VAR, t.token));
  if (tokens.length > 0) endMarkedSync((env) => tokens.some((t) => hasEntry(env, t)), limitsOf(trees), sessionsOf(trees));
  const cgroups = trees.flatMap((t) => (t.cgroup ? [t.cgroup] : []));
  const deadline = Date.now() + 2000;
  while (cgroups.some(populated) && Date.now() < deadline) sleepSync(5);
  for (const dir of cgroups) removeDir(dir);
  // The server's own group goes too once it holds no groups (rmdir refuses one that does).
  if (trackingKnown?.kind === 'cgroup') removeDir(trackingKnown.dir);
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export function liveChildCount(): number {
  return live.size;
}

/**
 * The fields of /proc/PID/stat after the command name (state is [0], ppid [1], ..., starttime
 * [19]), or undefined when the process is gone. The name is skipped by its last ")": it may hold
 * spaces and parentheses.
 */
export function procStat(pid: number): string[] | undefined {
  const stat = readProcFile(pid, 'stat');
  return stat === undefined ? undefined : stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * When process `pid` started (clock ticks since boot), or undefined when there is none: with the
 * pid, it names one process, never another that later reuses the pid.
 */
export function processStartTime(pid: number): string | undefined {
  return procStat(pid)?.[19];
}

/**
 * Reads a child's `stream` until what it has said matches `pattern` (a debugger saying where it
 * listens). `then` gets the match and what followed it within the same event, so the caller takes
 * the stream over without missing a byte. `what` names the listener in errors. Fails if the child
 * ends first, or after `timeoutMs`.
 */
export async function awaitAnnouncement(
  owned: OwnedChild,
  stream: Readable,
  pattern: RegExp,
  what: string,
  timeoutMs: number,
  then: (match: RegExpExecArray, after: string) => void,
): Promise<RegExpExecArray> {
  let seen = '';
  const found = await waitBounded<RegExpExecArray | Error>(
    (settle) => {
      const onData = (chunk: Buffer) => {
        seen += chunk.toString();
        const match = pattern.exec(seen);
        if (match) {
          stream.off('data', onData);
          then(match, seen.slice(match.index + match[0].length));
          settle(match);
        } else if (seen.length > 64 * 1024) seen = seen.slice(-1024);
      };
      stream.on('data', onData);
      void owned.exited.then((exit) => settle(new DebugkitError('ENGINE_FAILED', `${what} ended before it listened (${exit.signal ?? `exit code ${exit.code}`}): ${seen.trim().slice(-500)}`)));
      return () => stream.off('data', onData);
    },
    { timeoutMs },
  );
  if (found.kind !== 'value') throw new DebugkitError('ENGINE_FAILED', `${what} did not say where it listens within ${timeoutMs / 1000} s`);
  if (found.value instanceof Error) throw found.value;
  return found.value;
}
