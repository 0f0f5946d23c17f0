import type { TimeSlice } from '../../../core/wait.js';
import type { Mock } from '../keploy/types.js';
import { flagByte, type GrpcMessage } from './grpc.js';
import { readGrpcMock, readGrpcMockSliced, type GrpcCall } from './keploy.js';

/** Bytes that differ between two requests, counting a length difference as that many bytes. */
export function byteDistance(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  let d = Math.abs(a.length - b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) d++;
  return d;
}

/** The same flag byte, the same bytes, and truncated alike. */
const sameMessage = (a: GrpcMessage, b: GrpcMessage) =>
  flagByte(a) === flagByte(b) && Buffer.compare(a.data, b.data) === 0 && a.truncated?.length === b.truncated?.length && a.truncated?.came === b.truncated?.came;

/** The set's gRPC calls by path, in recorded order; a call in progress is matched by `open`. */
export class GrpcIndex {
  private readonly byPath = new Map<string, GrpcCall[]>();
  private readonly used = new Set<GrpcCall>();
  private first: GrpcCall | undefined;
  private count = 0;
  /** Why the set's mocks for a method were not indexed (their messages could not be read), for its misses. */
  private readonly refused = new Map<string, string>();

  constructor(mocks: readonly Mock[] = []) {
    for (const m of mocks) this.read(m);
  }

  /**
   * The index of a large set, built in slices that leave the event loop to others' work (each
   * mock's messages are assembled from their text in slices too). A mock whose messages cannot be
   * read is left out, and `warn` says why.
   */
  static async build(mocks: readonly Mock[], slice: TimeSlice, warn?: (message: string) => void): Promise<GrpcIndex> {
    const index = new GrpcIndex();
    for (const m of mocks) {
      await slice.pause();
      const call = await readGrpcMockSliced(m, slice);
      if (!call) continue;
      if ('refused' in call) {
        warn?.(call.refused);
        if (call.path !== undefined && !index.refused.has(call.path)) index.refused.set(call.path, call.refused);
      } else index.push(call);
    }
    return index;
  }

  private read(m: Mock): void {
    const call = readGrpcMock(m);
    if (call) this.push(call);
  }

  private push(call: GrpcCall): void {
    const list = this.byPath.get(call.path) ?? [];
    list.push(call);
    this.byPath.set(call.path, list);
    this.first ??= call;
    this.count++;
  }

  get size(): number {
    return this.count;
  }

  /** A call recorded during replay (`onMiss: record`): it answers later calls, as used. */
  add(call: GrpcCall): void {
    this.push(call);
    this.used.add(call);
  }

  /** Starts matching a call to `path`; a method the set does not know is a miss at once. */
  open(path: string): GrpcCallMatch | { miss: string; knownPath: false } {
    const same = this.byPath.get(path);
    if (same) return new GrpcCallMatch(path, same, this.used);
    const other = this.first;
    const refused = this.refused.get(path);
    const closest = other ? `; closest ${other.name} (${other.path})` : ' (the set has no gRPC mocks)';
    return { knownPath: false, miss: `gRPC ${path}: no mock for this method${refused ? ` (${refused})` : closest}` };
  }

  /** A whole call at once (its request messages, then the client's end): the call, or the miss. */
  match(path: string, requestMessages: readonly GrpcMessage[]): { call: GrpcCall } | { miss: string; knownPath: boolean } {
    const m = this.open(path);
    if (!(m instanceof GrpcCallMatch)) return m;
    for (const msg of requestMessages) {
      const r = m.push(msg);
      if ('miss' in r) return { miss: r.miss, knownPath: true };
    }
    const r = m.end();
    return 'miss' in r ? { miss: r.miss, knownPath: true } : { call: r.call };
  }
}

/**
 * One call being answered: the request messages are matched in order against the recorded
 * calls of the method (Keploy keeps one call per mock; a stream's messages in order), and each
 * recorded response message is released as soon as the request messages recorded before it
 * have arrived. Among calls that still fit, an unused one is preferred, in recorded order; once a
 * response has been sent the call is fixed.
 */
export class GrpcCallMatch {
  private candidates: GrpcCall[];
  private received = 0;
  private sent = 0;
  private fixed: GrpcCall | undefined;

  constructor(
    private readonly path: string,
    calls: readonly GrpcCall[],
    private readonly used: Set<GrpcCall>,
  ) {
    this.candidates = [...calls];
  }

  /** The call that answers now: the fixed one, else the first unused candidate, else the last. */
  private pick(among: readonly GrpcCall[]): GrpcCall | undefined {
    return this.fixed ?? among.find((c) => !this.used.has(c)) ?? among.at(-1);
  }

  /** The response messages of `call` that may go out once `received` request messages are in. */
  private release(call: GrpcCall, ended: boolean): GrpcMessage[] {
    const out: GrpcMessage[] = [];
    while (this.sent < call.responseMessages.length) {
      const m = call.responseMessages[this.sent]!;
      if (!ended && (m.afterRequests === undefined || m.afterRequests > this.received)) break;
      out.push(m);
      this.sent++;
    }
    if (out.length > 0) this.fixed = call;
    return out;
  }

  /**
   * The next request message: the response messages to send now (with `end` when the recorded
   * server ended the call here, before the client's end: the trailers go now), or the miss.
   */
  push(msg: GrpcMessage): { send: GrpcMessage[]; call: GrpcCall; end?: true } | { miss: string } {
    const i = this.received;
    const fit = this.candidates.filter((c) => c.requestMessages.length > i && sameMessage(c.requestMessages[i]!, msg));
    if (fit.length === 0) return { miss: this.missAt(i, msg) };
    this.candidates = fit;
    this.received++;
    const call = this.pick(fit)!;
    const send = this.release(call, false);
    if (call.trailersAfterRequests !== undefined && this.received >= call.trailersAfterRequests) {
      this.used.add(call);
      return { send: [...send, ...this.release(call, true)], call, end: true };
    }
    return { send, call };
  }

  /** The client ended its side: the call (marked used) and the rest of its responses, or the miss. */
  end(): { send: GrpcMessage[]; call: GrpcCall } | { miss: string } {
    const done = this.candidates.filter((c) => c.requestMessages.length === this.received);
    const call = this.fixed ? done.find((c) => c === this.fixed) : this.pick(done);
    if (!call) {
      const near = this.fixed ?? this.pick(this.candidates)!;
      return {
        miss: `gRPC ${this.path}: the client ended after ${this.received} request message${this.received === 1 ? '' : 's'}; closest ${near.name} (same method, same first ${this.received}, ${near.requestMessages.length} request messages)`,
      };
    }
    this.used.add(call);
    return { send: this.release(call, true), call };
  }

  private missAt(i: number, msg: GrpcMessage): string {
    const what = i === 0 ? `request ${msg.data.byteLength} bytes` : `request message ${i + 1}, ${msg.data.byteLength} bytes`;
    const longer = this.candidates.filter((c) => c.requestMessages.length > i);
    if (longer.length === 0) {
      const near = this.fixed ?? this.pick(this.candidates)!;
      return `gRPC ${this.path} (${what}): no mock has this request; closest ${near.name} (same method, same first ${i}, no more request messages)`;
    }
    let best = longer[0]!;
    let bestD = byteDistance(best.requestMessages[i]!.data, msg.data);
    for (const c of longer.slice(1)) {
      const d = byteDistance(c.requestMessages[i]!.data, msg.data);
      if (d < bestD) {
        best = c;
        bestD = d;
      }
    }
    const theirs = best.requestMessages[i]!.data.byteLength;
    const mine = i > 0 ? `same first ${i}, its message ${i + 1}: ${theirs} bytes` : `request ${theirs} bytes`;
    return `gRPC ${this.path} (${what}): no mock has this request; closest ${best.name} (same method, ${mine}, ${bestD} bytes differ)`;
  }
}
