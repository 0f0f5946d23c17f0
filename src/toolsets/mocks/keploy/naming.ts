import path from 'node:path';
import { DebugkitError } from '../../../core/errors.js';

/**
 * Mock-set names, as the keploy-mock contract shows them:
 * - `order-service-stripe-postgres`, `user-service-http`, `my-app-http` for recordings that
 *   captured traffic: the application's name, then each protocol (or dependency) seen, in
 *   kebab case (`./keploy/my-app-http/mocks.yaml` for `go run main.go` with protocols `["HTTP"]`);
 * - `mock-1704153600` (Unix seconds) for a recording that captured nothing.
 * Uniqueness is `MockStore.uniqueName`'s job: it appends `-2`, `-3`, ... when a name is taken.
 */

/** What a mock-set name may contain: it is a directory name under the mocks path. */
export const SET_NAME = /^[A-Za-z0-9._-]+$/;
export const MAX_SET_NAME = 200;

/** Throws INVALID_ARGUMENT unless `name` is a safe mock-set name (also refuses `..` and a leading dot). */
export function validateSetName(name: unknown, what = 'mock set name'): string {
  if (typeof name !== 'string' || name.length === 0) throw new DebugkitError('INVALID_ARGUMENT', `The ${what} is empty`);
  if (name.length > MAX_SET_NAME || !SET_NAME.test(name) || name.includes('..') || name.startsWith('.')) {
    throw new DebugkitError(
      'INVALID_ARGUMENT',
      `Invalid ${what} ${JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}...` : name)}: use letters, digits, '.', '_' and '-' ` + `(at most ${MAX_SET_NAME}, no '..', not starting with '.')`,
    );
  }
  return name;
}

/**
 * The name for a new mock set recorded from `command`: `<app>-<protocol>...`, or
 * `mock-<unix seconds of now>` when no protocol was seen.
 *
 * `<app>` is the program the command runs, found past wrappers (`sudo -E`, `env A=b`, `time`),
 * package runners (`npx x`, `uv run x`, `poetry run x`) and interpreters (`node server.js` is
 * `server`, `python -m billing.api` is `billing-api`, `java -jar order-service.jar` is `order-service`,
 * `go run ./cmd/billing` is `billing`). When that says nothing about the application (`npm
 * start`, `go run main.go`, `./bin/server`), the basename of `cwd` is used when given.
 * Protocols keep their order and are deduplicated: `["HTTP", "Postgres"]` gives `-http-postgres`.
 */
export function nameFor(command: string, protocols: readonly string[], now: Date, cwd?: string): string {
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) throw new DebugkitError('INVALID_ARGUMENT', 'nameFor: now is not a valid Date');
  const parts: string[] = [];
  for (const p of protocols) {
    const s = slug(p);
    if (s && !parts.includes(s)) parts.push(s);
  }
  if (parts.length === 0) return `mock-${Math.floor(now.getTime() / 1000)}`;
  const suffix = parts.join('-').slice(0, 80).replace(/-+$/, '');
  const app = (slug(appName(command, cwd)) || 'app').slice(0, MAX_SET_NAME - suffix.length - 1).replace(/-+$/, '') || 'app';
  return `${app}-${suffix}`;
}

/** Lowercase kebab case of letters and digits (accents dropped). */
export function slug(s: string): string {
  return s
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** Names that say nothing about which application it is. */
const GENERIC = new Set([
  '',
  '.',
  '..',
  'main',
  'index',
  'app',
  'server',
  'start',
  'run',
  'cmd',
  'src',
  'dist',
  'build',
  'bin',
  '__main__',
  'manage',
  'wsgi',
  'asgi',
  'out',
  'target',
  'uvicorn',
  'gunicorn',
  'hypercorn',
  'flask',
  'pytest',
  'jest',
  'vitest',
  'mocha',
  'make',
]);
const WRAPPERS = new Set(['sudo', 'env', 'time', 'nohup', 'exec', 'nice', 'timeout', 'command']);
/** Options of wrappers that take a value (`sudo -u user`, `nice -n 5`). */
const WRAPPER_VALUE_OPTIONS = new Set(['-u', '-g', '-C', '-D', '-h', '-p', '-n', '-s', '-k']);
const RUN_PREFIXED = new Set(['uv', 'poetry', 'pipenv', 'pdm', 'rye', 'hatch', 'bundle']);
const EXEC_RUNNERS = new Set(['npx', 'pnpx', 'bunx', 'dlx']);
const SCRIPT_RUNNERS = new Set(['npm', 'yarn', 'pnpm']);
const INTERPRETERS = new Set(['node', 'nodejs', 'python', 'python3', 'python2', 'pypy', 'pypy3', 'ruby', 'php', 'perl', 'deno', 'bun', 'tsx', 'ts-node', 'java', 'dotnet']);
/** Interpreter options that take a value (their value is not the program). */
const VALUE_OPTIONS = new Set(['-r', '--require', '--import', '--loader', '--experimental-loader', '-cp', '-classpath', '--class-path', '-W', '-X', '--env-file', '--config', '-c', '-e', '--eval']);

/** The application's name as `command` shows it (see nameFor). */
export function appName(command: string, cwd?: string): string {
  const fromCwd = cwd ? path.basename(path.resolve(cwd)) : '';
  const candidate = programOf(shellWords(command));
  if (candidate === null || GENERIC.has(candidate.toLowerCase())) return fromCwd || candidate || '';
  return candidate;
}

/** A path's last component without its extension (`./cmd/billing` → billing, `app.py` → app). */
function stem(p: string): string {
  const base = path.basename(p.replace(/\/+$/, ''));
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(0, dot) : base;
}

/** null when the command names no program of its own (then the working directory is the app). */
function programOf(words: string[]): string | null {
  let w = [...words];
  for (let guard = 0; guard < 20 && w.length > 0; guard++) {
    while (w.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(w[0]!)) w.shift(); // VAR=value
    if (w.length === 0) return null;
    const prog = path.basename(w[0]!).replace(/\.(exe|cmd|bat)$/i, '');
    const rest = w.slice(1);
    if (WRAPPERS.has(prog)) {
      w = skipOptions(rest, WRAPPER_VALUE_OPTIONS, prog === 'timeout' ? 1 : 0);
      continue;
    }
    if (EXEC_RUNNERS.has(prog)) {
      w = skipOptions(rest, new Set(['-p', '--package']), 0);
      continue;
    }
    if (RUN_PREFIXED.has(prog)) {
      const i = rest.findIndex((x) => x === 'run' || x === 'exec');
      if (i < 0) return null;
      w = rest.slice(i + 1);
      continue;
    }
    if (SCRIPT_RUNNERS.has(prog)) {
      // `npm start`, `yarn dev`, `pnpm run x`: a package script; `yarn node x.js` runs a program.
      if (rest[0] === 'exec' || rest[0] === 'dlx' || rest[0] === 'node') {
        w = rest[0] === 'node' ? rest : rest.slice(1);
        continue;
      }
      return null;
    }
    if (prog === 'go') {
      if (rest[0] !== 'run') return null;
      // `go run main.go` → main (generic: the directory names the app), `go run ./cmd/billing` → billing.
      const target = rest.slice(1).find((x) => !x.startsWith('-'));
      if (!target || target === '.' || target.endsWith('/...')) return null;
      return stem(target);
    }
    if (prog === 'cargo') {
      const bin = rest.indexOf('--bin');
      return bin >= 0 && rest[bin + 1] ? rest[bin + 1]! : null;
    }
    if (prog === 'docker' || prog === 'podman') {
      const name = rest.indexOf('--name');
      return name >= 0 && rest[name + 1] ? rest[name + 1]! : null;
    }
    if (INTERPRETERS.has(prog)) {
      const args = prog === 'deno' || prog === 'bun' || prog === 'dotnet' ? rest.filter((x, i) => !(i === 0 && x === 'run')) : rest;
      const m = args.indexOf('-m');
      if (m >= 0 && args[m + 1]) return args[m + 1]!; // python -m billing.api → billing.api
      const jar = args.indexOf('-jar');
      if (jar >= 0 && args[jar + 1]) return stem(args[jar + 1]!).replace(/-\d+(\.\d+)*(-SNAPSHOT)?$/i, '');
      const target = skipOptions(args, VALUE_OPTIONS, 0)[0];
      if (!target) return null;
      if (prog === 'bun' && !target.includes('.') && !target.includes('/')) return null; // `bun run dev`: a package script
      if (INTERPRETERS.has(stem(target)) || EXEC_RUNNERS.has(stem(target))) {
        w = skipOptions(args, VALUE_OPTIONS, 0);
        continue;
      }
      // java com.example.OrderService → OrderService
      return prog === 'java' && !target.includes('/') ? target.split('.').pop()! : stem(target);
    }
    // The program itself: `./test-app-product-catelog`, `/usr/local/bin/billing-api`.
    const own = stem(w[0]!);
    if (GENERIC.has(own.toLowerCase())) {
      const parent = path.basename(path.dirname(w[0]!));
      return GENERIC.has(parent.toLowerCase()) ? null : parent;
    }
    return own;
  }
  return null;
}

/** Drops leading options (and the values of those in `withValue`) and `positional` leading operands. */
function skipOptions(words: string[], withValue: ReadonlySet<string>, positional: number): string[] {
  let i = 0;
  while (i < words.length && words[i]!.startsWith('-') && words[i] !== '-' && words[i] !== '--') {
    i += withValue.has(words[i]!) ? 2 : 1;
  }
  if (words[i] === '--') i++;
  return words.slice(i + positional);
}

/** Splits a command line like a POSIX shell would (quotes and backslashes; no expansion). */
export function shellWords(command: string): string[] {
  const words: string[] = [];
  let cur = '';
  let has = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (quote === "'") {
      if (c === "'") quote = null;
      else cur += c;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else if (c === '\\' && i + 1 < command.length && '"\\$`'.includes(command[i + 1]!)) cur += command[++i];
      else cur += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      has = true;
    } else if (c === '\\' && i + 1 < command.length) {
      cur += command[++i];
      has = true;
    } else if (/\s/.test(c)) {
      if (has || cur) words.push(cur);
      cur = '';
      has = false;
    } else if (c === ';' || c === '&' || c === '|') {
      break; // only the first command of a pipeline or list names the app
    } else {
      cur += c;
      has = true;
    }
  }
  if (has || cur) words.push(cur);
  return words;
}
