import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config.js';
import { CheckedProgram } from '../src/core/paths.js';
import { readTail } from '../src/core/ring.js';
import { createLogger } from '../src/mcp/log.js';
import { startBundleApiServer, type BundleApiServer } from '../src/toolsets/bundles/apiserver/server.js';
import { grepFilesWith, type GrepEngine } from '../src/toolsets/bundles/files/grep.js';
import { listFiles } from '../src/toolsets/bundles/files/list.js';
import { readFile } from '../src/toolsets/bundles/files/read.js';
import { DebugSession } from '../src/toolsets/debugger/session.js';
import { GdbSession, type CallOptions } from '../src/toolsets/gdb/session.js';
import { loadProgram } from '../src/toolsets/gdb/tools/open.js';
import { PythonService } from '../src/toolsets/python/service.js';
import { connectStdio } from './helpers/client.js';
import { race, type Outcome } from './helpers/flipper.js';
import { waitFor } from './helpers/procs.js';
import { compileC, tempDir } from './helpers/programs.js';

const EXEC_WRAPPER = path.resolve(import.meta.dirname, '../src/toolsets/gdb/exec-wrapper.sh');

/**
 * Issue 18, "Open what was checked": a writer inside the root swaps a file, or its parent
 * directory, for a link out of the root (renameat2 RENAME_EXCHANGE, see test/programs/flipper.c
 * and race() in test/helpers/flipper.ts) while a tool checks the path and reads it. What the tool
 * answers must come from inside the root every time: 1,000 tries each, 0 leaks. Each test also
 * sees both sides (answers from inside, refusals), so the race really ran.
 */
const TRIES = 1000;
/** A launch starts gdb and runs to main (~0.5 s): fewer tries, the same mechanism as gdb's 1,000 loads. */
const DEBUGGER_TRIES = 40;
/** A python session starts debugpy's adapter, launcher and program (~1 s): as few. */
const PYTHON_TRIES = 40;
const SECRET = 'OUTSIDE-SECRET-e1f0';
const INSIDE = 'inside-text-7c2a';

let base: string;
let root: string;

/**
 *   base/outside/secret.log           SECRET
 *   base/outside/dir/app.log          SECRET (the same name as inside)
 *   base/outside/dir/secret-name.log  SECRET
 *   base/bundle/                      the root
 *     app.log                         INSIDE    <-> app.log.swap -> outside/secret.log
 *     d/app.log                       INSIDE    d <-> d.swap -> outside/dir
 *     cluster-resources/pods/ns.json            pods "pod" and "pod2", container "c"
 *     cluster-resources/pods/logs/ns/pod/c.log   INSIDE <-> c.log.swap -> outside/secret.log
 *     cluster-resources/pods/logs/ns/pod2/c.log  INSIDE; pod2 <-> pod2.swap -> outside/dir2 (c.log: SECRET)
 * Every directory of the bundle is writable by anyone (mode 0777).
 */
beforeAll(() => {
  base = tempDir('debugkit-races-');
  root = path.join(base, 'bundle');
  const put = (file: string, text: string) => {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  };
  put(path.join(base, 'outside/secret.log'), `${SECRET} root:x:0:0\n`);
  put(path.join(base, 'outside/dir/app.log'), `${SECRET} in a directory\n`);
  put(path.join(base, 'outside/dir/secret-name.log'), `${SECRET}\n`);
  put(path.join(base, 'outside/dir2/c.log'), `${SECRET} pod log\n`);
  put(path.join(root, 'app.log'), `${INSIDE}\n`);
  symlinkSync(path.join(base, 'outside/secret.log'), path.join(root, 'app.log.swap'));
  put(path.join(root, 'd/app.log'), `${INSIDE}\n`);
  symlinkSync(path.join(base, 'outside/dir'), path.join(root, 'd.swap'));
  const pod = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'ns' }, spec: { containers: [{ name: 'c', image: 'x' }] } });
  put(path.join(root, 'cluster-resources/pods/ns.json'), JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items: [pod('pod'), pod('pod2')] }));
  const logs = path.join(root, 'cluster-resources/pods/logs/ns');
  put(path.join(logs, 'pod/c.log'), `${INSIDE}\n`);
  symlinkSync(path.join(base, 'outside/secret.log'), path.join(logs, 'pod/c.log.swap'));
  put(path.join(logs, 'pod2/c.log'), `${INSIDE}\n`);
  symlinkSync(path.join(base, 'outside/dir2'), path.join(logs, 'pod2.swap'));
  // The writer need not be debugkit's user: the bundle's directories are writable by anyone.
  // (grep_files' ripgrep engine lets rg walk a tree itself only when no other user can write in it.)
  for (let level = [root]; level.length > 0;) {
    for (const dir of level) chmodSync(dir, 0o777);
    level = level.flatMap((dir) =>
      readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => path.join(dir, e.name)),
    );
  }
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** An answer's text: a leak when it holds the secret, inside when it holds the inside text. */
function judge(text: string): Outcome {
  if (text.includes(SECRET) || text.includes('secret-name')) return 'leak';
  return text.includes(INSIDE) ? 'inside' : 'refused';
}

async function judged(answer: () => Promise<string>): Promise<Outcome> {
  try {
    return judge(await answer());
  } catch (err) {
    // A refusal may name the path, never what is behind it.
    return judge((err as Error).message) === 'leak' ? 'leak' : 'refused';
  }
}

function expectNoLeak(counts: Record<Outcome, number>): void {
  const seen = JSON.stringify(counts);
  expect(counts.leak, seen).toBe(0);
  expect(counts.inside, seen).toBeGreaterThan(0);
  expect(counts.refused, seen).toBeGreaterThan(0);
}

/**
 * A thousand grep_files searches, each starting rg (ripgrep) in a private copy's tree: ~40 s on an
 * idle 2-CPU host, past the default 60 s under the whole suite's load. A guard against a hang, not a bound on speed.
 */
const RACE_TIMEOUT_MS = 240_000;

describe('bundle files: a file or its directory swapped for a link out of the root, 1,000 tries, 0 leaks', () => {
  it('read_file, the file swapped', async () => {
    const counts = await race(path.join(root, 'app.log'), path.join(root, 'app.log.swap'), TRIES, () => judged(async () => (await readFile(root, '/app.log')).text));
    expectNoLeak(counts);
  });

  it('read_file, its parent directory swapped', async () => {
    const counts = await race(path.join(root, 'd'), path.join(root, 'd.swap'), TRIES, () => judged(async () => (await readFile(root, '/d/app.log')).text));
    expectNoLeak(counts);
  });

  it('list_files, the directory listed swapped (names and sizes)', async () => {
    const counts = await race(path.join(root, 'd'), path.join(root, 'd.swap'), TRIES, () =>
      judged(async () => {
        const r = await listFiles(root, '/d');
        // The outside directory's own file name, or the size of its app.log (larger than the inside one), is a leak.
        const app = r.entries.find((e) => e.name === 'app.log');
        if (r.text.includes('secret-name') || (app && app.size !== INSIDE.length + 1)) return SECRET;
        return app ? INSIDE : r.text;
      }),
    );
    expectNoLeak(counts);
  });

  it('list_files, a file in the directory swapped (its size and kind)', async () => {
    const counts = await race(path.join(root, 'app.log'), path.join(root, 'app.log.swap'), TRIES, () =>
      judged(async () => {
        const app = (await listFiles(root, '/')).entries.find((e) => e.name === 'app.log');
        if (!app) return 'not listed';
        return app.size === INSIDE.length + 1 ? INSIDE : SECRET;
      }),
    );
    expectNoLeak(counts);
  });

  for (const engine of ['builtin', 'ripgrep'] as GrepEngine[]) {
    /** Answers the ripgrep engine gave (it may hand a search to the built-in one when its listing and rg's disagree). */
    let byRipgrep = 0;
    /** Searches at once: each rg search waits ~20 ms on starting rg. */
    const CONCURRENCY = engine === 'ripgrep' ? 4 : 1;
    const grep = async (p: string) => {
      const { result, engine: used } = await grepFilesWith(root, { pattern: 'e1f0|7c2a', path: p }, engine === 'ripgrep' ? 'auto' : 'builtin');
      if (used === 'ripgrep') byRipgrep++;
      return result.matches.length > 0 ? result.text : 'no match';
    };
    it(
      `grep_files (${engine}), a file swapped: searched by name and in its directory`,
      async () => {
        byRipgrep = 0;
        const counts = await race(path.join(root, 'app.log'), path.join(root, 'app.log.swap'), TRIES, async (i) => judged(() => grep(i % 2 ? '/app.log' : '/')), { concurrency: CONCURRENCY });
        expectNoLeak(counts);
        if (engine === 'ripgrep') expect(byRipgrep).toBeGreaterThan(TRIES / 10);
      },
      RACE_TIMEOUT_MS,
    );

    it(
      `grep_files (${engine}), the directory swapped: searched in it and in its parent`,
      async () => {
        byRipgrep = 0;
        const counts = await race(path.join(root, 'd'), path.join(root, 'd.swap'), TRIES, async (i) => judged(() => grep(i % 2 ? '/d' : '/')), { concurrency: CONCURRENCY });
        expectNoLeak(counts);
        if (engine === 'ripgrep') expect(byRipgrep).toBeGreaterThan(TRIES / 10);
      },
      RACE_TIMEOUT_MS,
    );
  }
});

describe("pod logs (the bundle API server): the log file or the pod's directory swapped, 1,000 tries, 0 leaks", () => {
  let server: BundleApiServer;
  beforeAll(async () => {
    server = await startBundleApiServer({ root });
  });
  afterAll(async () => server?.close());

  const get = (p: string) =>
    new Promise<string>((resolve, reject) => {
      http
        .get(`${server.url}${p}`, (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve(body));
        })
        .on('error', reject);
    });

  const logs = () => path.join(root, 'cluster-resources/pods/logs/ns');
  it('the log file swapped, whole and tailed', async () => {
    const counts = await race(path.join(logs(), 'pod/c.log'), path.join(logs(), 'pod/c.log.swap'), TRIES, (i) =>
      judged(() => get(`/api/v1/namespaces/ns/pods/pod/log?container=c${i % 2 ? '&tailLines=5' : ''}`)),
    );
    expectNoLeak(counts);
  });

  it("the pod's log directory swapped", async () => {
    const counts = await race(path.join(logs(), 'pod2'), path.join(logs(), 'pod2.swap'), TRIES, (i) =>
      judged(() => get(`/api/v1/namespaces/ns/pods/pod2/log?container=c${i % 2 ? '&tailLines=5' : ''}`)),
    );
    expectNoLeak(counts);
  });
});

describe('gdb: the program swapped for a link out of the root while it is checked and loaded, 1,000 tries, 0 leaks', () => {
  let session: GdbSession;
  let groot: string;
  beforeAll(async () => {
    groot = path.join(base, 'gdbroot');
    programsAndSwaps(groot, path.join(base, 'outside-bin'));
    // Writable by anyone: a user other than debugkit's could swap the names (in a root only
    // debugkit's user writes, gdb is handed the file itself: racing gains that writer nothing).
    for (const dir of [groot, path.join(groot, 'bin')]) chmodSync(dir, 0o777);
    session = await GdbSession.start({ gdbPath: 'gdb', cwd: groot, execWrapper: EXEC_WRAPPER, replyTimeoutMs: 60_000 });
  });
  afterAll(async () => session?.dispose('test over'));

  /** Loads the program as `open` does and asks gdb where its main is. */
  const load = async (program: string): Promise<Outcome> => {
    let loaded: CheckedProgram;
    try {
      loaded = await CheckedProgram.open(groot, program);
      await loadProgram(session, loaded, []);
    } catch (err) {
      return judgeProgram((err as Error).message) === 'leak' ? 'leak' : 'refused';
    }
    try {
      return judgeProgram((await session.call('info line main', { waitMs: 0, trusted: true })).output ?? '');
    } catch (err) {
      return judgeProgram((err as Error).message) === 'leak' ? 'leak' : 'refused';
    } finally {
      loaded.close();
    }
  };

  it('the program file swapped', async () => {
    const counts = await race(path.join(groot, 'basic'), path.join(groot, 'basic.swap'), TRIES, () => load('basic'), { holdUs: 2000 });
    expectNoLeak(counts);
  });

  it('its directory swapped', async () => {
    const counts = await race(path.join(groot, 'bin'), path.join(groot, 'bin.swap'), TRIES, () => load('bin/basic'), { holdUs: 2000 });
    expectNoLeak(counts);
  });
});

/** gdb's `info line main`: in basic.c (inside) or spin.c (the program outside). */
function judgeProgram(text: string): Outcome {
  if (text.includes('spin.c')) return 'leak';
  return text.includes('basic.c') ? 'inside' : 'refused';
}

/**
 * `dir` with programs of basic.c at basic and bin/basic, and beside them what a writer swaps in:
 * basic.swap and bin.swap, links to `outsideDir`, which holds spin.c's program under the same name.
 */
function programsAndSwaps(dir: string, outsideDir: string): void {
  mkdirSync(path.join(dir, 'bin'), { recursive: true });
  mkdirSync(outsideDir, { recursive: true });
  compileC(dir, 'basic');
  compileC(path.join(dir, 'bin'), 'basic');
  compileC(outsideDir, 'spin');
  renameSync(path.join(outsideDir, 'spin'), path.join(outsideDir, 'basic'));
  symlinkSync(path.join(outsideDir, 'basic'), path.join(dir, 'basic.swap'));
  symlinkSync(outsideDir, path.join(dir, 'bin.swap'));
}

/** The i-th of three commands that load `program` through `call`. */
const loadCommand = (i: number, program: string) => [`file ${program}`, `-file-exec-and-symbols ${program}`, `symbol-file -readnow ${program}`][i % 3]!;

/** Sends `command` (one that loads a program) as a client's, then asks gdb where its main is. */
async function loadedBy(session: GdbSession, command: string, options: CallOptions = { waitMs: 0 }): Promise<Outcome> {
  try {
    await session.call(command, options);
    return judgeProgram((await session.call('info line main', { waitMs: 0, trusted: true })).output ?? '');
  } catch (err) {
    return judgeProgram((err as Error).message) === 'leak' ? 'leak' : 'refused';
  }
}

describe('gdb commands naming files: a file or its directory swapped for a link out of the root while gdb is sent the command, 1,000 tries, 0 leaks', () => {
  let session: GdbSession;
  let croot: string;
  let target: string;
  const ORIGINAL = 'ORIGINAL-outside-0b7d';
  beforeAll(async () => {
    // Every directory of this root is writable by anyone: a name in it can be swapped by another
    // user, so gdb may not be sent it to open by name.
    croot = path.join(base, 'gdbcmds');
    const outsideDir = path.join(base, 'outside-cmds');
    programsAndSwaps(croot, outsideDir);
    target = path.join(outsideDir, 'target.bin');
    writeFileSync(target, ORIGINAL);
    writeFileSync(path.join(croot, 'out.bin'), '');
    symlinkSync(target, path.join(croot, 'out.bin.swap'));
    for (const dir of [croot, path.join(croot, 'bin')]) chmodSync(dir, 0o777);
    session = await GdbSession.start({
      gdbPath: 'gdb',
      cwd: croot,
      execWrapper: EXEC_WRAPPER,
      replyTimeoutMs: 60_000,
      policy: { root: croot, allowShell: false, allowAttach: false },
    });
  });
  afterAll(async () => session?.dispose('test over'));

  it('file, -file-exec-and-symbols, symbol-file: the file swapped', async () => {
    const counts = await race(path.join(croot, 'basic'), path.join(croot, 'basic.swap'), TRIES, (i) => loadedBy(session, loadCommand(i, 'basic')), { holdUs: 2000 });
    expectNoLeak(counts);
  });

  it('file, -file-exec-and-symbols, symbol-file: its directory swapped', async () => {
    const counts = await race(path.join(croot, 'bin'), path.join(croot, 'bin.swap'), TRIES, (i) => loadedBy(session, loadCommand(i, 'bin/basic')), { holdUs: 2000 });
    expectNoLeak(counts);
  });

  it('with --allow-gdb-shell, for a key without gdb:shell: the file swapped between the scope check and the sending', async () => {
    const open = await GdbSession.start({
      gdbPath: 'gdb',
      cwd: croot,
      execWrapper: EXEC_WRAPPER,
      replyTimeoutMs: 60_000,
      policy: { root: croot, allowShell: true, allowAttach: false },
    });
    try {
      const counts = await race(
        path.join(croot, 'basic'),
        path.join(croot, 'basic.swap'),
        TRIES,
        async (i) => {
          // As the call tool does: the key's scopes are checked first (it holds none beyond gdb), then the command is sent.
          const command = loadCommand(i, 'basic');
          const scopes = open.capabilityScopes(command);
          return scopes.length > 0 ? 'refused' : loadedBy(open, command, { waitMs: 0, checkedScopes: scopes });
        },
        { holdUs: 2000 },
      );
      expectNoLeak(counts);
    } finally {
      await open.dispose('test over');
    }
  });

  it('dump: the file written swapped (every write is refused: the directory is open to other users)', async () => {
    const counts = await race(path.join(croot, 'out.bin'), path.join(croot, 'out.bin.swap'), TRIES, async (i) => {
      try {
        await session.call(`dump binary value out.bin ${i + 1}`, { waitMs: 0 });
      } catch {
        return 'refused';
      }
      if (readFileSync(target, 'utf8') === ORIGINAL) return 'inside';
      writeFileSync(target, ORIGINAL);
      return 'leak';
    });
    expect(counts).toEqual({ inside: 0, refused: TRIES, leak: 0 });
  });
});

describe('debugger_launch: the program swapped for a link out of the root while it is checked and launched, 0 leaks', () => {
  let droot: string;
  let insideProgram: Buffer;
  beforeAll(() => {
    droot = path.join(base, 'dbgroot');
    const outsideDir = path.join(base, 'outside-dbg');
    mkdirSync(droot, { recursive: true });
    mkdirSync(outsideDir, { recursive: true });
    insideProgram = readFileSync(compileC(droot, 'basic'));
    compileC(outsideDir, 'spin');
    renameSync(path.join(outsideDir, 'spin'), path.join(outsideDir, 'basic'));
    symlinkSync(path.join(outsideDir, 'basic'), path.join(droot, 'basic.swap'));
    chmodSync(droot, 0o777); // a user other than debugkit's could swap the name (else the file itself is launched)
  });

  it(`${DEBUGGER_TRIES} launches: what runs is always the checked file`, async () => {
    const counts = await race(
      path.join(droot, 'basic'),
      path.join(droot, 'basic.swap'),
      DEBUGGER_TRIES,
      async () => {
        let checked: CheckedProgram;
        try {
          checked = await CheckedProgram.open(droot, 'basic');
        } catch {
          return 'refused';
        }
        let session: DebugSession;
        try {
          session = await DebugSession.launch('race', checked, [], { gdbPath: 'gdb', root: droot, replyTimeoutMs: 30_000, key: 'test' }, 10_000);
        } catch (err) {
          checked.close();
          return judgeProgram((err as Error).message) === 'leak' ? 'leak' : 'refused';
        }
        try {
          // What the kernel executed (the launched program's own image): the inside program's bytes, or a leak.
          return readFileSync(`/proc/${session.pid}/exe`).equals(insideProgram) ? 'inside' : 'leak';
        } finally {
          await session.dispose();
        }
      },
      { holdUs: 20_000 },
    );
    expectNoLeak(counts);
  });
});

describe('python: the entry swapped for a link out of the root while it is checked and run, 0 leaks', () => {
  let proot: string;
  let service: PythonService;
  beforeAll(() => {
    proot = path.join(base, 'pyroot');
    const outsideDir = path.join(base, 'outside-py');
    mkdirSync(path.join(proot, 'pkg'), { recursive: true });
    mkdirSync(outsideDir, { recursive: true });
    const script = (text: string) => `print(${JSON.stringify(text)})\n`;
    writeFileSync(path.join(proot, 'app.py'), script(INSIDE));
    writeFileSync(path.join(proot, 'pkg/app.py'), script(INSIDE));
    writeFileSync(path.join(outsideDir, 'app.py'), script(SECRET));
    symlinkSync(path.join(outsideDir, 'app.py'), path.join(proot, 'app.py.swap'));
    symlinkSync(outsideDir, path.join(proot, 'pkg.swap'));
    for (const dir of [proot, path.join(proot, 'pkg')]) chmodSync(dir, 0o777);
    service = new PythonService(defaultConfig({ root: proot, maxSessions: 8, maxSessionsPerKey: 8, maxSessionsTotal: 8 }), createLogger('error'));
  });
  afterAll(async () => service?.registry.closeAll('test over'));

  /** Starts a session on `entry`, lets it run to its end and judges what it printed. */
  const run = async (entry: string): Promise<Outcome> => {
    let id: string;
    try {
      id = (await service.start('race', { entry })).sessionId;
    } catch (err) {
      return judge((err as Error).message) === 'leak' ? 'leak' : 'refused';
    }
    try {
      return await judged(() =>
        service.use('race', id, async (session) => {
          const end = await session.continue({ timeoutMs: 20_000 });
          const stdout = session.output ? readTail(session.output.stdout, 0, 4096).text : '';
          return `${stdout} ${end.completed ? '' : `(not completed: ${JSON.stringify(end.error)})`}`;
        }),
      );
    } finally {
      await service.end('race', id);
    }
  };

  it(`the entry file swapped, ${PYTHON_TRIES} sessions`, async () => {
    const counts = await race(path.join(proot, 'app.py'), path.join(proot, 'app.py.swap'), PYTHON_TRIES, () => run('app.py'), { holdUs: 20_000, concurrency: 2 });
    expectNoLeak(counts);
  });

  it(`its directory swapped, ${PYTHON_TRIES} sessions`, async () => {
    const counts = await race(path.join(proot, 'pkg'), path.join(proot, 'pkg.swap'), PYTHON_TRIES, () => run('pkg/app.py'), { holdUs: 20_000, concurrency: 2 });
    expectNoLeak(counts);
  });
});

describe('python runs the checked entry as python runs a script', () => {
  it('breakpoints in the entry and in a module beside it, __main__, __file__, sys.argv[0], sys.path[0] and tracebacks name the real files', async () => {
    const wroot = tempDir('debugkit-pyentry-');
    writeFileSync(
      path.join(wroot, 'main.py'),
      [
        'import json, os, sys',
        'import helper',
        '',
        'def main():',
        '    seen = [__name__, __file__, sys.argv[0], sys.argv[1:], sys.path[0], [k for k in os.environ if k.startswith("DEBUGKIT_ENTRY")]]',
        '    total = helper.twice(21)',
        '    print(json.dumps(seen), total)',
        '    helper.fail()',
        '',
        'main()',
        '',
      ].join('\n'),
    );
    writeFileSync(path.join(wroot, 'helper.py'), ['def twice(x):', '    y = x * 2', '    return y', '', 'def fail():', '    raise ValueError("from helper")', ''].join('\n'));
    const service = new PythonService(defaultConfig({ root: wroot }), createLogger('error'));
    try {
      const { sessionId: id } = await service.start('me', { entry: 'main.py', args: ['a1'] });
      const inHelper = await service.runTo('me', id, 'helper.py', { line: 3 }, { timeoutMs: 20_000 });
      expect(inHelper).toMatchObject({ hit: true, frameInfo: { file: path.join(wroot, 'helper.py'), line: 3 } });
      expect(inHelper.stack).toEqual([
        { index: 0, name: 'twice', file: 'helper.py', line: 3 },
        { index: 1, name: 'main', file: 'main.py', line: 6 },
        { index: 2, name: '<module>', file: 'main.py', line: 10 },
      ]);
      const inMain = await service.runTo('me', id, 'main.py', { line: 7 }, { timeoutMs: 20_000 });
      expect(inMain).toMatchObject({ hit: true, frameInfo: { file: path.join(wroot, 'main.py'), line: 7 } });
      expect(inMain.source).toContain('-> 7      print(json.dumps(seen), total)');
      const failed = await service.use('me', id, (session) => session.continue({ timeoutMs: 20_000 }));
      const main = path.join(wroot, 'main.py');
      const printed = await service.use('me', id, async (session) => readTail(session.output!.stdout, 0, 4096).text);
      // No DEBUGKIT_ENTRY* is left in the program's environment (its children never see them).
      expect(printed).toBe(`${JSON.stringify(['__main__', main, main, ['a1'], wroot, []]).replace(/,/g, ', ')} 42\n`);
      const frames = [
        [main, 10, '<module>', 'main()'],
        [main, 8, 'main', 'helper.fail()'],
        [path.join(wroot, 'helper.py'), 6, 'fail', 'raise ValueError("from helper")'],
      ];
      const traceback = frames.flatMap(([file, line, fn, code]) => [`  File "${file}", line ${line}, in ${fn}`, `    ${code}`]);
      expect(failed.error?.traceback).toBe(['Traceback (most recent call last):', ...traceback, 'ValueError: from helper'].join('\n'));
      await service.end('me', id);
    } finally {
      await service.registry.closeAll('test over');
      rmSync(wroot, { recursive: true, force: true });
    }
  });
});

describe('the tools hand gdb the checked file', () => {
  it("gdb commands naming files: sent as written where only debugkit's user can write; where others can, file, symbol-file and core-file read a private copy of the checked file, writes are refused, and the copies go with gdb", async () => {
    const wroot = tempDir('debugkit-gdbfiles-');
    compileC(wroot, 'basic');
    const session = await GdbSession.start({ gdbPath: 'gdb', cwd: wroot, execWrapper: EXEC_WRAPPER, replyTimeoutMs: 60_000, policy: { root: wroot, allowShell: false, allowAttach: false } });
    const call = (command: string) => session.call(command, { waitMs: 20_000 });
    const files = async () => (await call('info files')).output;
    const at = (file: string) => path.join(wroot, file);
    try {
      // The root (mode 0700) and every directory above it: only debugkit's user (or root) can write there.
      // A program gdb reads is still a private copy: its debug links are judged on it (attack atk-p P10).
      await call('file basic');
      expect(await files()).toMatch(/`\/\S*debugkit-prog-[^/\s]+\/basic'/);
      await call('break main');
      expect((await call('run')).stopped).toMatchObject({ reason: 'breakpoint-hit' });
      await call('gcore basic.core');
      await call('dump binary value out.bin 0x41424344');
      expect(readFileSync(at('out.bin'), 'latin1')).toBe('DCBA');
      for (const command of ['set logging file log.txt', 'set logging enabled on', 'echo logged\\n', 'set logging enabled off']) await call(command);
      expect(readFileSync(at('log.txt'), 'utf8')).toContain('logged');
      await call('kill');
      await call('delete');

      // Now anyone may write in the root: a name there could be swapped between the check and gdb's open.
      chmodSync(wroot, 0o777);
      await call('file basic');
      const loaded = await files();
      const copy = /`(\/\S*debugkit-prog-[^/\s]+)\/basic'/.exec(loaded)?.[1];
      expect(copy, loaded).toBeDefined();
      expect(loaded).not.toContain(`\`${at('basic')}'`);
      expect((await call('run')).program_output?.stdout).toContain('total=3');
      await call('-file-exec-and-symbols basic');
      await call('symbol-file -readnow basic');
      expect((await call('info line main')).output).toContain('basic.c');
      await call('core-file basic.core');
      const core = /Local core dump file:\s*`(\/\S*debugkit-prog-[^/\s]+)\/basic\.core'/.exec(await files())?.[1];
      expect(core).toBeDefined();
      // The copy `file basic` made is gone once gdb's program and symbols are other copies.
      expect(existsSync(copy!)).toBe(false);
      for (const command of ['dump binary value out.bin 1', 'set logging enabled on', 'gcore', 'directory .', 'set logging file log2.txt', "file 'basic'"]) {
        await expect(call(command), command).rejects.toThrow(/can be written by users other than debugkit's.*--allow-gdb-shell/);
      }
      expect(readFileSync(at('out.bin'), 'latin1')).toBe('DCBA');
      await session.dispose('test over');
      expect(await waitFor(() => !existsSync(core!), 10_000, 20)).toBe(true);
    } finally {
      await session.dispose('test over');
      rmSync(wroot, { recursive: true, force: true });
    }
  });

  it("gdb open where others can write: gdb loads and runs a private copy under the program's name, starts in the checked cwd, and the copy goes with the session or the server", async () => {
    const wroot = tempDir('debugkit-open-');
    mkdirSync(path.join(wroot, 'work'));
    compileC(wroot, 'basic');
    chmodSync(wroot, 0o777);
    const client = await connectStdio({ root: wroot });
    try {
      const { id } = await client.ok('open', { program: 'basic', cwd: 'work' });
      const exe = /(\/\S*debugkit-prog-[^/\s]+)\/basic\b/.exec((await client.ok('call', { id, command: 'info inferiors' })).output)?.[1];
      expect(exe, "gdb's executable is the private copy").toBeDefined();
      expect(existsSync(path.join(exe!, 'basic'))).toBe(true);
      expect((await client.ok('call', { id, command: 'pwd' })).output).toContain(path.join(wroot, 'work'));
      const run = await client.ok('call', { id, command: 'run' });
      expect(run.program_output?.stdout ?? '').toContain('total=3');
      await client.ok('close', { id });
      expect(await waitFor(() => !existsSync(exe!), 10_000, 20)).toBe(true);
      // A copy still in use when the server is stopped goes with it, even when a second signal
      // (SIGTERM, then SIGHUP) makes it exit at once without closing its sessions.
      const second = await client.ok('open', { program: 'basic' });
      const copy = /(\/\S*debugkit-prog-[^/\s]+)\/basic\b/.exec((await client.ok('call', { id: second.id, command: 'info inferiors' })).output)?.[1];
      expect(copy && existsSync(copy)).toBe(true);
      process.kill(client.serverPid!, 'SIGTERM');
      process.kill(client.serverPid!, 'SIGHUP');
      expect(await waitFor(() => !existsSync(copy!), 10_000, 20)).toBe(true);
    } finally {
      await client.close();
      rmSync(wroot, { recursive: true, force: true });
    }
  });
});
