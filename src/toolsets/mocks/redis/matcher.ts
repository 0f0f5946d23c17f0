import { payloadBytes } from '../generic/keploy.js';
import type { RedisMock } from '../keploy/types.js';
import type { TimeSlice } from '../../../core/wait.js';
import { commandArgs, commandEnd, redactArgs, RespError } from './wire.js';

interface Entry {
  name: string;
  args: Buffer[];
  response: Buffer;
}

/** How many recorded commands a miss compares with at most, to name the closest. */
const CLOSEST_SCAN = 512;
/**
 * Arguments compared with one candidate at most, and over all of them: the candidates were bounded
 * and their arguments not, so 28 recorded commands of 100,000 arguments cost 2.8 million compares,
 * ~400 ms of the loop, at every miss (attack 18ao d2-1). The first arguments name the closest well.
 */
const CLOSEST_ARGS_EACH = 256;
const CLOSEST_ARGS_TOTAL = 16_384;

/** Recorded replies by command (passwords ignored), shared by a program's connections. */
export class RedisIndex {
  private readonly byKey = new Map<string, { entries: Entry[]; next: number }>();
  /** By command name: every recorded command, and those by their first argument (the key, or a subcommand). */
  private readonly byName = new Map<string, { all: Entry[]; byFirst: Map<string, Entry[]> }>();
  readonly problems: string[] = [];
  /** How many recorded commands it holds. */
  size = 0;

  constructor(mocks: readonly RedisMock[] = []) {
    for (const mock of mocks) this.addMock(mock);
  }

  /** The index of a large set, built in slices that leave the event loop to others' work. */
  static async build(mocks: readonly RedisMock[], slice: TimeSlice): Promise<RedisIndex> {
    const index = new RedisIndex();
    for (const mock of mocks) {
      await slice.pause();
      index.addMock(mock);
    }
    return index;
  }

  private addMock(mock: RedisMock): void {
    try {
      const request = payloadBytes(mock.spec.redisrequests);
      if (request.length === 0) return; // a greeting: Redis servers send none
      const end = commandEnd(request, 0);
      if (end !== request.length) throw new RespError('the request is not exactly one command');
      const args = redactArgs(commandArgs(request)).args;
      this.add({ name: mock.name, args, response: payloadBytes(mock.spec.redisresponses) });
      this.size++;
    } catch (err) {
      this.problems.push(`${mock.name}: ${(err as Error).message}`);
    }
  }

  /** Adds an answer (a mock recorded during replay); it answers the next repeats. */
  add(entry: Entry): void {
    const key = keyOf(entry.args);
    const slot = this.byKey.get(key);
    if (slot) slot.entries.push(entry);
    else this.byKey.set(key, { entries: [entry], next: 0 });
    const name = entry.args[0]?.toString('latin1').toUpperCase() ?? '';
    let same = this.byName.get(name);
    if (!same) this.byName.set(name, (same = { all: [], byFirst: new Map() }));
    same.all.push(entry);
    const first = entry.args[1]?.toString('latin1');
    if (first !== undefined) {
      const list = same.byFirst.get(first);
      if (list) list.push(entry);
      else same.byFirst.set(first, [entry]);
    }
  }

  /** The next recorded answer to `args` (the last one again once all were used). */
  answer(args: readonly Buffer[]): { entry: Entry; reused: boolean } | undefined {
    const slot = this.byKey.get(keyOf(args));
    if (!slot) return undefined;
    const reused = slot.next >= slot.entries.length;
    const entry = slot.entries[Math.min(slot.next, slot.entries.length - 1)]!;
    slot.next++;
    return { entry, reused };
  }

  /**
   * The recorded command most like `args`: the same name, then the same first argument (the key)
   * when one was recorded, then the most equal arguments in the same places (the first recorded
   * wins a tie). Looked for among at most CLOSEST_SCAN commands, so that a miss costs the same
   * whatever the size of the set.
   */
  closest(args: readonly Buffer[]): Entry | undefined {
    const same = this.byName.get(args[0]?.toString('latin1').toUpperCase() ?? '');
    if (!same) return undefined;
    const candidates = (args[1] !== undefined ? same.byFirst.get(args[1].toString('latin1')) : undefined) ?? same.all;
    let best: Entry | undefined;
    let bestScore = -1;
    let budget = CLOSEST_ARGS_TOTAL;
    for (let c = 0; c < Math.min(candidates.length, CLOSEST_SCAN) && budget > 0; c++) {
      const e = candidates[c]!;
      let score = e.args.length === args.length ? 1 : 0;
      const compared = Math.min(e.args.length, args.length, CLOSEST_ARGS_EACH + 1, budget + 1);
      for (let i = 1; i < compared; i++) if (e.args[i]!.equals(args[i]!)) score += 2;
      budget -= compared;
      if (score > bestScore) [best, bestScore] = [e, score];
    }
    return best;
  }
}

/**
 * The command's arguments as a Map key, each length-prefixed, the name's ASCII letters upper-cased
 * (as Redis reads it). Arguments are binary and may hold any byte: joined with a NUL,
 * `MGET acct:1 acct:2` and `MGET` of the one key `acct:1<NUL>acct:2` had the same key, and the one
 * replayed the other's answer (attack l1-3).
 */
function keyOf(args: readonly Buffer[]): string {
  let key = '';
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!.toString('latin1');
    key += `${a.length}:${i === 0 ? a.replace(/[a-z]/g, (l) => l.toUpperCase()) : a}`;
  }
  return key;
}
