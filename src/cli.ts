#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { defaultConfig, generateApiKey, parseToolPrefix, type Config } from './config.js';
import { debugkitDataDir } from './core/dirs.js';
import { containment } from './core/paths.js';
import { killAllChildrenSync } from './core/process.js';
import { boundPromise } from './core/wait.js';
import { isLoopbackHost } from './server/auth.js';
import { createDebugkit, type Debugkit, type ServerHooks } from './server/createServer.js';
import { createLogger, guardStdStreams } from './mcp/log.js';
import { serveStdio } from './server/stdio.js';
import { debuggerToolsetWith } from './toolsets/debugger/index.js';
import { toolsetFactories } from './toolsets/index.js';
import { VERSION } from './version.js';
import { registerControlCommands } from './control/commands.js';
import type { ControlPlane } from './control/index.js';
import { deferredControl } from './control/deferred.js';
import type { DebuggerControl } from './toolsets/debugger/control.js';

const intArg = (name: string, min: number, max: number) => (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}`);
  return n;
};

const toolPrefixArg = (value: string) => {
  try {
    return parseToolPrefix(
      value,
      toolsetFactories.map((f) => f.name),
    );
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
  }
};

function commonOptions(cmd: Command): Command {
  const names = toolsetFactories.map((f) => f.name).join(',');
  return cmd
    .option('--toolsets <list>', `comma-separated toolsets to serve (${names}); default: all`)
    .option('--root <dir>', 'workspace root: client paths are resolved and contained here', process.cwd())
    .option('--max-sessions <n>', 'most sessions one client (MCP session or REST key) may have open at once, per toolset', intArg('--max-sessions', 1, 1000), 16)
    .option('--max-sessions-total <n>', 'most sessions open at once over all clients, per toolset', intArg('--max-sessions-total', 1, 10000), 64)
    .option('--max-sessions-per-key <n>', 'most sessions all clients of one API key may have open at once, per toolset', intArg('--max-sessions-per-key', 1, 10000), 32)
    .option('--allow-gdb-shell', 'let gdb commands leave the debugger: shell, !, pipe, python, source, cd, target, define, files outside --root (default: on for stdio, off for serve)')
    .option('--no-allow-gdb-shell', 'refuse gdb commands that leave the debugger, also over stdio')
    .option('--allow-attach', 'let gdb, the debugger toolset and Node.js sessions attach to processes of this user a session did not start (default: on for stdio, off for serve)')
    .option('--no-allow-attach', 'refuse gdb attach to processes a session did not start, also over stdio')
    .option('--gdb <path>', 'gdb binary', 'gdb')
    .addOption(
      new Option('--gdb-text <form>', 'the text of gdb call answers: "compact" (console output and a stop line) or "json" (the GDB-MCP envelope, as the structured content)')
        .choices(['compact', 'json'])
        .default('compact'),
    )
    .option('--bundle-dir <dir>', 'where support bundles are extracted and kept (default: ~/.cache/debugkit/bundles)')
    .option('--kubectl <path>', 'kubectl binary for the bundles toolset', 'kubectl')
    .option('--grep-timeout <seconds>', 'stop a grep_files search whose pattern runs this long on one line without finishing it', intArg('--grep-timeout', 1, 3600), 10)
    .option(
      '--bundle-budget-per-key <percent>',
      "the share of the server's budget for parsed bundles (768 MB or 3,000,000 objects) the bundles one API key opens may hold together, in percent (the local user without keys has all of it)",
      intArg('--bundle-budget-per-key', 1, 100),
      50,
    )
    .option(
      '--bundle-url-host <host>',
      'a host bundle URLs may be downloaded from, with its subdomains (repeatable; default: replicated.com); a loopback or private address only from a host listed exactly, e.g. 127.0.0.1:8080',
      (v: string, all: string[] = []) => [...all, v],
    )
    .addOption(new Option('--log-level <level>', 'stderr log verbosity').choices(['error', 'warn', 'info', 'debug']).default('info'))
    .option('--max-result-tokens <n>', 'ceiling for one tool result, in tokens (larger answers are cut and flagged)', intArg('--max-result-tokens', 1000, 1_000_000), 25_000)
    .option('--no-redact', 'show what looks like a credential in answers (values, program output, files); by default it is hidden, saying so')
    .option(
      '--tool-prefix <prefixes>',
      "prefix tool names, for clients that refuse two servers' tools of one name: PREFIX for every toolset, or TOOLSET=PREFIX,... (e.g. bundles=k8s_); default: the contracts' names",
      toolPrefixArg,
    )
    .option('--output-schemas', "list each tool's output schema in tools/list (default: not listed, to keep tools/list small; results are the same)")
    .option('--store <url>', 'control store: postgres://... shared by several nodes, or sqlite:PATH (default: control.db in the data directory)', process.env.DEBUGKIT_STORE)
    .option('--data-dir <dir>', "debugkit's data directory: API keys, counters, audit log (control.db), the debugger toolset's crash signatures (default: ~/.local/share/debugkit)")
    .option(
      '--audit-key-file <file>',
      'the key audit entries are hashed with, kept outside the store (default: $DEBUGKIT_AUDIT_KEY_FILE, else audit.key beside control.db, or in the data directory for PostgreSQL; made on first use); nodes sharing a store need the same one',
      process.env.DEBUGKIT_AUDIT_KEY_FILE,
    );
}

interface CommonOpts {
  toolsets?: string;
  root: string;
  maxSessions: number;
  maxSessionsTotal: number;
  maxSessionsPerKey: number;
  allowGdbShell?: boolean;
  allowAttach?: boolean;
  gdb: string;
  gdbText: 'compact' | 'json';
  bundleDir?: string;
  kubectl: string;
  bundleUrlHost?: string[];
  bundleBudgetPerKey: number;
  grepTimeout: number;
  logLevel: Config['logLevel'];
  maxResultTokens: number;
  redact: boolean;
  toolPrefix?: Record<string, string>;
  outputSchemas?: boolean;
  store?: string;
  dataDir?: string;
  auditKeyFile?: string;
}

/** Local stdio serves the user's own agent: permissive unless told otherwise. HTTP is closed unless told. */
function baseConfig(opts: CommonOpts, permissive = true): Config {
  const config = defaultConfig({
    toolsets: opts.toolsets
      ? opts.toolsets
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : [],
    root: opts.root,
    maxSessions: opts.maxSessions,
    logLevel: opts.logLevel,
  });
  config.maxResultTokens = opts.maxResultTokens;
  if (opts.redact === false) config.redact = false;
  if (opts.toolPrefix) config.toolPrefix = opts.toolPrefix;
  if (opts.outputSchemas) config.outputSchemas = true;
  config.maxSessionsTotal = opts.maxSessionsTotal;
  config.maxSessionsPerKey = opts.maxSessionsPerKey;
  config.gdb = { path: opts.gdb, allowShell: opts.allowGdbShell ?? permissive, allowAttach: opts.allowAttach ?? permissive, text: opts.gdbText };
  config.bundles = { dir: opts.bundleDir ?? config.bundles.dir, kubectl: opts.kubectl, grepTimeoutMs: opts.grepTimeout * 1000, budgetPerKeyPercent: opts.bundleBudgetPerKey };
  if (opts.bundleUrlHost) config.bundles.urlHosts = opts.bundleUrlHost;
  // One --allow-attach for gdb, the debugger toolset and the python toolset's Node.js attach; the last two then attach only to this user's processes.
  config.debugger = { allowAttach: (opts.allowAttach ?? permissive) ? 'same-user' : 'none', dataDir: opts.dataDir ?? config.debugger.dataDir };
  config.control = { ...config.control, ...(opts.store ? { store: opts.store } : {}), ...(opts.dataDir ? { dataDir: opts.dataDir } : {}) };
  return config;
}

/** One shutdown path for signals, stdin EOF and fatal errors; never leaves a child behind. */
function installShutdown(dk: Debugkit, extra?: () => Promise<void>): (reason: string, code?: number) => void {
  let started = false;
  const shutdown = (reason: string, code = 0) => {
    if (started) {
      // A second signal while cleaning up: end the children now rather than die with them alive.
      killAllChildrenSync();
      process.exit(code);
    }
    started = true;
    dk.log.info(`shutting down: ${reason}`);
    const done = Promise.all([extra?.(), dk.close()]);
    void boundPromise(done, { timeoutMs: 5000 })
      .catch(() => undefined)
      .finally(() => {
        killAllChildrenSync();
        process.exit(code);
      });
  };
  // Handlers stay installed: with `once`, a second SIGTERM (a process group signalled twice) would
  // take the default action and kill the server before it ended its children.
  process.on('SIGINT', () => shutdown('SIGINT', 130));
  process.on('SIGTERM', () => shutdown('SIGTERM', 143));
  process.on('SIGHUP', () => shutdown('SIGHUP', 129));
  process.on('exit', killAllChildrenSync);
  // A bug in one call must not take every other session down with it.
  // (Logging never throws and a closed stderr is swallowed, so this cannot loop on EPIPE.)
  process.on('uncaughtException', (err) => dk.log.error(`uncaught exception (server keeps running): ${err.stack ?? err}`));
  process.on('unhandledRejection', (err) => dk.log.error(`unhandled rejection (server keeps running): ${String(err)}`));
  return shutdown;
}

/**
 * The composition root: the one list of toolsets is handed to the server here. With a control
 * plane, the debugger toolset answers quota, license, audit and crash signatures from it.
 */
function compose(config: Config, log = createLogger(config.logLevel), hooks?: ServerHooks, control?: DebuggerControl): Debugkit {
  guardStdStreams();
  const toolsets = control ? toolsetFactories.map((f) => (f.name === 'debugger' ? debuggerToolsetWith(control) : f)) : toolsetFactories;
  return createDebugkit(config, { toolsets, log, ...(hooks ? { hooks } : {}) });
}

/** The control plane on the server's seams, and the debugger's view of it: loaded once a plane is open, not at start. */
async function planeSeams(plane: ControlPlane): Promise<{ hooks: ServerHooks; control: DebuggerControl }> {
  const [{ controlHooks }, { planeControl }] = await Promise.all([import('./control/hooks.js'), import('./control/debugger.js')]);
  return { hooks: controlHooks(plane), control: planeControl(plane) };
}

async function runStdio(opts: CommonOpts): Promise<void> {
  const config = baseConfig(opts);
  // Control plane: stdio calls act as the local user (every scope) and are audited too. With the
  // default data directory unusable, stdio still serves the local user (no audit, a warning);
  // with --store or --data-dir given, the operator asked for the audit: no start without it.
  const log = createLogger(config.logLevel);
  const open = async () => {
    // The control plane's modules (store, audit chain, keys) load with the plane, not at start.
    const { defaultNodeId, openControlPlane } = await import('./control/index.js');
    return openControlPlane(config.control.store, config.control.dataDir, { node: { id: defaultNodeId() }, ...(opts.auditKeyFile ? { auditKeyFile: opts.auditKeyFile } : {}) });
  };
  if (opts.store || opts.dataDir || opts.auditKeyFile) {
    const plane = await open();
    const { hooks, control } = await planeSeams(plane);
    const dk = compose(config, log, hooks, control);
    const shutdown = installShutdown(dk);
    await serveStdio(dk, (reason) => shutdown(reason));
    return;
  }
  // The default store opens after start (issue 19: not on the way to the first tools/list): when
  // the first call needs it, or once the server has answered its opening; calls wait for it.
  const deferred = deferredControl(
    () =>
      open().catch((err: unknown) => {
        log.warn(`the control database cannot be opened, so stdio calls are not audited: ${err instanceof Error ? err.message : String(err)} (give --data-dir DIR, or --store)`);
        return undefined;
      }),
    config.debugger.dataDir,
  );
  const dk = compose(config, log, deferred.hooks, deferred.debugger);
  const shutdown = installShutdown(dk);
  await serveStdio(dk, (reason) => shutdown(reason));
  setTimeout(() => void deferred.ready(), OPEN_STORE_AFTER_MS);
}

/** How long after start a stdio server opens its default control store if no call asked for it first. */
const OPEN_STORE_AFTER_MS = 100;

interface ServeOpts extends CommonOpts {
  host: string;
  port: number;
  apiKey?: string;
  auth: boolean;
  allowedHost: string[];
  maxBody: number;
  sessionIdle: number;
  sessionInitIdle: number;
  maxMcpSessions: number;
  maxMcpSessionsPerKey: number;
  headerTimeout: number;
  maxConnections?: number;
  maxRequestsPerKey?: number;
  bodyTimeout: number;
  bodyDeadline: number;
  maxPendingBodiesPerKey: number;
  maxPendingBodies: number;
  tlsCert?: string;
  tlsKey?: string;
  nodeId?: string;
  nodeUrl?: string;
}

async function runHttp(opts: ServeOpts): Promise<void> {
  const config = baseConfig(opts, false);
  const key = opts.apiKey || process.env.DEBUGKIT_API_KEY || undefined;
  config.http = {
    ...config.http,
    host: opts.host,
    port: opts.port,
    apiKey: key ?? generateApiKey(),
    apiKeyGenerated: key === undefined,
    noAuth: !opts.auth,
    allowedHosts: opts.allowedHost,
    maxBodyBytes: opts.maxBody,
    sessionIdleMs: opts.sessionIdle * 1000,
    sessionInitIdleMs: opts.sessionInitIdle * 1000,
    maxMcpSessions: opts.maxMcpSessions,
    maxMcpSessionsPerKey: opts.maxMcpSessionsPerKey,
    headersTimeoutMs: opts.headerTimeout * 1000,
    ...(opts.maxConnections !== undefined ? { maxConnections: opts.maxConnections } : {}),
    ...(opts.maxRequestsPerKey !== undefined ? { maxRequestsPerKey: opts.maxRequestsPerKey } : {}),
    bodyTimeoutMs: opts.bodyTimeout * 1000,
    bodyDeadlineMs: opts.bodyDeadline * 1000,
    maxPendingBodiesPerKey: opts.maxPendingBodiesPerKey,
    maxPendingBodies: opts.maxPendingBodies,
  };
  if (config.http.noAuth && !isLoopbackHost(config.http.host)) {
    throw new Error(`--no-auth is allowed only on a loopback address, not ${config.http.host}: give an --api-key instead`);
  }
  if (Boolean(opts.tlsCert) !== Boolean(opts.tlsKey)) throw new Error('--tls-cert and --tls-key go together: give both PEM files, or neither for plain HTTP');
  if (opts.tlsCert && opts.tlsKey) config.http.tls = { cert: opts.tlsCert, key: opts.tlsKey };
  config.control = { ...config.control, ...(opts.nodeId ? { nodeId: opts.nodeId } : {}), ...(opts.nodeUrl ? { nodeUrl: opts.nodeUrl } : {}) };
  // Control plane: with keys in the store and no --api-key, no extra full-scope key is made up.
  // The keys and the audit must not lie where every key's tools may read them.
  const { ControlPlane, defaultNodeId, openStore } = await import('./control/index.js');
  checkDataOutsideRoot(config, debugkitDataDir());
  const store = await openStore(config.control.store, config.control.dataDir, { purpose: 'append', ...(opts.auditKeyFile ? { auditKeyFile: opts.auditKeyFile } : {}) });
  const storedKeys = (await store.listKeys()).filter((k) => !k.revoked_at && !(k.expires_at && Date.parse(k.expires_at) <= Date.now())).length;
  if (key === undefined && storedKeys > 0) config.http.apiKey = '';
  const control = new ControlPlane({
    store,
    node: { id: config.control.nodeId ?? defaultNodeId(), ...(config.control.nodeUrl ? { url: config.control.nodeUrl } : {}) },
    noAuth: config.http.noAuth,
    ...(config.http.apiKey ? { apiKey: config.http.apiKey } : {}),
    warn: (m) => process.stderr.write(`debugkit warn: ${m}\n`),
  });
  const seams = await planeSeams(control);
  const dk = compose(config, createLogger(config.logLevel), seams.hooks, seams.control);
  // The HTTP server's modules load only for `serve`.
  const { serveHttp } = await import('./server/http.js');
  const handle = await serveHttp(dk);
  installShutdown(dk, () => handle.close());
  const out = [`debugkit ${VERSION} serving MCP (Streamable HTTP) at ${handle.url}`];
  if (config.http.noAuth) {
    out.push('WARNING: --no-auth: ANY local process can use this server without a key. Use only for local testing.');
  } else if (config.http.apiKey) {
    out.push(`API key: ${config.http.apiKey}${config.http.apiKeyGenerated ? ' (generated; set --api-key or DEBUGKIT_API_KEY to fix it)' : ''}`);
    out.push(`Clients send: Authorization: Bearer <key>`);
  } else {
    out.push(`API keys: ${storedKeys} active in ${store.location} (debugkit keys list); clients send Authorization: Bearer <key>`);
  }
  if (!isLoopbackHost(config.http.host)) out.push(`NOTE: bound to ${config.http.host}, reachable from other machines; keep the key secret.`);
  if (store.kind === 'postgres' && !config.control.nodeUrl && ['0.0.0.0', '::'].includes(config.http.host)) {
    out.push(`NOTE: other nodes forward calls for this node's sessions to ${handle.url}; give --node-url with an address they can reach.`);
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

/**
 * Refuses to serve when debugkit's own data (API keys, the audit, the audit key) lies inside the
 * workspace root, where every key's tools read and write files: `debugkit serve` run in $HOME with
 * the defaults would put ~/.local/share/debugkit there.
 */
function checkDataOutsideRoot(config: Config, defaultDataDir: string): void {
  const realRoot = realpathSync(config.root);
  const places = [config.control.dataDir ?? defaultDataDir];
  if (config.control.store?.startsWith('sqlite:')) places.push(config.control.store.slice('sqlite:'.length));
  for (const place of places) {
    const abs = path.resolve(place);
    if (containment(realRoot, abs).kind === 'outside') continue;
    throw new Error(
      `${abs} (debugkit's API keys and audit) is inside --root ${realRoot}, where every key's tools can read and write files: ` + 'give --data-dir (or --store) outside the root, or a narrower --root',
    );
  }
}

export function buildProgram(): Command {
  const program = commonOptions(
    new Command('debugkit')
      .description('An MCP server with real debuggers for AI agents. With no command: serve MCP over stdio.')
      .version(VERSION)
      // commander's own mistakes (an unknown flag, a bad value) read like ours: "debugkit: ...", one line.
      .configureOutput({
        outputError: (text, write) =>
          write(
            `${text
              .trim()
              .replace(/^error: /, 'debugkit: ')
              .replace(/\s*\n\s*/g, ' ')}\n`,
          ),
      })
      // Options after a subcommand belong to it: "serve --root X" must not set the parent's --root.
      .enablePositionalOptions(),
  ).action((opts: CommonOpts) => runStdio(opts));

  commonOptions(
    program
      .command('serve')
      .description('Serve MCP over Streamable HTTP (default http://127.0.0.1:7412/mcp), with an API key')
      .option('--host <host>', 'address to bind (loopback by default)', '127.0.0.1')
      .option('--port <port>', 'port to listen on (0 = any free port)', intArg('--port', 0, 65535), 7412)
      .option('--api-key <key>', 'bearer key clients must send (default: $DEBUGKIT_API_KEY, else a random key printed at start)')
      .option('--no-auth', 'accept requests without a key (loopback only; for local testing)')
      .option('--allowed-host <name>', 'extra Host header value to accept (repeatable)', (v: string, acc: string[]) => [...acc, v], [])
      .option('--max-body <bytes>', 'largest request body accepted', intArg('--max-body', 1024, 1 << 30), 4 * 1024 * 1024)
      .option('--session-idle <seconds>', 'close an MCP session after this long without requests', intArg('--session-idle', 1, 604_800), 1800)
      .option(
        '--session-init-idle <seconds>',
        'close an MCP session that sends nothing after initialize (not even notifications/initialized) after this long',
        intArg('--session-init-idle', 1, 604_800),
        120,
      )
      .option('--max-mcp-sessions <n>', 'most MCP sessions (initialize, Mcp-Session-Id) open at once on this server', intArg('--max-mcp-sessions', 1, 100_000), 256)
      .option('--max-mcp-sessions-per-key <n>', 'most MCP sessions one API key may have open at once on this server', intArg('--max-mcp-sessions-per-key', 1, 100_000), 32)
      .option('--header-timeout <seconds>', 'drop a request whose headers are not complete after this long', intArg('--header-timeout', 1, 3600), 15)
      .option(
        '--max-connections <n>',
        'most connections open at once (default: half the open-files limit, 64 to 16384); past it the one idle longest (no request in progress) is closed',
        intArg('--max-connections', 2, 1_000_000),
      )
      .option(
        '--max-requests-per-key <n>',
        'most requests one API key may have in progress at once, an open SSE stream included (default: a quarter of --max-connections, 4 to 256; more: HTTP 429)',
        intArg('--max-requests-per-key', 1, 1_000_000),
      )
      .option('--body-timeout <seconds>', 'drop a request whose body stalls this long (SSE streams and long calls are not affected)', intArg('--body-timeout', 1, 3600), 30)
      .option('--body-deadline <seconds>', 'drop a request whose body is not complete this long after its headers, however steadily it arrives', intArg('--body-deadline', 1, 3600), 60)
      .option('--max-pending-bodies-per-key <n>', 'most request bodies one API key may have still arriving at once (more: HTTP 429)', intArg('--max-pending-bodies-per-key', 1, 100_000), 16)
      .option('--max-pending-bodies <n>', 'most request bodies still arriving at once on this server (more: HTTP 503)', intArg('--max-pending-bodies', 1, 1_000_000), 256)
      .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM; with --tls-key)')
      .option('--tls-key <file>', 'the private key of --tls-cert (PEM)')
      .option('--node-id <id>', "this node's name in a shared store (default: hostname and a random suffix)")
      .option('--node-url <url>', 'the URL other nodes reach this one at, to forward calls for its sessions (default: the URL it serves)'),
  ).action((opts: ServeOpts) => runHttp(opts));
  registerControlCommands(program);

  program
    .command('doctor')
    .description(
      'Report which engines (gdb, python3 + debugpy, kubectl, proxychains4, ...) are present, and how to install the rest; print a client configuration for this machine. Exits 1 only when something debugkit needs is missing (not for test-only tools)',
    )
    .option('--root <dir>', 'the workspace root the printed client configuration names', process.cwd())
    .action(async (opts: { root: string }) => {
      // The engine checks load for `doctor` only.
      const { checkEngines, doctorExitCode, renderClientConfig, renderDoctor } = await import('./doctor.js');
      const checks = await checkEngines();
      process.stdout.write(`${renderDoctor(checks)}\n\n${renderClientConfig(path.resolve(opts.root))}\n`);
      process.exitCode = doctorExitCode(checks);
    });
  return program;
}

/** A command-line mistake or a failure to start, as one line a person reads (not a JSON log line). */
function humanError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return `debugkit: ${message.replace(/\s+/g, ' ').trim()}`;
}

buildProgram()
  .parseAsync(process.argv)
  .catch((err: unknown) => {
    process.stderr.write(`${humanError(err)}\n`);
    process.exit(2);
  });
