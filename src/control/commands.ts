import { createWriteStream } from 'node:fs';
import { rename } from 'node:fs/promises';
import type { Command } from 'commander';
import { canonicalJson } from './audit.js';
import { DEFAULT_RATE, makeKey } from './keys.js';
import { formatLimit } from './limits.js';
import { openStore } from './open.js';
import { knownScopes } from './scopes.js';
import type { KeyRecord, Store } from './store.js';

interface StoreOpts {
  store?: string;
  dataDir?: string;
}

function storeOptions(cmd: Command): Command {
  return cmd
    .option('--store <url>', 'postgres://USER:PASSWORD@HOST:PORT/DB shared by several nodes, or sqlite:PATH (default: control.db in the data directory)', process.env.DEBUGKIT_STORE)
    .option('--data-dir <dir>', "debugkit's data directory (default: $XDG_DATA_HOME/debugkit or ~/.local/share/debugkit)");
}

async function withStore<T>(opts: StoreOpts, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(opts.store, opts.dataDir);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

function keyState(k: KeyRecord, now = Date.now()): string {
  if (k.revoked_at) return `revoked ${k.revoked_at}`;
  if (k.expires_at && Date.parse(k.expires_at) <= now) return `expired ${k.expires_at}`;
  return 'active';
}

/** Since/until values: an ISO date, or a duration back from now ("7d", "12h", "30m"). */
export function parseTime(text: string, what: string, now = Date.now()): string {
  const rel = /^(\d{1,6})\s*(d|h|m|s)$/i.exec(text.trim());
  if (rel) return new Date(now - Number(rel[1]) * { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 }[rel[2]!.toLowerCase() as 'd']).toISOString();
  const at = Date.parse(text);
  if (Number.isNaN(at)) throw new Error(`${what} "${text}" is not valid: give a date (2026-11-01, 2026-11-01T12:00:00Z) or a duration back from now (7d, 12h, 30m)`);
  return new Date(at).toISOString();
}

/** `debugkit keys ...` and `debugkit audit ...`. */
export function registerControlCommands(program: Command): void {
  const keys = program.command('keys').description('Manage API keys (stored hashed; the key is shown once, at creation)');
  storeOptions(
    keys
      .command('create')
      .description('Create an API key and print it (once)')
      .requiredOption('--name <name>', 'who or what the key is for')
      .requiredOption('--scopes <list>', `comma-separated scopes: ${knownScopes().join(', ')}`)
      .option('--rate <n/unit>', `rate limit on every request (JSON-RPC requests and REST calls), e.g. 60/min, or "unlimited" (default ${DEFAULT_RATE})`)
      .option('--quota <n/period>', 'tool calls (and REST calls) per period, e.g. 10000/month or 500/day (default: none)')
      .option('--expires <when>', 'expiry: a duration (30d, 12h) or a date (2027-01-31)')
      .option('--json', 'print the key and its record as JSON'),
  ).action(async (opts: StoreOpts & { name: string; scopes: string; rate?: string; quota?: string; expires?: string; json?: boolean }) => {
    const made = makeKey(opts);
    await withStore(opts, (store) => store.createKey(made.record, made.hash));
    if (opts.json) return void process.stdout.write(`${JSON.stringify({ key: made.secret, ...made.record })}\n`);
    const r = made.record;
    process.stdout.write(
      `Created key ${r.id} (${r.name})\n` +
        `  scopes: ${r.scopes.join(', ')}\n  rate: ${formatLimit(r.rate)}  quota: ${formatLimit(r.quota)}${r.expires_at ? `  expires: ${r.expires_at}` : ''}\n` +
        `Key (shown only now; debugkit keeps only its hash):\n${made.secret}\n`,
    );
  });
  storeOptions(keys.command('list').description('List API keys (never the keys themselves)').option('--json', 'JSON lines')).action(async (opts: StoreOpts & { json?: boolean }) => {
    const all = await withStore(opts, (store) => store.listKeys());
    if (opts.json) return void process.stdout.write(all.map((k) => `${JSON.stringify({ ...k, state: keyState(k) })}\n`).join(''));
    if (all.length === 0) return void process.stdout.write('No API keys. Create one with: debugkit keys create --name NAME --scopes gdb,python:read\n');
    const rows = all.map((k) => [k.id, k.name, `${k.prefix}...`, k.scopes.join(','), formatLimit(k.rate), formatLimit(k.quota), keyState(k)]);
    const head = ['ID', 'NAME', 'PREFIX', 'SCOPES', 'RATE', 'QUOTA', 'STATE'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    process.stdout.write([head, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n');
  });
  storeOptions(keys.command('revoke').description('Revoke an API key, by id or name; refused at once (within a second on the other nodes of a shared store)').argument('<key>', 'key id (key_...) or name')).action(
    async (id: string, opts: StoreOpts) => {
      const revoked = await withStore(opts, (store) => store.revokeKey(id, new Date().toISOString()));
      if (!revoked) throw new Error(`no key with id or name "${id}" (see debugkit keys list)`);
      process.stdout.write(`Revoked ${revoked.id} (${revoked.name}) at ${revoked.revoked_at}\n`);
    },
  );

  const audit = program.command('audit').description('Check and export the tamper-evident audit log');
  storeOptions(audit.command('verify').description('Check the hash chain; names the first broken entry (exit 1 when broken)')).action(async (opts: StoreOpts) => {
    const state = await withStore(opts, (store) => store.verifyAudit());
    if (state.ok) return void process.stdout.write(`audit chain OK: ${state.checked} entries verified, head ${state.head}\n`);
    process.stdout.write(`audit chain BROKEN at entry ${state.first_broken!.seq}: ${state.first_broken!.reason} (${state.checked - 1} entries before it verified)\n`);
    process.exitCode = 1;
  });
  storeOptions(
    audit
      .command('export')
      .description('Write audit entries as JSON lines (each with its seq, prev_hash and hash)')
      .option('--since <when>', 'from this time: a date or a duration back from now (7d, 12h)')
      .option('--output <file>', 'write to this file (atomically) instead of stdout'),
  ).action(async (opts: StoreOpts & { since?: string; output?: string }) => {
    const since = opts.since ? parseTime(opts.since, '--since') : undefined;
    const tmp = opts.output ? `${opts.output}.tmp-${process.pid}` : undefined;
    const out = tmp ? createWriteStream(tmp, { mode: 0o600 }) : process.stdout;
    const n = await withStore(opts, (store) => store.exportAudit(since, (r) => void out.write(`${canonicalJson(r)}\n`)));
    if (tmp && opts.output) {
      await new Promise<void>((resolve, reject) => (out as ReturnType<typeof createWriteStream>).end((err?: Error | null) => (err ? reject(err) : resolve())));
      await rename(tmp, opts.output);
      process.stderr.write(`wrote ${n} audit entries to ${opts.output}\n`);
    }
  });
}
