// Issue 17, the second attack (17b) on the finished change, holding each scope in turn over HTTP
// (plain JSON-RPC, 2026-07-28 requests): what it tried against one node after the fixes of the
// first attack (test/attack-17.test.ts). The classifier's own cases, each proved on the real gdb:
// src/toolsets/gdb/policy.attack17b.test.ts. Here each attack is sent as a key holder sends it and
// checked by its effect on the host (a marker file outside the root, a file outside the root
// changed, a secret read). The describes named "found by the attack" hold attacks that succeeded
// against the code this attack was made on (refused since); the others held. Two findings are the
// debugger's by-design code execution and are documented in SECURITY.md instead: a debuggee reading
// the server's own /proc/PID/environ, and `list` printing a host file named in debug info.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey, newKeySecret } from '../src/control/keys.js';
import { startPostgres, type RunningPostgres } from '../src/toolsets/mocks/postgres/testing.js';
import { sleep } from '../src/core/wait.js';
import {
  answerText,
  expectNoEffect,
  gdbSession,
  modernCall,
  plainCall,
  refused as isRefused,
  runGdbAttack,
  startKeyedServer,
  stopKeyedServers,
  type Answer,
  type GdbAttack,
  type KeyedServer,
} from './helpers/attack.js';
import { rpc, runCli, startNode, type Node } from './helpers/control.js';
import { compileC, tempDir } from './helpers/programs.js';

/** The workspace root, and a directory outside it standing for the rest of the host. */
const root = tempDir('debugkit-attack17b-root-');
const host = tempDir('debugkit-attack17b-host-');
const rootRel = root.slice(1);
/** `..` segments that climb from absolute path `p` (its last segment included) to "/". */
const up = (p: string) => '../'.repeat(p.split('/').filter(Boolean).length);
/** The operator's full-scope key, given the documented way: in the environment. */
const MASTER = 'master-key-attack17b-0123456789abcdef';

let closed: KeyedServer;
let open: KeyedServer;

const SCOPES: Record<string, string> = {
  gdb: 'gdb',
  gdbFull: 'gdb,gdb:shell,gdb:attach',
  debugger: 'debugger',
  debuggerRead: 'debugger:read',
  mocksRead: 'mocks:read',
};

/** Processes this test started as victims (never system processes): ended in afterAll. */
const victims: ChildProcess[] = [];
function victim(secretArg: string): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 600000)', secretArg], { stdio: 'ignore' });
  victims.push(child);
  return child;
}

beforeAll(async () => {
  compileC(root, 'basic');
  [closed, open] = await Promise.all([startKeyedServer(root, SCOPES, [], { DEBUGKIT_API_KEY: MASTER }), startKeyedServer(root, SCOPES, ['--allow-gdb-shell', '--allow-attach'])]);
}, 120_000);

afterAll(async () => {
  for (const v of victims) v.kill('SIGKILL');
  await stopKeyedServers([closed, open]);
  rmSync(root, { recursive: true, force: true });
  rmSync(host, { recursive: true, force: true });
});

/** Everything an answer says: the error, or the text content and the program's output. */
const text = (answer: Answer) => answerText(answer, { structured: true });
const refused = (answer: Answer) => isRefused(answer, { structured: true });

/** A gdb call's console output (throws on an MCP error, returns the refusal text otherwise). */
async function gdbText(s: KeyedServer, key: string, id: string, command: string): Promise<string> {
  return text(await plainCall(s, key, 'call', { id, command }));
}

// ---------------------------------------------------------------------------------------------
// gdb, a `gdb` key: command spellings the classifier misreads (found by the attack).
// ---------------------------------------------------------------------------------------------

const GDB_ATTACKS: GdbAttack[] = [
  {
    name: 'MI "--all" hides the setting: -gdb-set --all exec-wrapper runs a host command at the next run',
    program: true,
    attack: (m) => `-gdb-set --all exec-wrapper sh -c 'touch ${m}'`,
    after: () => ['run'],
    effect: 'marker',
  },
  { name: '"thread apply all!CMD": "all" glued to "!"', program: true, before: ['break add', 'run'], attack: (m) => `thread apply all!touch ${m}`, effect: 'marker' },
  { name: '"frame apply all|p 1|CMD": "all" glued to "|"', program: true, before: ['break add', 'run'], attack: (m) => `frame apply all|p 1|touch ${m}`, effect: 'marker' },
  { name: '"frame apply lev 0 shell": a prefix of "level"', program: true, before: ['break add', 'run'], attack: (m) => `frame apply lev 0 shell touch ${m}`, effect: 'marker' },
  {
    name: '"faas -past-main on shell": a boolean option value read as the command',
    program: true,
    before: ['break add', 'run'],
    attack: (m) => `faas -past-main on shell touch ${m}`,
    effect: 'marker',
  },
  {
    name: 'MI "\\400" is NUL to gdb: "file /bin/sh\\400/../../ROOT/x" loads /bin/sh, then "run -c ..." runs a host command',
    attack: () => `-interpreter-exec console "file /bin/sh\\400/../../${rootRel}/x"`,
    after: (m) => [`run -c 'touch ${m}'`],
    effect: 'marker',
  },
  {
    name: 'MI "\\400" is NUL to gdb: -inferior-tty-set points the program\'s output at a file outside the root',
    program: true,
    attack: (_m, v) => `-inferior-tty-set "${v}\\400/${up(v)}${rootRel}/x"`,
    after: () => ['run'],
    effect: 'victim',
  },
];

describe('gdb, default flags, a `gdb` key: spellings the classifier misreads (found by the attack)', () => {
  it.each(GDB_ATTACKS.map((a) => [a.name, a] as const))('%s: refused, and nothing happens on the host', async (_name, a) => {
    const r = await runGdbAttack(closed, closed.keys.gdb!.key, host, a);
    expectNoEffect(a, r);
    expect(refused(r.answer), `${a.name}: ${JSON.stringify(r.answer).slice(0, 400)}`).toBe(true);
  });

  it('the same through a 2026-07-28 request ("thread apply all!")', async () => {
    const a = GDB_ATTACKS[1]!;
    const key = closed.keys.gdb!.key;
    const r = await runGdbAttack(closed, key, host, a, (id, command) => modernCall(closed, key, 'call', { id, command }));
    expectNoEffect(a, r);
    expect(refused(r.answer), JSON.stringify(r.answer).slice(0, 400)).toBe(true);
  });
});

describe('gdb, --allow-gdb-shell --allow-attach, a `gdb` key (no gdb:shell): the same spellings (found by the attack)', () => {
  it.each(GDB_ATTACKS.map((a) => [a.name, a] as const))('%s: -32003 naming gdb:shell, and nothing happens on the host', async (_name, a) => {
    const r = await runGdbAttack(open, open.keys.gdb!.key, host, a);
    expectNoEffect(a, r);
    expect(r.answer.error?.code, `${a.name}: ${JSON.stringify(r.answer).slice(0, 400)}`).toBe(-32003);
    expect(r.answer.error?.message).toContain('gdb:shell');
  });
});

describe('gdb, a `gdb` key without gdb:attach: another process read or attached (found by the attack)', () => {
  it('"info proc cmdline PID\\400" through -interpreter-exec: gdb reads another process; the classifier sees no pid', async () => {
    const secret = 'victim-secret-argument-17b-nul';
    const v = victim(secret);
    for (const s of [closed, open]) {
      const key = s.keys.gdb!.key;
      const id = await gdbSession(s, key);
      const answer = await plainCall(s, key, 'call', { id, command: `-interpreter-exec console "info proc cmdline ${v.pid}\\400"` });
      await plainCall(s, key, 'close', { id });
      expect(text(answer), "another process's command line was read").not.toContain(secret);
      expect(refused(answer), JSON.stringify(answer).slice(0, 300)).toBe(true);
    }
  });

  it('"attach 0NNN" where NNN is the own program\'s pid: gdb reads NNN in octal and attaches to another process', async () => {
    for (const s of [closed, open]) {
      const key = s.keys.gdb!.key;
      const id = await gdbSession(s, key, 'basic');
      await gdbText(s, key, id, 'break main');
      let own = 0;
      // Run until the program gets a pid written with octal digits only: the next pid is steered to
      // one (ns_last_pid, as root), since pids climb slowly and a range like 18xxx has none for long.
      for (let i = 0; i < 40; i++) {
        writeFileSync('/proc/sys/kernel/ns_last_pid', String(nextOctalOnly(Number(readFileSync('/proc/sys/kernel/ns_last_pid', 'utf8'))) - 1));
        // A loaded machine may take a while to reach main: wait for the stop, not the default bound.
        await plainCall(s, key, 'call', { id, command: 'run', wait: 60 });
        own = Number(/process (\d+)/.exec(await gdbText(s, key, id, 'info inferiors'))?.[1] ?? 0);
        if (own > 0 && !/[89]/.test(String(own))) break;
        await gdbText(s, key, id, 'kill');
      }
      expect(/[89]/.test(String(own))).toBe(false);
      const other = parseInt(String(own), 8);
      const answer = await plainCall(s, key, 'call', { id, command: `attach 0${own}` });
      await plainCall(s, key, 'close', { id });
      expect(text(answer), `gdb tried to attach to process ${other}, which this session did not start`).not.toMatch(new RegExp(`process ${other}\\b`));
      expect(refused(answer), JSON.stringify(answer).slice(0, 300)).toBe(true);
    }
  });

  it('a core file written into the root with another pid makes that process "own": info proc and attach without gdb:attach', async () => {
    const secret = 'victim-secret-argument-17b-core';
    const v = victim(secret);
    for (const s of [closed, open]) {
      const key = s.keys.gdb!.key;
      const id = await gdbSession(s, key, 'basic');
      const core = `own-${s === closed ? 'c' : 'o'}.core`;
      const forged = `forged-${s === closed ? 'c' : 'o'}.core`;
      await gdbText(s, key, id, 'break main');
      await gdbText(s, key, id, 'run');
      // A core of the own program, inside the root: allowed.
      expect(await gdbText(s, key, id, `gcore ${core}`)).toContain('Saved corefile');
      // Where the pid sits in it (the attacker can find it the same way with restore + find).
      const bytes = readFileSync(path.join(root, core));
      const offsets = pidOffsets(bytes);
      // Rewrite the pid with gdb alone: the file into the program's memory, the pid patched, written back.
      const addr = /0x[0-9a-f]+/.exec(await gdbText(s, key, id, `print (char *) malloc(${bytes.length})`))![0];
      await gdbText(s, key, id, `restore ${core} binary ${addr}`);
      for (const off of offsets) await gdbText(s, key, id, `set var *(int *) (${addr} + ${off}) = ${v.pid}`);
      await gdbText(s, key, id, `dump binary memory ${forged} ${addr} ${addr}+${bytes.length}`);
      // Loading it tells debugkit (=thread-group-started) that process v.pid is the session's.
      await gdbText(s, key, id, `core-file ${forged}`);
      await gdbText(s, key, id, 'core-file');
      const answer = await plainCall(s, key, 'call', { id, command: `info proc cmdline ${v.pid}` });
      await plainCall(s, key, 'close', { id });
      expect(text(answer), "another process's command line was read").not.toContain(secret);
      expect(refused(answer), JSON.stringify(answer).slice(0, 300)).toBe(true);
    }
  });
});

describe('gdb, default flags, a `gdb` key: any process killed (found by the attack)', () => {
  it('a forged core names another process, and "detach" makes debugkit SIGKILL it as "started by this session"', async () => {
    const v = victim('victim-killed-by-detach-17b');
    const alive = () => {
      try {
        process.kill(v.pid!, 0);
        return v.exitCode === null && v.signalCode === null;
      } catch {
        return false;
      }
    };
    const s = closed;
    const key = s.keys.gdb!.key;
    const id = await gdbSession(s, key, 'basic');
    await gdbText(s, key, id, 'break main');
    await gdbText(s, key, id, 'run');
    await gdbText(s, key, id, 'gcore own-kill.core');
    const bytes = readFileSync(path.join(root, 'own-kill.core'));
    const addr = /0x[0-9a-f]+/.exec(await gdbText(s, key, id, `print (char *) malloc(${bytes.length})`))![0];
    await gdbText(s, key, id, `restore own-kill.core binary ${addr}`);
    for (const off of pidOffsets(bytes)) await gdbText(s, key, id, `set var *(int *) (${addr} + ${off}) = ${v.pid}`);
    await gdbText(s, key, id, `dump binary memory forged-kill.core ${addr} ${addr}+${bytes.length}`);
    await gdbText(s, key, id, 'core-file forged-kill.core');
    const detached = await gdbText(s, key, id, 'detach');
    await plainCall(s, key, 'close', { id });
    await sleep(300); // a pause, not a wait: time for a kill that must not come
    expect(detached, 'debugkit took another process for its own').not.toMatch(new RegExp(`process ${v.pid} was started by this session`));
    expect(alive(), `process ${v.pid}, which the session never started, was killed`).toBe(true);
  });
});

/** Offsets of pr_pid in the NT_PRSTATUS and NT_PRPSINFO notes of an x86-64 ELF core. */
function pidOffsets(core: Buffer): number[] {
  const phoff = Number(core.readBigUInt64LE(0x20));
  const phnum = core.readUInt16LE(0x38);
  const out: number[] = [];
  for (let i = 0; i < phnum; i++) {
    const ph = phoff + i * 56;
    if (core.readUInt32LE(ph) !== 4) continue;
    const offset = Number(core.readBigUInt64LE(ph + 8));
    const size = Number(core.readBigUInt64LE(ph + 32));
    for (let j = offset; j < offset + size;) {
      const namesz = core.readUInt32LE(j);
      const descsz = core.readUInt32LE(j + 4);
      const type = core.readUInt32LE(j + 8);
      const desc = j + 12 + ((namesz + 3) & ~3);
      if (type === 1) out.push(desc + 32); // NT_PRSTATUS: pr_pid
      if (type === 3) out.push(desc + 24); // NT_PRPSINFO: pr_pid
      j = desc + ((descsz + 3) & ~3);
    }
  }
  return out;
}

describe('gdb, default flags, a `gdb` key: host files read without leaving the debugger (found by the attack)', () => {
  it('"complete file DIR/" lists a host directory outside the root', async () => {
    writeFileSync(path.join(host, 'listed-secret-name.txt'), 'x');
    const key = closed.keys.gdb!.key;
    const id = await gdbSession(closed, key);
    const cli = await gdbText(closed, key, id, `complete file ${host}/`);
    const mi = await gdbText(closed, key, id, `-complete "file ${host}/"`);
    await plainCall(closed, key, 'close', { id });
    expect(cli, 'a directory outside the root was listed').not.toContain('listed-secret-name');
    expect(mi, 'a directory outside the root was listed').not.toContain('listed-secret-name');
  });
});

// ---------------------------------------------------------------------------------------------
// The server's secrets (found by the attack).
// ---------------------------------------------------------------------------------------------

describe("the server's secrets, a `gdb` key with default flags (found by the attack)", () => {
  it('PG* variables (PGPASSWORD) reach every child: a gdb key reads the store password and makes itself a "*" key', async () => {
    let pgs: RunningPostgres | undefined;
    let node: Node | undefined;
    const data = tempDir('debugkit-attack17b-pgdata-');
    try {
      pgs = await startPostgres();
      // The operator keeps the password out of the URL, in libpq's usual variable.
      const storeUrl = `postgres://${pgs.user}@127.0.0.1:${pgs.port}/postgres`;
      const env = { PGPASSWORD: pgs.password };
      const made = await runCli(['keys', 'create', '--store', storeUrl, '--name', 'gdb-only', '--scopes', 'gdb', '--json'], env);
      expect(made.code, made.stderr).toBe(0);
      const gdbKey = JSON.parse(made.stdout).key as string;
      node = await startNode(['--store', storeUrl, '--data-dir', data, '--root', root], env);
      const s: KeyedServer = { node, data: { dir: data, cleanup: async () => rmSync(data, { recursive: true, force: true }) }, store: [], keys: {} };
      const id = await gdbSession(s, gdbKey);
      const shown = await gdbText(s, gdbKey, id, 'show environment PGPASSWORD');
      await plainCall(s, gdbKey, 'close', { id });
      const leaked = /PGPASSWORD = ([^\s\\"]+)/.exec(shown)?.[1];
      if (leaked) {
        // What the leak is worth: a key of every scope, made by the gdb key holder.
        const client = new pg.Client({ connectionString: `postgres://${pgs.user}:${encodeURIComponent(leaked)}@127.0.0.1:${pgs.port}/postgres` });
        await client.connect();
        const secret = newKeySecret();
        await client.query('INSERT INTO debugkit_keys (id, name, prefix, hash, scopes, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
          'k_forged17b',
          'forged',
          secret.slice(0, 10),
          hashKey(secret),
          JSON.stringify(['*']),
          new Date().toISOString(),
        ]);
        await client.end();
        const forged = await rpc(node.url, secret, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'debugger_license_info', arguments: {} } });
        expect(JSON.stringify(forged.body), 'a forged "*" key works').toContain('"*"');
      }
      expect(leaked, 'a gdb key read the store password').toBeUndefined();
    } finally {
      await node?.stop();
      await pgs?.stop();
      rmSync(data, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('the data directory inside --root, the defaults run from $HOME (found by the attack)', () => {
  it("`debugkit serve` in $HOME (--root $HOME, control.db under it) is refused: a gdb key could read every key's audit there", async () => {
    // Nothing but defaults: the operator runs `debugkit serve` in their home directory (--root
    // defaults to the cwd, the data directory to ~/.local/share/debugkit). Nothing warns that the
    // control database, every key's audit, lies inside the workspace every key may read.
    const home = tempDir('debugkit-attack17b-home-');
    compileC(home, 'basic');
    const env = { HOME: home, XDG_DATA_HOME: '', XDG_CACHE_HOME: '' };
    const mk = async (name: string) => JSON.parse((await runCli(['keys', 'create', '--name', name, '--scopes', 'gdb', '--json'], env)).stdout).key as string;
    const [a, b] = [await mk('alice'), await mk('bob')];
    // Refused at start, naming the directory and what to do (before this attack: served, and a gdb
    // key read another key's audited arguments out of control.db with restore and find).
    let started: Node | undefined;
    try {
      const failure = await startNode(['--root', home], env).then(
        (n) => ((started = n), ''),
        (err: Error) => err.message,
      );
      expect(failure).toMatch(/\.local\/share\/debugkit \(debugkit's API keys and audit\) is inside --root .*give --data-dir \(or --store\) outside the root/);
      void [a, b];
    } finally {
      await started?.stop();
      rmSync(home, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Owners: another key's activity (found by the attack).
// ---------------------------------------------------------------------------------------------

describe('the audit, a `debugger:read` key (found by the attack)', () => {
  it("the entries a key reads carry the chain-wide seq: the gaps count every other key's calls", async () => {
    const s = closed;
    const reader = s.keys.debuggerRead!.key;
    const seqOf = async () => {
      const a = await plainCall(s, reader, 'debugger_get_comprehensive_audit', {});
      const entries = a.result.structuredContent.entries as Array<{ seq?: number }>;
      return entries.at(-1)?.seq;
    };
    // The entries carry no chain position (seq) nor hashes: the gaps would count another key's calls.
    const answer = await plainCall(s, reader, 'debugger_get_comprehensive_audit', {});
    const entries = answer.result.structuredContent.entries as Array<Record<string, unknown>>;
    expect(entries.length).toBeGreaterThan(0);
    for (const e of entries) expect(Object.keys(e)).not.toEqual(expect.arrayContaining(['seq']));
    for (const e of entries) expect(e.prev_hash ?? e.hash).toBeUndefined();
    expect(await seqOf()).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------
// Held (regression).
// ---------------------------------------------------------------------------------------------

describe('held: what this attack tried that stayed shut (regression)', () => {
  it('glued and prefixed spellings the classifier reads right stay refused for a gdb key, and nothing runs', async () => {
    const key = closed.keys.gdb!.key;
    const id = await gdbSession(closed, key, 'basic');
    await gdbText(closed, key, id, 'break add');
    await gdbText(closed, key, id, 'run');
    const marker = path.join(host, 'marker-held-17b');
    for (const command of [
      `faas!touch ${marker}`,
      `taas!touch ${marker}`,
      `tfaas|p 1|touch ${marker}`,
      `with print pretty --!touch ${marker}`,
      `thread apply al shell touch ${marker}`,
      `frame apply 1 -past-main 1 !touch ${marker}`,
      `-gdb-set --language c exec-wrapper sh -c 'touch ${marker}'`,
      `-interpreter-exec --all console "shell touch ${marker}"`,
      `-break-commands --all 1 "shell touch ${marker}"`,
      `-file-exec-and-symbols --all /bin/sh`,
      '-list-thread-groups --all --available',
      `-interpreter-exec console "\\163\\150\\145\\154\\154 touch ${marker}"`,
      'attach 1',
      'info proc environ 1',
      '-target-attach 0x1',
    ]) {
      const answer = await plainCall(closed, key, 'call', { id, command });
      expect(refused(answer), `${command}: ${JSON.stringify(answer).slice(0, 300)}`).toBe(true);
    }
    await plainCall(closed, key, 'close', { id });
    expect(existsSync(marker)).toBe(false);
  });

  it("spellings gdb refuses by itself run nothing (set X'...', set logging file/x, thread apply 1!...)", async () => {
    const key = closed.keys.gdb!.key;
    const id = await gdbSession(closed, key, 'basic');
    await gdbText(closed, key, id, 'break add');
    await gdbText(closed, key, id, 'run');
    const marker = path.join(host, 'marker-gdb-refuses-17b');
    for (const command of [
      `set exec-wrapper'sh' -c 'touch ${marker}'`,
      `set logging file${marker}`,
      `thread apply 1!touch ${marker}`,
      `frame apply 1!touch ${marker}`,
      `thread apply all -q!touch ${marker}`,
    ]) {
      const answer = await plainCall(closed, key, 'call', { id, command });
      expect(answer.result?.isError || answer.error, command).toBeTruthy();
    }
    await gdbText(closed, key, id, 'run');
    await plainCall(closed, key, 'close', { id });
    expect(existsSync(marker)).toBe(false);
  });

  it('a python auto-load script written beside a program in the root is declined (auto-load safe-path)', async () => {
    const marker = path.join(host, 'marker-autoload-17b');
    writeFileSync(path.join(root, 'basic-gdb.py'), `import os\nos.system("touch ${marker}")\n`);
    try {
      const key = closed.keys.gdb!.key;
      const id = await gdbSession(closed, key);
      const loaded = await gdbText(closed, key, id, 'file basic');
      await plainCall(closed, key, 'close', { id });
      // gdb loads a private copy of the program (issue 18, attack 18u P10): a script beside the workspace file is not even
      // looked for; one beside the copy would be declined by the safe-path.
      expect(loaded).toMatch(/declined|Reading symbols from \/tmp\/debugkit-run-[^/]+\/debugkit-prog-/);
      expect(loaded).not.toMatch(/basic-gdb\.py/);
      expect(existsSync(marker)).toBe(false);
    } finally {
      rmSync(path.join(root, 'basic-gdb.py'), { force: true });
    }
  });

  it('the other toolsets keep their paths inside the root for read keys (find_similar_bugs search_path, keploy_list_mocks path)', async () => {
    const bugs = await plainCall(closed, closed.keys.debuggerRead!.key, 'debugger_find_similar_bugs', { search_path: host });
    expect(text(bugs)).toMatch(/outside|root/i);
    expect(text(bugs)).not.toContain('considered');
    const mocks = await plainCall(closed, closed.keys.mocksRead!.key, 'keploy_list_mocks', { path: host });
    expect(text(mocks)).toMatch(/outside|root/i);
  });

  it("gdb call on another key's session: the scope check does not tell it exists (not found, not -32003)", async () => {
    const a = closed.keys.gdbFull!.key;
    const id = await gdbSession(closed, a);
    const theirs = await plainCall(closed, closed.keys.gdb!.key, 'call', { id, command: 'shell id' });
    const none = await plainCall(closed, closed.keys.gdb!.key, 'call', { id: '00000000-0000-4000-8000-000000000000', command: 'shell id' });
    const shape = (answer: Answer, sid: string) => JSON.stringify({ error: answer.error, result: answer.result }).split(sid).join('ID');
    expect(shape(theirs, id)).toBe(shape(none, '00000000-0000-4000-8000-000000000000'));
    await plainCall(closed, a, 'close', { id });
  });
});

/** The smallest pid above `after` written with the digits 0-7 only (below pid_max), or `after` + 1 past it. */
function nextOctalOnly(after: number): number {
  const max = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
  for (let n = after + 1; n < max; n++) if (!/[89]/.test(String(n))) return n;
  return after + 1;
}
