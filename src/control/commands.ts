import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { Command } from 'commander';
import type { ChainState, Checkpoint } from './audit.js';
import { DEFAULT_RATE, makeKey } from './keys.js';
import { formatLimit } from './limits.js';
import type { OpenStoreOptions } from './open.js';
import { knownScopes } from './scopes.js';
import type { KeyRecord, Store } from './store.js';

interface StoreOpts {
  store?: string;
  dataDir?: string;
  auditKeyFile?: string;
}

function storeOptions(cmd: Command, audit = false): Command {
  cmd
    .option('--store <url>', 'postgres://USER:PASSWORD@HOST:PORT/DB shared by several nodes, or sqlite:PATH (default: control.db in the data directory)', process.env.DEBUGKIT_STORE)
    .option('--data-dir <dir>', "debugkit's data directory (default: $XDG_DATA_HOME/debugkit or ~/.local/share/debugkit)");
  if (audit)
    cmd.option(
      '--audit-key-file <file>',
      'the audit key the chain is hashed with (default: $DEBUGKIT_AUDIT_KEY_FILE, else audit.key beside control.db, or in the data directory for PostgreSQL)',
      process.env.DEBUGKIT_AUDIT_KEY_FILE,
    );
  return cmd;
}

async function withStore<T>(opts: StoreOpts, fn: (store: Store) => Promise<T>, purpose: NonNullable<OpenStoreOptions['purpose']> = 'admin'): Promise<T> {
  // The store and the audit chain's modules load with the command that uses them, not with every start.
  const { openStore } = await import('./open.js');
  const store = await openStore(opts.store, opts.dataDir, { purpose, ...(opts.auditKeyFile ? { auditKeyFile: opts.auditKeyFile } : {}) });
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
    process.stdout.write(
      [head, ...rows]
        .map((r) =>
          r
            .map((c, i) => c.padEnd(widths[i]!))
            .join('  ')
            .trimEnd(),
        )
        .join('\n') + '\n',
    );
  });
  storeOptions(
    keys.command('revoke').description('Revoke an API key, by id or name; refused at once (within a second on the other nodes of a shared store)').argument('<key>', 'key id (key_...) or name'),
  ).action(async (id: string, opts: StoreOpts) => {
    const revoked = await withStore(opts, (store) => store.revokeKey(id, new Date().toISOString()));
    if (!revoked) throw new Error(`no key with id or name "${id}" (see debugkit keys list)`);
    process.stdout.write(`Revoked ${revoked.id} (${revoked.name}) at ${revoked.revoked_at}\n`);
  });

  const audit = program.command('audit').description('Check and export the tamper-evident audit log');
  storeOptions(
    audit
      .command('verify')
      .description('Check the hash chain with the audit key, against the checkpoint file beside the store and the checkpoints given; names the first broken or missing entry (exit 1 when broken)')
      .option('--checkpoint <value>', 'a checkpoint kept outside the server: SEQ:HASH as printed by debugkit audit checkpoint, or a checkpoint file (repeatable)', (v: string, all: string[] = []) => [
        ...all,
        v,
      ]),
    true,
  ).action(async (opts: StoreOpts & { checkpoint?: string[] }) => {
    const given = await Promise.all((opts.checkpoint ?? []).map(checkpointArg));
    const { state, keyFile, keyed } = await withStore(
      opts,
      async (store) => ({ state: await verifyWhole(store, given), keyFile: store.auditAnchor?.keyFile, keyed: Boolean(store.auditAnchor?.key) }),
      'inspect',
    );
    process.stdout.write(describeChain(state, keyFile, keyed));
    if (!state.ok) process.exitCode = 1;
  });
  storeOptions(
    audit.command('checkpoint').description('Verify the chain and print its head as SEQ:HASH, a checkpoint to keep outside the server (later: debugkit audit verify --checkpoint SEQ:HASH)'),
    true,
  ).action(async (opts: StoreOpts) => {
    const state = await withStore(opts, (store) => verifyWhole(store, []), 'inspect');
    if (!state.ok) {
      process.stdout.write(describeChain(state, undefined, false));
      process.exitCode = 1;
      return;
    }
    if (state.head_seq === 0) throw new Error('the audit chain is empty: there is no head to checkpoint yet');
    const { formatCheckpoint } = await import('./audit.js');
    process.stdout.write(`${formatCheckpoint(state.head_seq, state.head!)}\n`);
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
    const { canonicalJson } = await import('./audit.js');
    // The store is opened first: a missing one leaves no file behind.
    const n = await withStore(
      opts,
      async (store) => {
        const out = tmp ? createWriteStream(tmp, { mode: 0o600 }) : process.stdout;
        try {
          const count = await store.exportAudit(since, (r) => void out.write(`${canonicalJson(r)}\n`));
          if (tmp) await new Promise<void>((resolve, reject) => (out as ReturnType<typeof createWriteStream>).end((err?: Error | null) => (err ? reject(err) : resolve())));
          return count;
        } catch (err) {
          if (tmp) {
            (out as ReturnType<typeof createWriteStream>).destroy();
            await rm(tmp, { force: true });
          }
          throw err;
        }
      },
      'inspect',
    );
    if (tmp && opts.output) {
      await rename(tmp, opts.output);
      process.stderr.write(`wrote ${n} audit entries to ${opts.output}\n`);
    }
  });
}

/** A --checkpoint value: SEQ:HASH, or the path of a checkpoint file. */
async function checkpointArg(value: string): Promise<Checkpoint> {
  const [{ parseCheckpoint }, { readCheckpointFile }] = await Promise.all([import('./audit.js'), import('./anchor.js')]);
  if (/^\s*\d+:[0-9a-f]+\s*$/.test(value)) return parseCheckpoint(value, `--checkpoint ${value.trim()}`);
  const read = readCheckpointFile(value);
  if (!read) throw new Error(`--checkpoint ${value}: no such file, and not SEQ:HASH (as printed by debugkit audit checkpoint)`);
  return read;
}

/** The whole chain, checked with the audit key; a keyed chain without its key is an error, not a broken chain. */
async function verifyWhole(store: Store, checkpoints: Checkpoint[]): Promise<ChainState> {
  if (store.auditAnchor?.keyProblem) throw new Error(store.auditAnchor.keyProblem);
  return store.verifyAudit(undefined, checkpoints);
}

/** `audit verify`'s report: OK or BROKEN on the first line, then how the chain is anchored. */
export function describeChain(state: ChainState, keyFile: string | undefined, keyed: boolean): string {
  if (!state.ok) {
    const at = state.first_broken!;
    return `audit chain BROKEN at entry ${at.seq}: ${at.reason} (${Math.max(0, at.seq - state.from_seq)} entries before it verified)\n`;
  }
  const lines = [`audit chain OK: ${state.checked} entries verified, head ${state.head}`];
  if (state.keyed_from === 1) lines.push(`  keyed: every entry is hashed with the audit key (${keyFile})`);
  else if (state.keyed_from !== undefined) {
    lines.push(
      `  keyed: entries ${state.keyed_from}-${state.head_seq} are hashed with the audit key (${keyFile}); entries 1-${state.keyed_from - 1} were written before the store had one (linked, hashed without it)`,
    );
  } else if (state.head_seq > 0) {
    lines.push(keyed ? '  keyed: no entry is hashed with the audit key yet (all were written before the store had one)' : '  keyed: no (no audit key: entries are linked, hashed without one)');
  }
  for (const cp of state.checkpoints ?? []) lines.push(`  checkpoint: entry ${cp.seq} matches ${cp.source}`);
  if (!state.checkpoints?.length && state.head_seq > 0) {
    lines.push('  no checkpoint: entries removed from the end could not be told; keep the value of debugkit audit checkpoint outside the server and give it with --checkpoint');
  }
  return `${lines.join('\n')}\n`;
}
