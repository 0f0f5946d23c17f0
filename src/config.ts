import { randomBytes } from 'node:crypto';
import { debugkitCacheDir, debugkitDataDir } from './core/dirs.js';

export interface Config {
  /** Toolsets to serve, by name. */
  toolsets: string[];
  /** Workspace root: client paths are resolved and contained here. */
  root: string;
  maxSessions: number;
  /** Most sessions open at once over all clients, per toolset (--max-sessions-total). */
  maxSessionsTotal: number;
  /**
   * Most sessions open at once over all clients of one key (API key id; 'local' on stdio and under
   * the one --api-key), per toolset (--max-sessions-per-key): one key cannot fill the server's cap.
   */
  maxSessionsPerKey: number;
  http: {
    host: string;
    port: number;
    apiKey: string;
    /** True when the key was generated at start rather than given. */
    apiKeyGenerated: boolean;
    noAuth: boolean;
    /** Extra Host header values accepted besides loopback names. */
    allowedHosts: string[];
    maxBodyBytes: number;
    /** An MCP HTTP session with no request for this long is closed with its debug sessions. */
    sessionIdleMs: number;
    /** An MCP HTTP session that sent nothing after `initialize` is closed after this long (--session-init-idle). */
    sessionInitIdleMs: number;
    /** Most MCP HTTP sessions (2025-era, `initialize`) open at once on this server (--max-mcp-sessions). */
    maxMcpSessions: number;
    /** Most MCP HTTP sessions one key may have open at once on this server (--max-mcp-sessions-per-key). */
    maxMcpSessionsPerKey: number;
    /** A request whose headers are not complete after this long is dropped (slowloris). */
    headersTimeoutMs?: number;
    /** Most connections open at once (--max-connections; default: half the descriptor limit, 64 to 16,384); past it the longest idle one is closed. */
    maxConnections?: number;
    /** Most requests one key may have in progress at once (--max-requests-per-key; default a quarter of --max-connections, 4 to 256); more are refused, 429. */
    maxRequestsPerKey?: number;
    /** A request body that stalls this long between chunks is dropped (SSE and long calls are not). */
    bodyTimeoutMs?: number;
    /** A request body not complete this long after its headers is dropped, however steadily it arrives (--body-deadline). */
    bodyDeadlineMs?: number;
    /** Most request bodies one key may have still arriving at once (--max-pending-bodies-per-key); more are refused, 429. */
    maxPendingBodiesPerKey?: number;
    /** Most request bodies still arriving at once on the server (--max-pending-bodies); more are refused, 503. */
    maxPendingBodies?: number;
    /** Serve HTTPS with this certificate and key (PEM files). */
    tls?: { cert: string; key: string };
  };
  gdb: {
    path: string;
    /** --allow-gdb-shell: commands that leave the debugger (shell, python, source, files outside root, ...). */
    allowShell: boolean;
    /** --allow-attach: attach to processes a session did not start. */
    allowAttach: boolean;
    /** --gdb-text: `call`'s text content, compact (console output and a stop line) or the contract's JSON envelope. */
    text: 'compact' | 'json';
  };
  /** Control plane: where keys, counters, the audit chain and session locations live. */
  control: {
    /** postgres://... or sqlite:PATH; default: control.db in dataDir. */
    store?: string;
    /**
     * debugkit's data directory (`--data-dir`, default ~/.local/share/debugkit): control.db lives
     * here. The one --data-dir flag also feeds the debugger toolset's data directory.
     */
    dataDir?: string;
    /** This node's id and the URL other nodes reach it at (several nodes sharing a PostgreSQL store). */
    nodeId?: string;
    nodeUrl?: string;
  };
  bundles: {
    /** Where support bundles are extracted and kept. */
    dir: string;
    kubectl: string;
    /** Hosts bundle URLs may be downloaded from (and their subdomains); a private address only from a host listed exactly. Default: replicated.com. */
    urlHosts?: string[];
    /** grep_files: a pattern running this long on one line (without progress) is stopped (--grep-timeout; default 10 s). */
    grepTimeoutMs?: number;
    /** Percent of the server's bundle model budget one API key's bundles may hold together (--bundle-budget-per-key; default 50). */
    budgetPerKeyPercent?: number;
  };
  debugger: {
    /** Which processes debugger_attach and python_start_session's `attach` may attach to: the server's own user's, any, or none (core/attach). */
    allowAttach: 'same-user' | 'any' | 'none';
    /** Where the debugger toolset keeps crash signatures (XDG data dir by default). */
    dataDir: string;
  };
  /** Verbosity of the stderr log. */
  logLevel: 'error' | 'warn' | 'info' | 'debug';
  /** The ceiling for one tool result, in tokens (default 25,000). */
  maxResultTokens?: number;
  /** --no-redact: answers keep what looks like a credential (default: hidden, saying so). */
  redact?: boolean;
  /**
   * `--tool-prefix`: what each toolset's tool names start with, by toolset name (`*`: every toolset
   * not named). Unset: the contracts' names, as they are.
   */
  toolPrefix?: Record<string, string>;
  /** `--output-schemas`: list each tool's output schema in tools/list (default: not listed). */
  outputSchemas?: boolean;
}

/**
 * Reads `--tool-prefix`: `PREFIX` for every toolset, `TOOLSET=PREFIX,...` for some, or both
 * (`dk_,bundles=k8s_`). A prefix keeps tool names within MCP's name rule (letters, digits, `_`, `-`, `.`).
 */
export function parseToolPrefix(spec: string, toolsets: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = part.indexOf('=');
    const [toolset, prefix] = eq < 0 ? ['*', part] : [part.slice(0, eq).trim(), part.slice(eq + 1).trim()];
    if (toolset !== '*' && !toolsets.includes(toolset)) throw new Error(`--tool-prefix: unknown toolset "${toolset}" (toolsets: ${toolsets.join(', ')})`);
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(prefix)) throw new Error(`--tool-prefix: "${prefix}" is not a prefix: 1 to 64 letters, digits, "_", "-" or "."`);
    if (toolset in out) throw new Error(`--tool-prefix: ${toolset === '*' ? 'the prefix for every toolset' : `toolset "${toolset}"`} is given twice`);
    out[toolset] = prefix;
  }
  if (Object.keys(out).length === 0) throw new Error('--tool-prefix: give a prefix, e.g. dk_ or gdb=gdb_,bundles=k8s_');
  return out;
}

export function generateApiKey(): string {
  return `dk_${randomBytes(24).toString('base64url')}`;
}

export function defaultConfig(overrides: Partial<Config> = {}): Config {
  return {
    toolsets: [],
    root: process.cwd(),
    maxSessions: 16,
    maxSessionsTotal: 64,
    maxSessionsPerKey: 32,
    http: {
      host: '127.0.0.1',
      port: 7412,
      apiKey: '',
      apiKeyGenerated: false,
      noAuth: false,
      allowedHosts: [],
      maxBodyBytes: 4 * 1024 * 1024,
      sessionIdleMs: 30 * 60 * 1000,
      sessionInitIdleMs: 120 * 1000,
      maxMcpSessions: 256,
      maxMcpSessionsPerKey: 32,
      headersTimeoutMs: 15_000,
      bodyTimeoutMs: 30_000,
      bodyDeadlineMs: 60_000,
      maxPendingBodiesPerKey: 16,
      maxPendingBodies: 256,
    },
    gdb: { path: 'gdb', allowShell: false, allowAttach: false, text: 'compact' },
    control: {},
    bundles: { dir: debugkitCacheDir('bundles'), kubectl: 'kubectl' },
    debugger: { allowAttach: 'same-user', dataDir: debugkitDataDir() },
    logLevel: 'info',
    ...overrides,
  };
}
