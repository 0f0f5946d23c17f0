import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SessionNotFoundError } from '../../../core/errors.js';
import type { CallContext } from '../../../mcp/tools.js';
import type { CrashSignature } from '../control.js';
import type { DebugSession } from '../session.js';
import type { DebuggerContext } from './common.js';
import { findSimilarBugsTool } from './find-similar-bugs.js';

// Every scan the tool starts is seen here (the scanner itself runs as it is).
const scans = vi.hoisted(() => ({ count: 0 }));
vi.mock('../similar/artefacts.js', async (original) => {
  const real = await original<typeof import('../similar/artefacts.js')>();
  return {
    ...real,
    scanArtefacts: (...args: Parameters<typeof real.scanArtefacts>) => {
      scans.count++;
      return real.scanArtefacts(...args);
    },
  };
});

let root: string;
beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'dk-similar-'));
  mkdirSync(path.join(root, 'art'));
  const traceback = (name: string) => `Traceback (most recent call last):\n  File "a.py", line 1, in f\n${name}\n`;
  writeFileSync(path.join(root, 'art', 'a.log'), traceback('ValueError'));
  writeFileSync(path.join(root, 'art', 'b.log'), traceback('KeyError'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The tool with one session, "s", in the state given (undefined: no session at all). */
function tool(session: Partial<DebugSession> | undefined, stored: CrashSignature[] = []) {
  const ctx = {
    sessions: {
      get: (_owner: string, id: string) => {
        if (session && id === 's') return session;
        throw new SessionNotFoundError(id);
      },
    },
    config: { root, gdb: { path: 'gdb' } },
    control: { signatures: { list: () => Promise.resolve(stored) } },
  } as unknown as DebuggerContext;
  const call = { client: { owner: 'o' }, signal: new AbortController().signal, progress: () => Promise.resolve() } as unknown as CallContext;
  const spec = findSimilarBugsTool(ctx);
  return (args: Record<string, unknown>) => spec.run({ pattern_type: 'logic', session_id: 's', ...args }, call) as Promise<Record<string, unknown>>;
}

describe('debugger_find_similar_bugs', () => {
  it('refuses a session that has not crashed before it reads any file under search_path (attack 18an Z6: the scan ran, then the refusal)', async () => {
    scans.count = 0;
    const run = tool({ lastCrash: undefined, program: 'p' });
    await expect(run({ search_path: 'art' })).rejects.toThrow(/^History unavailable: session "s" has not crashed/);
    expect(scans.count).toBe(0);
    // search_path is still checked first: a path out of the root is refused as such.
    await expect(run({ search_path: '../..' })).rejects.toThrow(/search_path/);
    expect(scans.count).toBe(0);
  });

  it('without a session, compares the artefacts found with the last of them, as before', async () => {
    scans.count = 0;
    const answer = await tool(undefined)({ search_path: 'art', session_id: 'none' });
    expect(scans.count).toBe(1);
    expect(answer).toMatchObject({ considered: 2, matches: [expect.objectContaining({ source: expect.stringMatching(/^art\/[ab]\.log$/) })] });
    expect(answer.truncated).toBeUndefined();
  });
});
