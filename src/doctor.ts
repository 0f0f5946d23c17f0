import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { runBounded } from './core/run.js';
import { findOnPath } from './core/which.js';
import { resolveInterpreter } from './toolsets/python/interpreter.js';

/**
 * Who needs a tool: debugkit itself (a toolset cannot work without it), debugkit optionally (it
 * works without, slower), or only debugkit's own tests. Only a missing 'debugkit' one fails doctor.
 */
export type Need = 'debugkit' | 'optional' | 'tests';

export interface EngineCheck {
  engine: string;
  neededBy: string;
  need: Need;
  found: boolean;
  version?: string;
  path?: string;
  /** Why it was not found, when there is more to say than "not installed". */
  problem?: string;
  install: string;
}

interface Probe {
  engine: string;
  neededBy: string;
  need: Need;
  install: string;
  /** The command to run for a version, or undefined when the engine is not there. */
  command(): [string, string[]] | undefined;
  version(out: string): string | undefined;
}

const firstLine = (out: string) =>
  out
    .split('\n')
    .find((l) => l.trim())
    ?.trim();

function postgresBin(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(`${base}/${v}/bin/postgres`)) return `${base}/${v}/bin/postgres`;
  return undefined;
}

/** tsx's package.json, as debugkit resolves it. */
function tsxManifest(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve('tsx/package.json');
  } catch {
    return undefined;
  }
}

/** A command on PATH, asked for its version with these arguments. */
const onPath = (name: string, args: string[]) => (): [string, string[]] | undefined => {
  const found = findOnPath(name);
  return found ? [found, args] : undefined;
};

/** A file that exists, asked for its version. */
const atFile = (file: string | undefined, args: string[]) => (): [string, string[]] | undefined => (file && existsSync(file) ? [file, args] : undefined);

const PROBES: Probe[] = [
  { engine: 'gdb', neededBy: 'gdb, debugger', need: 'debugkit', install: 'apt-get install -y gdb', command: onPath('gdb', ['--version']), version: firstLine },
  { engine: 'go', neededBy: 'python: Go programs', need: 'optional', install: 'apt-get install -y golang-go', command: onPath('go', ['version']), version: firstLine },
  {
    engine: 'delve',
    neededBy: 'python: Go programs',
    need: 'optional',
    install: 'apt-get install -y delve',
    command: onPath('dlv', ['version']),
    version: (out) =>
      out
        .split('\n')
        .find((l) => l.startsWith('Version:'))
        ?.replace('Version: ', 'Delve '),
  },
  {
    // TypeScript programs run through tsx, a dependency of debugkit's (JavaScript needs only the node that runs debugkit).
    engine: 'tsx',
    neededBy: 'python: TypeScript programs',
    need: 'debugkit',
    install: "npm install (in debugkit's directory)",
    command: () => {
      const manifest = tsxManifest();
      return manifest ? [process.execPath, ['-p', `require(${JSON.stringify(manifest)}).version`]] : undefined;
    },
    version: (out) => (out.trim() ? `tsx ${out.trim()}` : undefined),
  },
  { engine: 'kubectl', neededBy: 'bundles', need: 'debugkit', install: 'apt-get install -y kubernetes-client', command: onPath('kubectl', ['version', '--client']), version: firstLine },
  {
    engine: 'proxychains4',
    neededBy: 'mocks',
    need: 'debugkit',
    install: 'apt-get install -y proxychains4',
    // proxychains4 has no version flag: the Debian package says which it is.
    command: () => (findOnPath('proxychains4') ? ['dpkg-query', ['-W', '-f=${Version}', 'proxychains4']] : undefined),
    version: (out) => (out.trim() ? `proxychains4 ${out.trim()}` : undefined),
  },
  { engine: 'ripgrep', neededBy: 'bundles: faster grep_files', need: 'optional', install: 'apt-get install -y ripgrep', command: onPath('rg', ['--version']), version: firstLine },
  { engine: 'gcc', neededBy: 'C test programs', need: 'tests', install: 'apt-get install -y gcc', command: onPath('gcc', ['--version']), version: firstLine },
  {
    engine: 'postgresql',
    neededBy: 'mocks tests',
    need: 'tests',
    install: 'apt-get install -y postgresql',
    command: () => atFile(postgresBin(), ['--version'])(),
    version: firstLine,
  },
  { engine: 'redis-server', neededBy: 'mocks tests', need: 'tests', install: 'apt-get install -y redis-server', command: onPath('redis-server', ['--version']), version: firstLine },
  { engine: 'mariadb', neededBy: 'mocks tests', need: 'tests', install: 'apt-get install -y mariadb-server', command: atFile('/usr/sbin/mariadbd', ['--version']), version: firstLine },
  {
    engine: 'python3 test modules',
    neededBy: 'mocks tests (psycopg2, pymysql, redis)',
    need: 'tests',
    install: 'apt-get install -y python3-psycopg2 python3-pymysql python3-redis',
    command: atFile('/usr/bin/python3', ['-c', 'import psycopg2, pymysql, redis; print("psycopg2", psycopg2.__version__.split()[0], "pymysql", pymysql.__version__, "redis", redis.__version__)']),
    version: firstLine,
  },
];

/** A probe's output (stdout, then stderr), through the one bounded runner; undefined when it could not start, failed or ran over 10 s. */
async function run(cmd: string, args: string[]): Promise<string | undefined> {
  try {
    const r = await runBounded({ command: cmd, args, timeoutMs: 10_000 });
    return r.code === 0 && !r.timedOut ? `${r.stdout}${r.stderr}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The interpreter the python toolset will use when a session names none: the same resolution
 * (resolveInterpreter's default, PATH, the system debugpy made importable), so what doctor says
 * is what python_start_session will meet.
 */
async function checkPython(): Promise<EngineCheck> {
  const base = {
    engine: 'python3 + debugpy',
    neededBy: 'python',
    need: 'debugkit' as const,
    install: 'apt-get install -y python3 python3-debugpy   (or, for another interpreter: <python> -m pip install debugpy)',
  };
  try {
    const found = await resolveInterpreter();
    const where = findOnPath(found.python) ?? found.python;
    return { ...base, found: true, path: where, version: `Python ${found.pythonVersion}, debugpy ${found.debugpyVersion}` };
  } catch (err) {
    return { ...base, found: false, problem: err instanceof Error ? err.message : String(err) };
  }
}

export async function checkEngines(): Promise<EngineCheck[]> {
  const probed = PROBES.map(async (probe): Promise<EngineCheck> => {
    const command = probe.command();
    const out = command ? await run(...command) : undefined;
    const version = out === undefined ? undefined : probe.version(out);
    const check: EngineCheck = { engine: probe.engine, neededBy: probe.neededBy, need: probe.need, found: version !== undefined, install: probe.install };
    if (version !== undefined) check.version = version;
    if (command && command[0] !== 'dpkg-query') check.path = command[0];
    return check;
  });
  const [python, ...rest] = await Promise.all([checkPython(), ...probed]);
  // In the order a reader wants them: what debugkit needs first (python among them), then the rest.
  return [python!, ...rest].sort((a, b) => NEED_ORDER.indexOf(a.need) - NEED_ORDER.indexOf(b.need));
}

const NEED_ORDER: Need[] = ['debugkit', 'optional', 'tests'];

/** 0 when everything debugkit needs is there (an optional or test-only tool may be missing), else 1. */
export function doctorExitCode(checks: EngineCheck[]): number {
  return checks.some((c) => c.need === 'debugkit' && !c.found) ? 1 : 0;
}

const HEADINGS: Record<Need, string> = {
  debugkit: 'What debugkit needs',
  optional: 'What debugkit uses when it is there',
  tests: "What only debugkit's own tests need (npm test)",
};

export function renderDoctor(checks: EngineCheck[]): string {
  const lines = ['debugkit doctor'];
  for (const need of NEED_ORDER) {
    const group = checks.filter((c) => c.need === need);
    if (group.length === 0) continue;
    lines.push('', `${HEADINGS[need]}:`);
    for (const c of group) {
      const mark = c.found ? 'ok     ' : 'MISSING';
      const version = (c.version ?? '').length > 56 ? `${c.version!.slice(0, 55)}…` : (c.version ?? '');
      lines.push(`${mark} ${c.engine.padEnd(20)} ${version.padEnd(56)} (for ${c.neededBy})${c.path ? ` ${c.path}` : ''}`);
      if (!c.found) lines.push(`        install: ${c.install}`);
      if (!c.found && c.problem) lines.push(`        ${c.problem}`);
    }
  }
  const missing = (need: Need) => checks.filter((c) => c.need === need && !c.found).length;
  lines.push('');
  if (missing('debugkit') > 0) {
    lines.push(`${missing('debugkit')} that debugkit needs missing: run the install commands above as root (the toolsets that need them fail until then).`);
  } else {
    lines.push('Everything debugkit needs is present.');
  }
  const notNeeded = missing('optional') + missing('tests');
  if (notNeeded > 0) lines.push(`${notNeeded} optional or test-only missing: not needed to run debugkit (npm test installs the test tools as root).`);
  return lines.join('\n');
}

/** How an MCP client starts this very debugkit: the `debugkit` on PATH when it is this one, else node and this cli.js. */
export function launcher(searchPath = process.env.PATH ?? ''): { command: string; args: string[] } {
  const cli = fileURLToPath(new URL('./cli.js', import.meta.url));
  const onPathCommand = findOnPath('debugkit', searchPath);
  if (onPathCommand && sameFile(onPathCommand, cli)) return { command: 'debugkit', args: [] };
  return { command: process.execPath, args: [cli] };
}

function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/** A shell word: as it is when it needs no quoting, else in single quotes. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * Client configurations for this machine, to paste as they are: stdio, this debugkit, the
 * workspace root given (the directory doctor ran in by default).
 */
export function renderClientConfig(root: string, start = launcher()): string {
  const args = [...start.args, '--root', root];
  const desktop = { mcpServers: { debugkit: { command: start.command, args } } };
  const vscode = { servers: { debugkit: { type: 'stdio', command: start.command, args: [...start.args, '--root', '${workspaceFolder}'] } } };
  return [
    'Client configuration for this machine (stdio, workspace root ' + root + '):',
    '',
    'Claude Desktop (claude_desktop_config.json), Cursor (.cursor/mcp.json or ~/.cursor/mcp.json):',
    JSON.stringify(desktop, null, 2),
    '',
    'VS Code (.vscode/mcp.json):',
    JSON.stringify(vscode, null, 2),
    '',
    'Claude Code:',
    `claude mcp add debugkit -- ${[start.command, ...args].map(shellWord).join(' ')}`,
  ].join('\n');
}
