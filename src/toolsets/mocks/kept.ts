/**
 * Bytes a recording keeps for calls not finished yet, across all its connections and streams.
 * Each call is bound (MAX_MOCK_EXCHANGE_BYTES), but a program may hold a thousand of them open at
 * once: 1,000 HTTP/2 streams or HTTP/1 connections each answered 1 MB and never finished held
 * 1.8-6.5 GB and other clients' pings 4-15 s, for mocks no set could hold (attack 18p). Past the
 * budget a call is relayed whole and not kept (or kept without its body, as a body over the bound is).
 */
export class KeptBytes {
  private used = 0;
  private structured = 0;

  /**
   * `parent`: a budget above this one, which every byte taken here is taken from too (the server's,
   * SERVER_KEPT, shared by all the recordings and replays running at once).
   */
  constructor(
    readonly limit: number = RECORDING_KEPT_MAX_BYTES,
    readonly valuesLimit: number = RECORDING_STRUCTURED_MAX_VALUES,
    private readonly parent?: KeptBytes,
  ) {}

  /** What is left of the values the recording's mocks may be structured into. */
  get valuesLeft(): number {
    return this.valuesLimit - this.structured;
  }

  /** Takes `n` of those values, or none (false: keep the exchange as its bytes). Never given back: the mocks are kept. */
  takeValues(n: number): boolean {
    if (this.structured + n > this.valuesLimit) return false;
    this.structured += n;
    return true;
  }

  /** Takes `n` bytes of the budget, or none (false) when they do not fit. */
  take(n: number): boolean {
    if (this.used + n > this.limit) return false;
    if (this.parent && !this.parent.take(n)) return false;
    this.used += n;
    return true;
  }

  give(n: number): void {
    const back = Math.min(n, this.used);
    this.used -= back;
    this.parent?.give(back);
  }
}

/**
 * Most bytes a replay holds of one miss's answer (or request) that it must relay whole (an HTTP body
 * sent to the real server, a Redis reply, a PostgreSQL query group's answer): past it the miss
 * fails, saying so. The budget below bounds all of them together. A legitimate answer of a few MB
 * is relayed; an endless one stops here (attack 18ah o1-1, o1-3: 1.4-2.2 GB).
 */
export const RELAYED_MAX_BYTES = 64 * 1024 * 1024;

/**
 * What all the recordings and replays running at once may keep of their unfinished calls together:
 * each has its own 64 MiB, but nothing bounded how many run at once (20 replays, each holding 62 MiB
 * of a request body, held 1.45 GB: attack 18aj r1-1). Past it a call is kept no further, as past its
 * own budget.
 */
export const SERVER_KEPT_MAX_BYTES = 256 * 1024 * 1024;

/** A recording's or a replay's budget, under the server's (SERVER_KEPT). */
export function keptBudget(): KeptBytes {
  return new KeptBytes(RECORDING_KEPT_MAX_BYTES, RECORDING_STRUCTURED_MAX_VALUES, SERVER_KEPT);
}

/** What all of a recording's unfinished calls may keep at once: twice what a mock set holds. */
export const RECORDING_KEPT_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The values (rows' cells, parameter bytes, ...) a recording structures into typed mock fields, all
 * its exchanges together: each is an object on the loop and lines of YAML its set's thread writes.
 * Ten Postgres answers of 90,000 rows made a set that thread could not write in 20 s (attack 18u P9).
 */
export const RECORDING_STRUCTURED_MAX_VALUES = 4 * 65536;

/**
 * What one request waiting for its answer costs beyond its bytes (its objects on the heap): 300 MB
 * of 14-byte Redis PINGs never answered filled a 4 GB heap (attack 18q).
 */
export const WAITING_OVERHEAD_BYTES = 256;

/** One call's part of a recording's budget: what it took, given back once (when it ends, or stops being kept). */
export class KeptShare {
  private taken = 0;

  constructor(private readonly budget: KeptBytes | undefined) {}

  take(n: number): boolean {
    if (!this.budget) return true;
    if (!this.budget.take(n)) return false;
    this.taken += n;
    return true;
  }

  /** Gives back `n` of what it took (a part of the call that is done). */
  give(n: number): void {
    const back = Math.min(n, this.taken);
    this.budget?.give(back);
    this.taken -= back;
  }

  /** Gives back what it took beyond `n` (the bytes still held, after some were consumed). */
  downTo(n: number): void {
    if (this.taken > n) this.give(this.taken - n);
  }

  release(): void {
    this.budget?.give(this.taken);
    this.taken = 0;
  }
}

/** The server's budget over all its recordings and replays (SERVER_KEPT_MAX_BYTES). */
export const SERVER_KEPT = new KeptBytes(SERVER_KEPT_MAX_BYTES, Number.MAX_SAFE_INTEGER);
