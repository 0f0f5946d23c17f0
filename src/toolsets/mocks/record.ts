import { boundPromise } from '../../core/wait.js';
import type { Mock } from './keploy/types.js';
import { numberMocks } from './keploy/serialize.js';
import type { SetNarrowing } from './keploy/narrow.js';
import { MockStore } from './keploy/store.js';
import { nameFor } from './keploy/naming.js';
import { dialFor } from './dial.js';
import type { RecordOptions } from './protocol.js';
import { PROTOCOLS } from './protocols.js';
import { mockBytes, RECORDED_MAX_BYTES, RECORDED_MAX_MOCKS } from './replay.js';
import type { DebugkitCa } from './tls/index.js';
import { describeUnauthenticated, startCaptureProxy, UNAUTHENTICATED } from './proxy/proxy.js';
import { tunnel } from './proxy/tunnel.js';
import { keptBudget } from './kept.js';
import { runThroughProxy, type RunResult } from './runner.js';
import { isOwnServer } from './session.js';

export interface RecordRequest {
  command: string;
  dir: string;
  /** The workspace root `dir` was resolved in: the set is written through directories opened from it, no link followed (keploy/setdir.ts). */
  root?: string;
  cwd: string;
  ca: DebugkitCa;
  caEnv: Record<string, string>;
  /** The tool's `env` argument. */
  env?: Record<string, string>;
  timeoutMs: number;
  ownPorts: number[];
  /** The API key the call runs for (core/sessions.ts clientKey): its proxy connections count against that key's share. */
  owner?: string;
  upstreamCa?: string;
  insecureUpstream?: boolean;
  signal?: AbortSignal;
  onTick?: (elapsedMs: number, mocks: number) => void;
  warn: (message: string) => void;
  /** What a recording keeps (default, and at most, what a set may hold: RECORDED_MAX_MOCKS mocks, RECORDED_MAX_BYTES); smaller in tests. */
  maxMocks?: number;
  maxBytes?: number;
  /** Re-record one test into an existing set: its mocks there (narrow.ts) are replaced by what this run records. */
  replace?: { set: string } & SetNarrowing;
}

export interface RecordOutcome {
  /** Empty when nothing was captured (no set is written). */
  name: string;
  file: string;
  mockCount: number;
  /**
   * Exchanges captured past what a set may hold (the first ones are kept, as with replay's
   * `onMiss: record`), and those left out for the written set to stay within the replay bounds:
   * counted, not kept, and over-large exchanges a protocol could not keep whole. Their traffic
   * went through all the same.
   */
  dropped: number;
  /** Why they were not kept, with how many each: what the answer says. */
  droppedWhy: Array<{ why: string; count: number }>;
  protocols: string[];
  run: RunResult;
  /** With `replace`: how many mocks of the set the recording took the place of. */
  replaced?: number;
}

/** Runs the command with its outgoing calls captured, then writes them as a new mock set. */
export async function recordMocks(req: RecordRequest): Promise<RecordOutcome> {
  const captured: Array<{ at: number; order: number; mock: Mock; protocol: string }> = [];
  let order = 0;
  // Kept: no more than a set may hold (a set past it cannot be replayed, and 60,000 Redis SETs kept
  // all of theirs: 32 MB written, the event loop held 27 s); past it the proxy still relays.
  const maxMocks = Math.min(req.maxMocks ?? RECORDED_MAX_MOCKS, RECORDED_MAX_MOCKS);
  const maxBytes = Math.min(req.maxBytes ?? RECORDED_MAX_BYTES, RECORDED_MAX_BYTES);
  let keptBytes = 0;
  const notKept = new Map<string, number>();
  const drop = (why: string, n = 1) => void (n > 0 && notKept.set(why, (notKept.get(why) ?? 0) + n));
  const SET_FULL = `a set holds at most ${RECORDED_MAX_MOCKS} mocks and ${RECORDED_MAX_BYTES / (1024 * 1024)} MiB`;
  const outcome = (name: string, file: string, mockCount: number, protocols: string[], run: RunResult): RecordOutcome => {
    const droppedWhy = [...notKept].map(([why, count]) => ({ why, count }));
    return { name, file, mockCount, dropped: droppedWhy.reduce((n, d) => n + d.count, 0), droppedWhy, protocols, run };
  };
  const keep = (mock: Mock, protocol: string) => {
    const bytes = mockBytes(mock);
    if (captured.length >= maxMocks || keptBytes + bytes > maxBytes) return drop(SET_FULL);
    keptBytes += bytes;
    captured.push({ at: Date.now(), order: order++, mock, protocol });
  };
  const pending = new Set<Promise<unknown>>();
  const options: RecordOptions = {
    ca: req.ca,
    ...(req.upstreamCa ? { upstreamCa: req.upstreamCa } : {}),
    insecureUpstream: req.insecureUpstream,
    dial: dialFor,
    onMock: keep,
    onDropped: (why) => drop(why),
    kept: keptBudget(),
    warn: req.warn,
  };
  const proxy = await startCaptureProxy({
    exclude: (host, port) => isOwnServer(host, port, req.ownPorts),
    ...(req.owner !== undefined ? { owner: req.owner } : {}),
    onRefused: (why) => req.warn(why === UNAUTHENTICATED ? describeUnauthenticated(1) : `a connection was refused by the capture proxy: ${why}`),
    onCut: ({ target, bytes, why }) =>
      req.warn(`a connection to ${target.host}:${target.port} sent ${bytes} bytes and was cut (${why}) before debugkit could tell its protocol: nothing of it was recorded`),
    onConnection: (conn) => {
      const work = (async () => {
        const protocol = PROTOCOLS.find((p) => p.recorder.accepts(conn));
        if (protocol) return await protocol.recorder.record(conn, options);
        await tunnel(conn);
      })().catch((err: unknown) => req.warn(`recording ${conn.target.host}:${conn.target.port}: ${String(err)}`));
      pending.add(work);
      void work.finally(() => pending.delete(work));
      return work;
    },
  });
  let run: RunResult;
  try {
    run = await runThroughProxy(req, proxy, (ms) => req.onTick?.(ms, captured.length));
    // Exchanges still in flight when the program ended (a response being written) finish first.
    await boundPromise(Promise.allSettled([...pending]), { timeoutMs: 2000 });
  } finally {
    await proxy.close();
  }
  // The answer says why the program's connections failed (and the calls on them were not recorded).
  for (const r of proxy.refused) drop(`connections refused by the capture proxy: ${r.why}`, r.count);
  // Nothing of them reached the recorders; said so that a program whose client ignored the credential knows why its calls failed.
  drop(`connections closed by the capture proxy before their first request: ${UNAUTHENTICATED}`, proxy.unauthenticated);
  const mocks = numberMocks(captured.sort((a, b) => a.at - b.at || a.order - b.order).map((c) => c.mock));
  const protocols = [...new Set(captured.map((c) => c.protocol))];
  // No set without mocks: an empty set would become the latest and a default replay would test against nothing.
  if (mocks.length === 0) return outcome('', '', 0, protocols, run);
  const store = new MockStore(req.dir, req.root !== undefined ? { root: req.root } : {});
  if (req.replace) {
    // A run that failed proves nothing of the test: its mocks in the set are not given up for it (Keploy lost recordings so, keploy/keploy#4376).
    if (run.exitCode !== 0 || run.timedOut) {
      req.warn(`mock set '${req.replace.set}' was left as it was: the re-recorded run failed`);
      return outcome('', '', 0, protocols, run);
    }
    // One test re-recorded: its mocks in the set give way to these, every other mock of the set kept as it was.
    const { set, ...test } = req.replace;
    const { replaced } = await store.replace(set, mocks, test);
    return { ...outcome(set, store.pathOf(set), mocks.length, protocols, run), replaced };
  }
  const name = await store.uniqueName(nameFor(req.command, protocols, new Date(), req.cwd));
  // Serialized and checked on the mock-set worker threads; the first mocks whose YAML fits the
  // replay bounds are written (the bytes kept above are the mocks', not their YAML's).
  const { file, written } = await store.writeWithin(name, mocks);
  drop(SET_FULL, mocks.length - written);
  return outcome(name, file, written, protocols, run);
}
