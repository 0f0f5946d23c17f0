import type { TimeSlice } from '../../../core/wait.js';
import type { GenericMock } from '../keploy/types.js';
import { isMysqlGreeting, mysqlAuthSeq, splitPackets, SSL_REQUEST_LENGTH, startsWithSslRequest, withoutQueryAttributes } from '../mysql/wire.js';
import { META_HOST, META_REQUEST_BYTES, META_RESPONSE_BYTES, META_SERVER_CLOSED, META_TRUNCATED, payloadBytes } from './keploy.js';

/**
 * The recorded exchanges of a mock set, for replay. Shared by every connection of a run, so a
 * request recorded several times is answered in recorded order across connections.
 *
 * Targets: a connection is answered from the mocks recorded for its `host:port`
 * (`metadata.host`); a target with none of its own is answered from the mocks that name no host
 * (recorded by Keploy itself), never from another target's.
 *
 * Matching is on bytes: the client's bytes since the last answer must begin with a recorded
 * request (several requests pipelined in one write are answered one after the other). When they
 * could still become a longer recorded request, the caller waits for more (`partial`). Among
 * recorded requests that match, the longest wins; among identical ones the first not yet used in
 * recorded order, and once all were used the last one again (a poll recorded as "pending, done"
 * replays "pending, done, done, ...").
 */

export interface GenericEntry {
  mock: GenericMock;
  name: string;
  request: Buffer;
  response: Buffer;
  serverClosed: boolean;
  /** The exchange went over the recording limit: its bytes are incomplete. */
  truncated?: { requestBytes: number; responseBytes: number };
}

export type GenericMatch =
  /** `consumed`: how many of the client's bytes it answers, when not the recorded request's length (MySQL authentication). */
  | { kind: 'match'; entry: GenericEntry; reused: boolean; consumed?: number }
  /** The bytes are a prefix of a longer recorded request; `complete` answers if no more come. */
  | { kind: 'partial'; complete?: GenericEntry }
  | { kind: 'miss'; closest?: Closest };

export interface Closest {
  name: string;
  /** How many leading bytes the client's bytes share with the mock's request. */
  samePrefix: number;
  request: Buffer;
}

interface Group {
  entries: GenericEntry[];
  next: number;
}

/** Request bytes as a Map key. */
const keyOf = (b: Buffer) => b.toString('latin1');

/** The key of the SSLRequests among the authentication groups (sequence 1, like a HandshakeResponse41 sent in clear). */
const SSL_REQUEST_KEY = 0x100;
/** A MySQL authentication packet's group: its sequence id, or SSL_REQUEST_KEY for an SSLRequest. */
const authKey = (packet: Buffer, seq: number | undefined) => (seq === 1 && packet.length === SSL_REQUEST_LENGTH && startsWithSslRequest(packet) ? SSL_REQUEST_KEY : seq);

class TargetMocks {
  readonly greetings: Group = { entries: [], next: 0 };
  readonly requests = new Map<string, Group>();
  readonly entries: GenericEntry[] = [];
  /** MySQL: the recorded authentication exchanges by the client packet's sequence id. */
  readonly mysqlAuth = new Map<number, Group>();
  mysql = false;
  private index?: RequestIndex;

  /** The requests indexed for matching (built on first use, after MySQL normalization). */
  get lookup(): RequestIndex {
    return (this.index ??= new RequestIndex([...this.requests.values()]));
  }

  add(entry: GenericEntry): void {
    this.index = undefined;
    this.entries.push(entry);
    if (entry.request.length === 0) {
      if (isMysqlGreeting(entry.response)) this.mysql = true;
      return void this.greetings.entries.push(entry);
    }
    const seq = authKey(entry.request, mysqlAuthSeq(entry.request));
    if (seq !== undefined) {
      const auth = this.mysqlAuth.get(seq) ?? { entries: [], next: 0 };
      auth.entries.push(entry);
      this.mysqlAuth.set(seq, auth);
    }
    const key = keyOf(entry.request);
    const group = this.requests.get(key) ?? { entries: [], next: 0 };
    group.entries.push(entry);
    this.requests.set(key, group);
  }

  /** MySQL: COM_QUERY requests compared without an empty query-attributes prefix, as the client's are. */
  normalizeMysql(): void {
    if (!this.mysql) return;
    this.index = undefined;
    const before = [...this.requests.values()];
    this.requests.clear();
    for (const group of before) {
      for (const entry of group.entries) entry.request = withoutQueryAttributes(entry.request);
      const key = keyOf(group.entries[0]!.request);
      const same = this.requests.get(key);
      if (same) same.entries.push(...group.entries);
      else this.requests.set(key, group);
    }
  }
}

export class GenericIndex {
  private readonly byHost = new Map<string, TargetMocks>();
  private readonly unlabelled = new TargetMocks();
  /** How many mocks it holds. */
  size = 0;

  constructor(mocks: readonly GenericMock[] = []) {
    for (const mock of mocks) this.addMock(mock);
    this.seal();
  }

  /** The index of a large set, built in slices that leave the event loop to others' work. */
  static async build(mocks: readonly GenericMock[], slice: TimeSlice): Promise<GenericIndex> {
    const index = new GenericIndex();
    for (const mock of mocks) {
      await slice.pause();
      index.addMock(mock);
    }
    index.seal();
    for (const target of [index.unlabelled, ...index.byHost.values()]) {
      await slice.pause();
      void target.lookup;
    }
    return index;
  }

  private addMock(mock: GenericMock): void {
    this.size++;
    const meta = mock.spec.metadata ?? {};
    const entry: GenericEntry = {
      mock,
      name: mock.name,
      request: payloadBytes(mock.spec.genericrequests ?? []),
      response: payloadBytes(mock.spec.genericresponses ?? []),
      serverClosed: meta[META_SERVER_CLOSED] === 'true',
      ...(meta[META_TRUNCATED] === 'true' ? { truncated: { requestBytes: Number(meta[META_REQUEST_BYTES] ?? 0), responseBytes: Number(meta[META_RESPONSE_BYTES] ?? 0) } } : {}),
    };
    const host = meta[META_HOST]?.toLowerCase();
    if (!host) this.unlabelled.add(entry);
    else {
      if (!this.byHost.has(host)) this.byHost.set(host, new TargetMocks());
      this.byHost.get(host)!.add(entry);
    }
  }

  /** Once every mock is in: MySQL requests compared as clients send them. */
  private seal(): void {
    for (const mocks of [this.unlabelled, ...this.byHost.values()]) mocks.normalizeMysql();
  }

  /** `host:port` of every target with mocks of its own. */
  get hosts(): string[] {
    return [...this.byHost.keys()];
  }

  /** The mocks that answer `target`, or undefined when there are none for it. */
  forTarget(target: { host: string; port: number }): TargetView | undefined {
    const mocks = this.byHost.get(`${target.host}:${target.port}`.toLowerCase()) ?? this.unlabelled;
    return mocks.entries.length > 0 ? new TargetView(mocks) : undefined;
  }
}

/** The matching operations over one target's mocks, for one connection. */
export class TargetView {
  /**
   * MySQL: the connection phase is over (an answer ending in OK or ERR was sent to a login
   * packet, or a command was answered): from then on a packet is matched by its bytes only, never
   * as authentication by its sequence id (attack f2-3: `DROP TABLE users` sent with sequence id 1
   * after the login got a recorded login's OK, and a strict replay passed).
   */
  private connected = false;

  constructor(private readonly mocks: TargetMocks) {}

  /** The greeting to send on connect (recorded with an empty request), if the server spoke first. */
  greeting(): { entry: GenericEntry; reused: boolean } | undefined {
    return take(this.mocks.greetings);
  }

  /** The server is MySQL or MariaDB (its recorded greeting says so). */
  get mysql(): boolean {
    return this.mocks.mysql;
  }

  /** MySQL: which connection phases were recorded, over TLS (an SSLRequest) and in clear (a HandshakeResponse41 as sequence 1). */
  get mysqlLogins(): { tls: boolean; clear: boolean } {
    return { tls: this.mocks.mysqlAuth.has(SSL_REQUEST_KEY), clear: this.mocks.mysqlAuth.has(1) };
  }

  /** MySQL: the connection phase is over (see `connected`). */
  get mysqlConnected(): boolean {
    return this.connected;
  }

  /** Matches the start of `bytes`; `final`: no more bytes will come (the client ended or went quiet). */
  match(bytes: Buffer, final: boolean): GenericMatch {
    const m = this.matchBytes(bytes, final);
    if (this.mocks.mysql && m.kind === 'match') {
      const { request, response } = m.entry;
      // Only COM_CHANGE_USER opens authentication again; before the phase ends, a command (sequence 0) or an OK/ERR ends it.
      if (isChangeUser(request)) this.connected = endsLogin(response);
      else if (!this.connected) this.connected = request[3] === 0 || endsLogin(response);
    }
    return m;
  }

  private matchBytes(bytes: Buffer, final: boolean): GenericMatch {
    // MySQL authentication (packets after the greeting with a sequence id other than 0) differs on
    // every run (connection attributes such as the client's pid; the password's scramble), and replay
    // checks no password: during the connection phase it matches the recorded exchange with the same
    // sequence id, whatever its bytes. After it, a packet is a command and matched by its bytes.
    if (this.mocks.mysql && !this.connected && bytes.length >= 4 && bytes[3] !== 0) {
      const length = bytes.readUIntLE(0, 3) + 4;
      if (bytes.length < length) return final ? { kind: 'miss' } : { kind: 'partial' };
      const group = this.mocks.mysqlAuth.get(authKey(bytes.subarray(0, length), bytes[3])!);
      const taken = group ? take(group) : undefined;
      if (taken) return { kind: 'match', entry: taken.entry, reused: taken.reused, consumed: length };
    }
    const lookup = this.mocks.lookup;
    const longest = lookup.longestPrefixOf(bytes);
    if (!final && lookup.extends(bytes)) return { kind: 'partial', ...(longest ? { complete: peek(longest) } : {}) };
    if (longest) {
      const taken = take(longest)!;
      return { kind: 'match', entry: taken.entry, reused: taken.reused };
    }
    const closest = lookup.closestTo(bytes);
    return closest ? { kind: 'miss', closest } : { kind: 'miss' };
  }
}

/** MySQL: COM_CHANGE_USER, which logs in again (its answer may ask for more authentication packets). */
const isChangeUser = (request: Buffer) => request.length >= 5 && request[3] === 0 && request[4] === 0x11;

/** MySQL: the server's answer ends authentication: its last packet is an OK (0x00) or an ERR (0xff). */
function endsLogin(response: Buffer): boolean {
  const last = splitPackets(response)?.at(-1);
  return last !== undefined && (last.payload[0] === 0x00 || last.payload[0] === 0xff);
}

/** How many recorded requests sharing the longest start with a miss are compared for the closest in length. */
const CLOSEST_SCAN = 256;
const FNV_PRIME = 0x01000193;

/**
 * One target's distinct recorded requests, indexed for the three questions replay asks of each
 * burst of client bytes, each answered without looking at every request:
 * - the longest request the bytes begin with: a hash of each request by its length, and the
 *   bytes' prefix hashed once up to each recorded length (seeded at random, checked byte for byte);
 * - whether a longer request begins with the bytes, and which request shares the longest start
 *   with them: the requests in byte order, where both are found next to the bytes' place.
 */
class RequestIndex {
  /** The distinct request lengths, ascending, each with its groups by hash. */
  private readonly lengths: Array<{ length: number; byHash: Map<number, Group[]> }> = [];
  /** The groups in byte order of their request, each with its place in recorded order. */
  private readonly sorted: Array<{ group: Group; request: Buffer; order: number }>;
  private readonly maxLength: number;
  private readonly seed = (Math.random() * 0x100000000) >>> 0;

  constructor(groups: readonly Group[]) {
    const byLength = new Map<number, Map<number, Group[]>>();
    this.sorted = groups.map((group, order) => ({ group, request: group.entries[0]!.request, order }));
    for (const { group, request } of this.sorted) {
      let byHash = byLength.get(request.length);
      if (!byHash) byLength.set(request.length, (byHash = new Map()));
      const h = this.hash(request, 0, request.length, this.seed);
      const list = byHash.get(h);
      if (list) list.push(group);
      else byHash.set(h, [group]);
    }
    this.lengths = [...byLength].map(([length, byHash]) => ({ length, byHash })).sort((a, b) => a.length - b.length);
    this.maxLength = this.lengths.at(-1)?.length ?? 0;
    this.sorted.sort((a, b) => Buffer.compare(a.request, b.request));
  }

  /** FNV-1a over `bytes[from, to)`, continuing from `h`. */
  private hash(bytes: Buffer, from: number, to: number, h: number): number {
    for (let i = from; i < to; i++) h = Math.imul(h ^ bytes[i]!, FNV_PRIME);
    return h >>> 0;
  }

  /** The group of the longest recorded request that `bytes` begins with. */
  longestPrefixOf(bytes: Buffer): Group | undefined {
    let longest: Group | undefined;
    let h = this.seed;
    let hashed = 0;
    for (const { length, byHash } of this.lengths) {
      if (length > bytes.length) break;
      h = this.hash(bytes, hashed, length, h);
      hashed = length;
      for (const group of byHash.get(h) ?? []) if (group.entries[0]!.request.compare(bytes, 0, length) === 0) longest = group;
    }
    return longest;
  }

  /** Where `bytes` would go in byte order: the first request not below them. */
  private place(bytes: Buffer): number {
    let [lo, hi] = [0, this.sorted.length];
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (Buffer.compare(this.sorted[mid]!.request, bytes) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** A recorded request longer than `bytes` begins with them (more bytes could still match it). */
  extends(bytes: Buffer): boolean {
    if (bytes.length >= this.maxLength) return false;
    // Those beginning with `bytes` come right after their place (after `bytes` itself, if recorded).
    for (let i = this.place(bytes); i < this.sorted.length; i++) {
      const { request } = this.sorted[i]!;
      if (request.length < bytes.length || request.compare(bytes, 0, bytes.length, 0, bytes.length) !== 0) return false;
      if (request.length > bytes.length) return true;
    }
    return false;
  }

  /**
   * The recorded request sharing the longest start with `bytes`; among those, the closest in
   * length (of the CLOSEST_SCAN nearest in byte order), then the first recorded.
   */
  closestTo(bytes: Buffer): Closest | undefined {
    const at = this.place(bytes);
    const shared = (i: number) => commonPrefix(bytes, this.sorted[i]!.request);
    // The longest shared start is found beside the bytes' place in byte order; those sharing as much lie around it.
    const best = Math.max(at > 0 ? shared(at - 1) : -1, at < this.sorted.length ? shared(at) : -1);
    if (best < 0) return undefined;
    const distance = (i: number) => Math.abs(this.sorted[i]!.request.length - bytes.length);
    let pick = -1;
    const consider = (i: number) => {
      if (pick < 0 || distance(i) < distance(pick) || (distance(i) === distance(pick) && this.sorted[i]!.order < this.sorted[pick]!.order)) pick = i;
    };
    for (let i = at - 1, n = 0; i >= 0 && n < CLOSEST_SCAN && shared(i) === best; i--, n++) consider(i);
    for (let i = at, n = 0; i < this.sorted.length && n < CLOSEST_SCAN && shared(i) === best; i++, n++) consider(i);
    const entry = this.sorted[pick]!.group.entries[0]!;
    return { name: entry.name, samePrefix: best, request: entry.request };
  }
}

function take(group: Group): { entry: GenericEntry; reused: boolean } | undefined {
  if (group.entries.length === 0) return undefined;
  if (group.next < group.entries.length) return { entry: group.entries[group.next++]!, reused: false };
  return { entry: group.entries[group.entries.length - 1]!, reused: true };
}

function peek(group: Group): GenericEntry {
  return group.entries[Math.min(group.next, group.entries.length - 1)]!;
}

export function commonPrefix(a: Buffer, b: Buffer): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
