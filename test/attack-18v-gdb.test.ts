// Attack atk-r R2: every open copied the program and its debug files for gdb with their holes
// written out (one open of a 1000 MiB sparse program, 16 KB on disk, wrote 3 GB to /tmp) and
// nothing bounded the copies held at once. R3: an absolute .gnu_debugaltlink (dwz) name inside the
// root was checked by name and gdb opened that name itself later: swapped for a link out of the
// root in between, gdb read the outside file (11 of 40 opens, 9 of 25 debugger_launch).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  closeSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyDebugFiles, debugLinks } from '../src/core/elf-core.js';
import { CheckedProgram, copyBounds, copyReads, heldCopyBytes, runListing } from '../src/core/paths.js';
import { pollUntil } from '../src/core/wait.js';
import { connectHttp, connectStdio, startHttpServer, type HttpServer, type TestClient } from './helpers/client.js';
import { tempDir } from './helpers/programs.js';

let base: string;
let root: string;
let outside: string;
let closed: TestClient;

/** The bytes `dir` takes on disk (its files' allocated blocks), whatever their length. */
function onDisk(dir: string): number {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((sum, e) => sum + statSync(path.join(e.parentPath, e.name)).blocks * 512, 0);
}

/** The build-id of an ELF file, as bytes (readelf -n). */
function buildId(file: string): Buffer {
  const hex = /Build ID: ([0-9a-f]+)/.exec(execFileSync('readelf', ['-n', file], { encoding: 'utf8' }))![1];
  return Buffer.from(hex, 'hex');
}

beforeAll(async () => {
  base = tempDir('debugkit-18v-gdb-');
  root = path.join(base, 'root');
  outside = path.join(base, 'outside');
  for (const dir of [root, outside, path.join(root, 'big'), path.join(root, 'dz'), path.join(root, 'c')]) mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(root, 'p.c'), 'char *password = "hunter2";\nint main(void) { return 0; }\n');
  execFileSync('gcc', ['-g', '-O0', '-o', path.join(root, 'c', 'small'), path.join(root, 'p.c')]);
  // R2: a stripped program and its debug file, each 256 MiB long but a few KB on disk (sparse).
  const big = path.join(root, 'big', 'prog');
  execFileSync('gcc', ['-g', '-O0', '-o', big, path.join(root, 'p.c')]);
  execFileSync('objcopy', ['--only-keep-debug', big, `${big}.debug`]);
  execFileSync('strip', ['--strip-debug', '--strip-unneeded', big]);
  truncateSync(`${big}.debug`, 256 * 2 ** 20);
  // The debug link's CRC is of the whole (lengthened) debug file, as gdb checks it.
  execFileSync('objcopy', [`--add-gnu-debuglink=${big}.debug`, big]);
  truncateSync(big, 256 * 2 ** 20);
  // R3: a program naming its dwz file by an absolute path inside the root, with its build-id.
  const dz = path.join(root, 'dz', 'prog');
  execFileSync('gcc', ['-g', '-O0', '-Wl,--build-id', '-o', dz, path.join(root, 'p.c')]);
  execFileSync('objcopy', ['--only-keep-debug', dz, path.join(root, 'dz', 'alt.reg')]);
  writeFileSync(`${dz}.alt`, Buffer.concat([Buffer.from(`${path.join(root, 'dz', 'alt.dwz')}\0`, 'latin1'), buildId(dz)]));
  execFileSync('objcopy', ['--add-section', `.gnu_debugaltlink=${dz}.alt`, dz]);
  copyFileSync(path.join(root, 'dz', 'alt.reg'), path.join(root, 'dz', 'alt.dwz'));
  copyFileSync(path.join(root, 'dz', 'alt.reg'), path.join(outside, 'alt.dwz'));
  closed = await connectStdio({ root, args: ['--toolsets', 'gdb,debugger', '--no-allow-gdb-shell'] });
}, 120_000);
afterAll(async () => {
  await closed?.close();
  rmSync(base, { recursive: true, force: true });
});

describe('attack atk-r R2: private copies keep holes and are bounded', () => {
  it('open of a 256 MiB sparse program with its 256 MiB sparse debug file writes KBs, not 512 MiB, and gdb reads its symbols', async () => {
    const { id } = await closed.ok('open', { program: 'big/prog' });
    const files = await closed.tool('call', { id, command: 'info files' });
    const dir = /(\/[^"\s]*debugkit-prog-[^/"\s]+)\//.exec(files.text)?.[1];
    expect(dir, files.text).toBeDefined();
    expect(statSync(path.join(dir!, 'prog')).size).toBe(256 * 2 ** 20);
    expect(statSync(path.join(dir!, 'prog.debug')).size).toBe(256 * 2 ** 20);
    // Before: 512 MiB (both files written out in full; the attack's 3 x 1000 MiB wrote 3.0 GB).
    expect(onDisk(dir!)).toBeLessThan(4 * 2 ** 20);
    const ptype = await closed.tool('call', { id, command: 'ptype password' });
    expect(ptype.text).toMatch(/type = char \*/);
    await closed.ok('close', { id });
  });

  it('a copy keeps the data between its holes, and counts only the bytes it wrote', async () => {
    const file = path.join(root, 'c', 'sparse');
    writeFileSync(file, '');
    truncateSync(file, 64 * 2 ** 20);
    const data = Buffer.from('not a hole');
    writeFileSync(file, data, { flag: 'r+' });
    execFileSync('dd', [`if=/dev/urandom`, `of=${file}`, 'bs=4096', 'count=1', `seek=${(32 * 2 ** 20) / 4096}`, 'conv=notrunc'], { stdio: 'ignore' });
    const copy = await CheckedProgram.open(root, 'c/sparse', 'program', { copy: true, key: 'k-sparse' });
    try {
      expect(readFileSync(copy.path).equals(readFileSync(file))).toBe(true);
      expect(statSync(copy.path).blocks * 512).toBeLessThanOrEqual(2 * 64 * 1024);
      // Two 4 KiB blocks hold data (at 0 and at 32 MiB), listed by the kernel: the rest is holes, not counted.
      expect(heldCopyBytes('k-sparse')).toBe(2 * 4096);
    } finally {
      copy.close();
    }
    expect(heldCopyBytes('k-sparse')).toBe(0);
  });

  it('a key past its bound, or the server past its own, is refused with the bound named, until sessions close', async () => {
    for (const name of ['a', 'b', 'c']) execFileSync('dd', ['if=/dev/urandom', `of=${path.join(root, 'c', name)}`, 'bs=1M', 'count=3'], { stdio: 'ignore' });
    const saved = { ...copyBounds };
    copyBounds.perKey = 8 * 2 ** 20;
    copyBounds.perServer = 10 * 2 ** 20;
    const held: CheckedProgram[] = [];
    try {
      held.push(await CheckedProgram.open(root, 'c/a', 'program', { copy: true, key: 'k1' }));
      held.push(await CheckedProgram.open(root, 'c/b', 'program', { copy: true, key: 'k1' }));
      expect(heldCopyBytes('k1')).toBe(6 * 2 ** 20);
      const refused = await CheckedProgram.open(root, 'c/c', 'program', { copy: true, key: 'k1' }).catch((e: Error) => e);
      expect(String(refused)).toMatch(/this API key's sessions already hold 6 MiB of private program copies, and a key may hold at most 8 MiB; close sessions/);
      // Nothing of the refused copy is left or counted.
      expect(heldCopyBytes('k1')).toBe(6 * 2 ** 20);
      // Another key fits its own bound but not the server's (6 + 3 + 3 > 10).
      held.push(await CheckedProgram.open(root, 'c/c', 'program', { copy: true, key: 'k2' }));
      const server = await CheckedProgram.open(root, 'c/a', 'program', { copy: true, key: 'k2' }).catch((e: Error) => e);
      expect(String(server)).toMatch(/the server's sessions already hold 9 MiB of private program copies, at most 10 MiB; close sessions/);
      // A closed session frees its room.
      held.shift()!.close();
      held.push(await CheckedProgram.open(root, 'c/c', 'program', { copy: true, key: 'k1' }));
      expect(heldCopyBytes()).toBe(9 * 2 ** 20);
    } finally {
      for (const p of held) p.close();
      Object.assign(copyBounds, saved);
    }
    expect(heldCopyBytes()).toBe(0);
  });
});

describe('attack 18w T3: a sparse copy reads its data, not its holes', () => {
  it('a 1000 MiB file with two runs of data is read for those runs only, and copied byte for byte', async () => {
    const file = path.join(root, 'c', 'holes');
    writeFileSync(file, '');
    truncateSync(file, 1000 * 2 ** 20);
    const fd = openSync(file, 'r+');
    writeSync(fd, randomBytes(5000), 0, 5000, 7);
    writeSync(fd, randomBytes(3000), 0, 3000, 600 * 2 ** 20 + 123);
    closeSync(fd);
    const before = copyReads.bytes;
    const copy = await CheckedProgram.open(root, 'c/holes', 'program', { copy: true, key: 'k-holes' });
    try {
      // Before: all 1000 MiB read (1,048,576,000 bytes; 18w measured ~20 s for three such files).
      expect(copyReads.bytes - before).toBeLessThanOrEqual(2 * 64 * 1024);
      expect(statSync(copy.path).size).toBe(1000 * 2 ** 20);
      expect(sameBytes(copy.path, file)).toBe(true);
    } finally {
      copy.close();
    }
  });

  /** A file of `runs` runs of 4 KiB of data, one every 32 KiB (holes between), at c/<name>. */
  function manyRuns(name: string, runs: number): { file: string; step: number } {
    const file = path.join(root, 'c', name);
    const step = 8 * 4096;
    writeFileSync(file, '');
    truncateSync(file, runs * step);
    const fd = openSync(file, 'r+');
    for (let i = 0; i < runs; i++) writeSync(fd, Buffer.from(`run ${i}`), 0, undefined, i * step + 100);
    closeSync(fd);
    return { file, step };
  }

  it('a file of 4,500 runs of data is read for its runs only, listed a call at a time, and copied byte for byte', async () => {
    const runs = 4500;
    const { file, step } = manyRuns('many-runs', runs);
    const saved = { ...runListing };
    // 5 calls of the lister, so each goes on from where the last stopped.
    runListing.perCall = 1000;
    const before = copyReads.bytes;
    try {
      const copy = await CheckedProgram.open(root, 'c/many-runs', 'program', { copy: true, key: 'k-holes' });
      try {
        const read = copyReads.bytes - before;
        // Before (attack 18y X1): the first 4,096 runs were read alone, the rest of the file whole (30 MB
        // here, 985.8 MiB of a 1000 MiB file); now a 4 KiB block a run, 18 MB of the file's 147 MB.
        expect(read).toBeLessThanOrEqual(runs * 4096);
        expect(read).toBeLessThan((runs * step) / 4);
        expect(sameBytes(copy.path, file)).toBe(true);
      } finally {
        copy.close();
      }
    } finally {
      Object.assign(runListing, saved);
    }
  });

  it('past the bound on listed runs the rest of the file is read as it is, and the copy is still whole', async () => {
    const runs = 4500;
    const { file, step } = manyRuns('too-many-runs', runs);
    const saved = { ...runListing };
    Object.assign(runListing, { perCall: 1000, most: 2000 });
    const before = copyReads.bytes;
    try {
      const copy = await CheckedProgram.open(root, 'c/too-many-runs', 'program', { copy: true, key: 'k-holes' });
      try {
        const read = copyReads.bytes - before;
        // The first 2,000 runs are read alone (4 KiB blocks); the last 2,500 with the holes between them.
        expect(read).toBeGreaterThan((runs - 2000) * step - step);
        expect(read).toBeLessThan(runs * step);
        expect(sameBytes(copy.path, file)).toBe(true);
      } finally {
        copy.close();
      }
    } finally {
      Object.assign(runListing, saved);
    }
  });
});

describe('a SIGKILLed server leaves its private copies; the next server removes them', () => {
  it("a killed server's temporary directory (its program copies) is gone once the next server copies a program; a stopped one removes its own", async () => {
    const tmp = tempDir('debugkit-18x-tmp-');
    const args = ['--root', root, '--toolsets', 'gdb', '--no-allow-gdb-shell'];
    const runs = () => readdirSync(tmp).filter((n) => n.startsWith('debugkit-run-'));
    const first = await startHttpServer(args, { TMPDIR: tmp });
    let second: HttpServer | undefined;
    try {
      const a = await connectHttp(first.url, first.key);
      await a.ok('open', { program: 'c/small' });
      const [left] = runs();
      expect(left).toMatch(/^debugkit-run-\d+-\d+-\d+$/);
      expect(readdirSync(path.join(tmp, left!)).filter((n) => n.startsWith('debugkit-prog-'))).toHaveLength(1);
      const exited = new Promise((r) => first.proc.once('exit', r));
      first.proc.kill('SIGKILL');
      await exited;
      // Before: the copy stayed in the temp directory for good (a program of up to 1 GiB each time).
      expect(runs()).toEqual([left]);
      second = await startHttpServer(args, { TMPDIR: tmp });
      const b = await connectHttp(second.url, second.key);
      const { id } = await b.ok('open', { program: 'c/small' });
      expect(await pollUntil(() => !runs().includes(left!), { timeoutMs: 10_000, intervalMs: 20 })).toBe(true);
      expect(runs()).toHaveLength(1);
      await b.ok('close', { id });
      await b.close();
      await second.stop();
      expect(runs()).toEqual([]);
    } finally {
      first.proc.kill('SIGKILL');
      await second?.stop();
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it("when another user took the server's run directory name, its copies go to a debugkit-run-<mark>-XXXXXX of its own, which the next server removes after a SIGKILL", async () => {
    const tmp = tempDir('debugkit-18y-tmp-');
    const args = ['--root', root, '--toolsets', 'gdb', '--no-allow-gdb-shell'];
    const first = await startHttpServer(args, { TMPDIR: tmp });
    let second: HttpServer | undefined;
    try {
      // The server's mark (process.ts ownMark), as any local user can read it: its run directory is made
      // at its first copy, so the name is taken before that.
      const ns = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))![1];
      const stat = readFileSync(`/proc/${first.proc.pid}/stat`, 'utf8');
      const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
      const mark = `${ns}-${first.proc.pid}-${start}`;
      const taken = path.join(tmp, `debugkit-run-${mark}`);
      mkdirSync(taken);
      // Another user's, where the test can make one (root); else this user's, which is no less taken.
      const other = process.getuid?.() === 0;
      if (other) chownSync(taken, 65534, 65534);
      const a = await connectHttp(first.url, first.key);
      await a.ok('open', { program: 'c/small' });
      // Before (attack 18y X2): the copy was made as tmp/debugkit-prog-XXXXXX, never removed after a SIGKILL.
      expect(readdirSync(tmp).filter((n) => n.startsWith('debugkit-prog-'))).toEqual([]);
      const [fallback] = readdirSync(tmp).filter((n) => n.startsWith(`debugkit-run-${mark}-`));
      expect(fallback).toMatch(new RegExp(`^debugkit-run-${mark}-[A-Za-z0-9]{6}$`));
      const st = lstatSync(path.join(tmp, fallback!));
      expect([st.mode & 0o777, st.uid]).toEqual([0o700, process.getuid!()]);
      expect(readdirSync(path.join(tmp, fallback!)).filter((n) => n.startsWith('debugkit-prog-'))).toHaveLength(1);
      expect(readdirSync(taken)).toEqual([]);
      const exited = new Promise((r) => first.proc.once('exit', r));
      first.proc.kill('SIGKILL');
      await exited;
      second = await startHttpServer(args, { TMPDIR: tmp });
      const b = await connectHttp(second.url, second.key);
      await b.ok('open', { program: 'c/small' });
      expect(await pollUntil(() => !existsSync(path.join(tmp, fallback!)), { timeoutMs: 10_000, intervalMs: 20 })).toBe(true);
      // Another user's directory is never removed, whatever its name.
      if (other) expect(existsSync(taken)).toBe(true);
      await b.close();
    } finally {
      first.proc.kill('SIGKILL');
      await second?.stop();
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

/** Whether two files hold the same bytes, compared a slice at a time. */
function sameBytes(a: string, b: string): boolean {
  const size = statSync(a).size;
  if (size !== statSync(b).size) return false;
  const [fa, fb] = [openSync(a, 'r'), openSync(b, 'r')];
  try {
    const [ba, bb] = [Buffer.alloc(4 << 20), Buffer.alloc(4 << 20)];
    for (let at = 0; at < size; at += ba.length) {
      const n = readSync(fa, ba, 0, ba.length, at);
      if (readSync(fb, bb, 0, bb.length, at) !== n || !ba.subarray(0, n).equals(bb.subarray(0, n))) return false;
    }
    return true;
  } finally {
    closeSync(fa);
    closeSync(fb);
  }
}

describe('attack atk-r R3: an absolute dwz name inside the root', () => {
  it("the copy's .gnu_debugaltlink names a private copy of the checked dwz file, of the same length, never the workspace name", async () => {
    const copy = await CheckedProgram.open(root, 'dz/prog', 'program', { copy: true });
    try {
      expect(await copyDebugFiles(copy.path, copy.real, root)).toBeUndefined();
      const links = await debugLinks(copy.path);
      const alt = typeof links === 'object' ? links.altlink : undefined;
      const workspaceName = path.join(root, 'dz', 'alt.dwz');
      expect(alt).toMatch(/^(\.\/)*\.dwz0_?$/);
      expect(alt!.length).toBe(workspaceName.length);
      expect(readFileSync(path.join(path.dirname(copy.path), alt!)).equals(readFileSync(workspaceName))).toBe(true);
    } finally {
      copy.close();
    }
    // gdb finds the dwz file by the new name (it refuses to load a program whose dwz file it cannot find).
    const { id } = await closed.ok('open', { program: 'dz/prog' });
    const ptype = await closed.tool('call', { id, command: 'ptype password' });
    expect(ptype.text).toMatch(/type = char \*/);
    await closed.ok('close', { id });
  });

  it('no open or debugger_launch reads the outside file while a writer swaps the dwz name for a link out of the root (40 + 20 tries)', async () => {
    const dir = path.join(root, 'dz');
    const target = path.join(outside, 'alt.dwz');
    // Read since: relatime updates an access time older than the modification time on a read.
    const unread = () => utimesSync(target, new Date(1000), statSync(target).mtime);
    const wasRead = () => statSync(target).atimeMs > 1000 * 1000;
    unread();
    const stop = new Int32Array(new SharedArrayBuffer(8));
    // The swapper: atomic renames of a regular copy or a link out of the root over dz/alt.dwz, a
    // few milliseconds apart (Atomics.wait paces it; the writer's speed, not a bound of the test).
    const swapper = new Worker(
      `const { workerData: { dir, target, stop } } = require('node:worker_threads');
       const fs = require('node:fs');
       for (let i = 0; Atomics.load(stop, 0) === 0; i++) {
         fs.rmSync(dir + '/x.tmp', { force: true });
         if (i % 2) fs.copyFileSync(dir + '/alt.reg', dir + '/x.tmp');
         else fs.symlinkSync(target, dir + '/x.tmp');
         fs.renameSync(dir + '/x.tmp', dir + '/alt.dwz');
         Atomics.add(stop, 1, 1);
         Atomics.wait(stop, 0, 0, 2);
       }`,
      { eval: true, workerData: { dir, target, stop } },
    );
    const counts = { opened: 0, refused: 0, launched: 0, launchRefused: 0, outsideReads: 0 };
    try {
      for (let i = 0; i < 40; i++) {
        const r = await closed.tool('open', { program: 'dz/prog' });
        if (r.isError) counts.refused++;
        else {
          counts.opened++;
          await closed.ok('close', { id: (r.structured as { content: { id: string } }).content.id });
        }
        if (wasRead()) counts.outsideReads++;
        unread();
      }
      for (let i = 0; i < 20; i++) {
        const r = await closed.tool('debugger_launch', { program: 'dz/prog', session_id: `dz${i}` });
        if (r.isError) counts.launchRefused++;
        else {
          counts.launched++;
          await closed.tool('debugger_detach', { session_id: `dz${i}` });
        }
        if (wasRead()) counts.outsideReads++;
        unread();
      }
    } finally {
      Atomics.store(stop, 0, 1);
      await swapper.terminate();
      rmSync(path.join(dir, 'alt.dwz'), { force: true });
      copyFileSync(path.join(dir, 'alt.reg'), path.join(dir, 'alt.dwz'));
    }
    console.log('R3 race', JSON.stringify(counts));
    expect(Atomics.load(stop, 1)).toBeGreaterThan(60);
    expect(counts.opened + counts.launched, JSON.stringify(counts)).toBeGreaterThan(0);
    expect(counts.refused + counts.launchRefused, JSON.stringify(counts)).toBeGreaterThan(0);
    expect(counts.outsideReads, JSON.stringify(counts)).toBe(0);
  }, 600_000);
});

// The swapped name as a plain link (not racing): refused for a key without the shell, read by nobody.
describe('attack atk-r R3: the dwz name a link out of the root', () => {
  it('is refused before gdb starts', async () => {
    const dir = path.join(root, 'dz');
    renameSync(path.join(dir, 'alt.dwz'), path.join(dir, 'alt.kept'));
    symlinkSync(path.join(outside, 'alt.dwz'), path.join(dir, 'alt.dwz'));
    try {
      const r = await closed.tool('open', { program: 'dz/prog' });
      expect(r.isError).toBe(true);
      expect(r.text).toMatch(/alt\.dwz/);
    } finally {
      rmSync(path.join(dir, 'alt.dwz'));
      renameSync(path.join(dir, 'alt.kept'), path.join(dir, 'alt.dwz'));
    }
  });
});
