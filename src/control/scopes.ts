/**
 * Scopes: `<toolset>:read` (tools that only look), `<toolset>` (full use, implies `:read`), and
 * capability scopes for what reaches outside a debug session (`gdb:shell`, `gdb:attach`,
 * `bundles:download`, `mocks:run`, `debugger:attach`). `*` is every scope, `<toolset>:*` every
 * scope of one toolset. A call needs all the scopes `requiredScopes` names.
 */

export const TOOLSETS = ['gdb', 'python', 'bundles', 'mocks', 'debugger'] as const;
export const CAPABILITY_SCOPES = ['gdb:shell', 'gdb:attach', 'bundles:download', 'mocks:run', 'debugger:attach'] as const;

/** Every scope a key may be given, for help texts and validation. */
export function knownScopes(): string[] {
  return ['*', ...TOOLSETS.flatMap((t) => [t, `${t}:read`, `${t}:*`]), ...CAPABILITY_SCOPES];
}

/** Parses "gdb,python:read" into a sorted, de-duplicated list; throws naming the bad scope. */
export function parseScopes(text: string): string[] {
  const scopes = text.split(',').map((s) => s.trim()).filter(Boolean);
  if (scopes.length === 0) throw new Error(`no scopes given: valid scopes are ${knownScopes().join(', ')}`);
  const valid = new Set(knownScopes());
  for (const scope of scopes) {
    if (!valid.has(scope)) throw new Error(`unknown scope "${scope}": valid scopes are ${knownScopes().join(', ')}`);
  }
  return [...new Set(scopes)].sort();
}

/** True when the granted scopes cover `needed`. */
export function hasScope(granted: readonly string[], needed: string): boolean {
  if (granted.includes('*') || granted.includes(needed)) return true;
  const [toolset, capability] = needed.split(':');
  if (granted.includes(`${toolset}:*`)) return true;
  // The full toolset scope covers its read scope, never a capability scope.
  return capability === 'read' && granted.includes(toolset!);
}

/** What the control plane knows about one tool, gathered when toolsets register. */
export interface ToolInfo {
  name: string;
  toolset: string;
  readOnly: boolean;
}

/** Tools whose base scope is not what their annotations imply, or that always need a capability. */
const ALWAYS: Record<string, string[]> = {
  keploy_mock_record: ['mocks', 'mocks:run'],
  keploy_mock_test: ['mocks', 'mocks:run'],
};

/**
 * The scopes a call needs: the tool's base scope (`:read` for read-only tools) plus capability
 * scopes its arguments reach for. Pure: the argument checks are allowlists of what stays inside
 * a session, anything else asks for the capability.
 */
export function requiredScopes(tool: ToolInfo, args: unknown): string[] {
  const fixed = ALWAYS[tool.name];
  if (fixed) return fixed;
  const base = tool.readOnly ? `${tool.toolset}:read` : tool.toolset;
  const extra: string[] = [];
  const a = (args && typeof args === 'object' ? args : {}) as Record<string, unknown>;
  if (tool.toolset === 'gdb' && tool.name === 'call' && typeof a.command === 'string') extra.push(...gdbCommandScopes(a.command));
  if (tool.toolset === 'bundles' && tool.name === 'initialize_bundle' && typeof a.source === 'string' && /^[a-z][a-z0-9+.-]*:\/\//i.test(a.source.trim())) {
    extra.push('bundles:download');
  }
  if (tool.toolset === 'debugger' && /(^|[/_.])attach$/.test(tool.name)) extra.push('debugger:attach');
  return [base, ...extra];
}

// GDB commands that run other programs, load code into gdb, write files or build commands from
// strings (eval, define, alias could assemble any of the others).
const SHELL_COMMANDS = [
  'shell', 'pipe', 'make', 'python', 'python-interactive', 'guile', 'guile-repl', 'source', 'eval', 'define',
  'define-prefix', 'alias', 'document', 'compile', 'dump', 'append', 'gcore', 'generate-core-file', 'cd',
  'jit-reader-load', 'add-auto-load-safe-path', 'add-auto-load-scripts-directory', 'remote', 'while', 'if',
  'save', 'restore', 'tty', 'explore', 'plugin', 'path',
];
const SHELL_ALIASES = new Set(['!', '|', 'py', 'pi', 'gu', 'gr', 'pythoni', 'so']);
const SHELL_MI = /^-(interpreter-exec|target-file-put|target-file-get|target-file-delete|environment-cd|inferior-tty-set|environment-path|gdb-set\s+(exec-wrapper|startup-with-shell|logging|auto-load|shell|inferior-tty|environment))\b/;
const ATTACH_COMMANDS = ['attach', 'target', 'detach-on-fork'];
const ATTACH_MI = /^-(target-attach|target-select)\b/;
// `set`/`show` subcommands that point gdb at programs or files outside the session.
const SHELL_SETTINGS = /^(exec-wrapper|startup-with-shell|shell|logging|auto-load|inferior-tty|trace-commands|history\s+filename|debug-file-directory|sysroot|solib-search-path|remotetimeout|remote\b|tdesc|python|guile|extension-language|script-extension|cwd)/;
// Program arguments go through /bin/sh (startup-with-shell): metacharacters there run commands.
const SHELL_META = /[$`;|&<>()\\\n\r*?[\]{}~!#]/;
const RUNS_WITH_ARGS = ['run', 'r', 'start', 'starti'];

/** The capability scopes one GDB command (CLI or MI) needs. */
export function gdbCommandScopes(command: string): string[] {
  let cmd = command.trim().replace(/^\d+(?=-)/, ''); // an MI token prefix ("12-exec-run")
  const needs = new Set<string>();
  if (cmd.startsWith('-')) {
    if (SHELL_MI.test(cmd)) needs.add('gdb:shell');
    if (ATTACH_MI.test(cmd)) needs.add('gdb:attach');
    if (/^-exec-arguments\b/.test(cmd) && SHELL_META.test(cmd.slice('-exec-arguments'.length))) needs.add('gdb:shell');
    return [...needs];
  }
  if (cmd.startsWith('!') || cmd.startsWith('|')) return ['gdb:shell'];
  // The command word ends at the first character that cannot be part of it ("run;id" is "run" + ";id").
  const word = /^[A-Za-z0-9_.-]*/.exec(cmd)![0];
  const w = word.toLowerCase();
  const args = cmd.slice(word.length).trim();
  const matches = (name: string) => w === name || (w.length >= 3 && name.startsWith(w));
  if (SHELL_ALIASES.has(w) || SHELL_COMMANDS.some(matches)) needs.add('gdb:shell');
  if (ATTACH_COMMANDS.some(matches) || /^(at|att)$/.test(w)) needs.add('gdb:attach');
  if (RUNS_WITH_ARGS.includes(w) || (w.length >= 3 && 'starti'.startsWith(w))) {
    if (SHELL_META.test(args)) needs.add('gdb:shell');
  }
  if (w === 'set' || (w.length >= 2 && 'set'.startsWith(w))) {
    const setting = args.replace(/^variable\s+|^var\s+/, '');
    if (/^args\b/.test(setting) && SHELL_META.test(setting.slice(4))) needs.add('gdb:shell');
    else if (/^env\w*(\s|$)/.test(setting)) needs.add('gdb:shell'); // any variable can run code before main (BASH_ENV, LD_PRELOAD, ...)
    else if (SHELL_SETTINGS.test(setting)) needs.add('gdb:shell');
  }
  if (/^(file|exec-file|symbol-file|core-file|core|add-symbol-file|sharedlibrary)$/.test(w) && /[`$]/.test(args)) needs.add('gdb:shell');
  return [...needs];
}
