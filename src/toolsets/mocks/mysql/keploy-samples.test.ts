import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { buildGenericMock, payloadBytes } from '../generic/keploy.js';
import { GenericIndex } from '../generic/matcher.js';
import { replayGeneric } from '../generic/replayer.js';
import { programSide } from '../kept-testing.js';
import { nextTurn } from '../../../core/wait.js';
import { mysqlFramingFor, withoutQueryAttributes } from './wire.js';
import { QUOTED_STRING_MAX } from '../keploy/emit.js';
import { parseMockSet } from '../keploy/parse.js';
import { serializeMockSet } from '../keploy/serialize.js';
import type { YamlMap, YamlValue } from '../keploy/types.js';
import { splitPackets } from './wire.js';
import { mysqlAsGenerics } from './keploy.js';

/** The MySQL documents of a mock set Keploy recorded (keploy/samples-java, spring-mysql-redis), unchanged. */
const text = readFileSync(path.join(import.meta.dirname, 'fixtures/keploy-samples-java-spring-mysql-redis.yaml'), 'utf8');
const mysqlDocs = text
  .split(/^---\n/m)
  .filter((d) => /^kind: MySQL$/m.test(d))
  .join('---\n');

const isMap = (v: YamlValue | undefined): v is YamlMap => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

/** Every `{payload_length, sequence_id}` Keploy wrote inside a value, in document order. */
function headers(v: YamlValue | undefined, out: Array<{ length: number; seq: number }> = []): Array<{ length: number; seq: number }> {
  if (Array.isArray(v)) v.forEach((x) => headers(x, out));
  else if (isMap(v)) {
    if (typeof v['payload_length'] === 'number' && typeof v['sequence_id'] === 'number') out.push({ length: v['payload_length'], seq: v['sequence_id'] });
    for (const x of Object.values(v)) headers(x, out);
  }
  return out;
}

const packet = (seq: number, payload: number[] | string) => {
  const p = typeof payload === 'string' ? Buffer.from(payload, 'latin1') : Buffer.from(payload);
  return Buffer.concat([Buffer.from([p.length & 0xff, p.length >> 8, p.length >> 16, seq]), p]);
};

describe("Keploy's own recording of MySQL 9 (keploy/samples-java spring-mysql-redis)", () => {
  const mocks = parseMockSet(mysqlDocs, 'mocks.yaml');

  it('reads and writes back byte for byte, but for the long double-quoted queries, as `!!binary` of the same text', () => {
    expect(mocks).toHaveLength(75);
    // keploy/emit.ts QUOTED_STRING_MAX: yaml.v3 reads the `!!binary` into the same Go string.
    let long = 0;
    const expected = mysqlDocs.replace(/^( +query: )(".*")$/gm, (line, head: string, quoted: string) => {
      if (quoted.length - 2 <= QUOTED_STRING_MAX) return line;
      long++;
      return `${head}!!binary ${Buffer.from(parseYaml(quoted) as string, 'utf8').toString('base64')}`;
    });
    expect(long).toBeGreaterThan(0);
    const written = serializeMockSet(mocks);
    expect(written).toBe(expected);
    // Read back, every packet gives the same bytes.
    const again = parseMockSet(written, 'mocks.yaml');
    again.forEach((m, i) => expect(mysqlAsGenerics(m), m.name).toEqual(mysqlAsGenerics(mocks[i]!)));
  });

  it('turns every structured packet back into bytes of the length and sequence id Keploy recorded', () => {
    let packets = 0;
    for (const m of mocks) {
      const spec = m.spec as YamlMap;
      const generics = mysqlAsGenerics(m);
      if (typeof generics === 'string') throw new Error(generics);
      for (const [list, field] of [
        ['requests', 'genericrequests'],
        ['responses', 'genericresponses'],
      ] as const) {
        const rebuilt = splitPackets(Buffer.concat(generics.map((g) => payloadBytes(g.spec[field] ?? []))));
        expect(rebuilt, `${m.name} ${list}`).toBeDefined();
        // Query attributes were kept in the bytes of the request (compared without them only at match time).
        const recorded = headers(spec[list]);
        let at = 0;
        for (const h of recorded) {
          while (at < rebuilt!.length && rebuilt![at]!.seq !== h.seq) at++;
          expect(rebuilt![at]?.payload.length, `${m.name} ${list} seq ${h.seq}`).toBe(h.length);
          at++;
          packets++;
        }
      }
    }
    expect(packets).toBeGreaterThan(700);
  });

  it('replays its connection phase as a greeting, then fast-auth success and OK to the HandshakeResponse41', () => {
    const steps = mysqlAsGenerics(mocks[0]!);
    if (typeof steps === 'string') throw new Error(steps);
    expect(steps).toHaveLength(2);
    const greeting = payloadBytes(steps[0]!.spec.genericresponses);
    expect(greeting.subarray(4, 11).toString('latin1')).toBe('\x0a9.0.1\0');
    expect(greeting.subarray(-22).toString('latin1')).toBe('caching_sha2_password\0');
    expect(payloadBytes(steps[1]!.spec.genericresponses)).toEqual(Buffer.concat([packet(2, [1, 3]), packet(3, [0, 0, 0, 2, 0, 0, 0])]));
  });

  it('rebuilds a result set whose closing packet Keploy 2 did not keep (FinalResponse data null) as an OK, as the client asked for no EOF', () => {
    const generics = mysqlAsGenerics(mocks.find((m) => JSON.stringify(m.spec).includes('SELECT @@session.transaction_isolation'))!);
    if (typeof generics === 'string') throw new Error(generics);
    const response = splitPackets(payloadBytes(generics[0]!.spec.genericresponses))!;
    expect(response.map((p) => p.seq)).toEqual([1, 2, 3, 4]);
    expect(response[2]!.payload.toString('latin1')).toBe('\x0fREPEATABLE-READ');
    expect(response[3]!.payload).toEqual(Buffer.from([0xfe, 0, 0, 2, 0, 0, 0]));
  });
});

describe('MySQL replay to a client with other capabilities', () => {
  const query = packet(0, '\x03\x00\x01SELECT 1');
  const column = (seq: number) => packet(seq, '\x03def\x00\x00\x00\x011\x00\x0c\x3f\x00\x01\x00\x00\x00\x08\x81\x00\x00\x00\x00');
  const deprecated = Buffer.concat([packet(1, [1]), column(2), packet(3, '\x011'), packet(4, [0xfe, 0, 0, 2, 0, 0, 0])]);
  const classic = Buffer.concat([packet(1, [1]), column(2), packet(3, [0xfe, 0, 0, 2, 0]), packet(4, '\x011'), packet(5, [0xfe, 0, 0, 2, 0])]);

  it('compares COM_QUERY without an empty query-attributes prefix', () => {
    expect(withoutQueryAttributes(query)).toEqual(packet(0, '\x03SELECT 1'));
    expect(withoutQueryAttributes(packet(0, '\x03SELECT 1'))).toEqual(packet(0, '\x03SELECT 1'));
    expect(withoutQueryAttributes(packet(1, '\x03\x00\x01x'))).toEqual(packet(1, '\x03\x00\x01x'));
  });

  it('matches a query recorded with query attributes to one sent without them, on MySQL targets only', () => {
    const at = new Date('2026-11-23T10:00:00Z');
    const greeting = packet(0, '\x0a8.0.1\0' + '\0'.repeat(40));
    const mocks = (withGreeting: boolean) =>
      new GenericIndex([
        ...(withGreeting ? [buildGenericMock({ request: Buffer.alloc(0), response: greeting, startedAt: at, endedAt: at }, 0)] : []),
        buildGenericMock({ request: query, response: deprecated, startedAt: at, endedAt: at }, 1),
      ]);
    const plain = packet(0, '\x03SELECT 1');
    expect(mocks(true).forTarget({ host: 'db', port: 3306 })!.match(plain, true)).toMatchObject({ kind: 'match' });
    expect(mocks(false).forTarget({ host: 'db', port: 3306 })!.match(plain, true)).toMatchObject({ kind: 'miss' });
  });

  it('a command packet that comes in two reads is waited for, then answered (a miss: an ERR packet naming the closest), not taken for a miss at its first half', async () => {
    const at = new Date('2026-11-23T10:00:00Z');
    const greeting = packet(0, '\x0a8.0.1\0' + '\0'.repeat(40));
    const index = new GenericIndex([
      buildGenericMock({ request: Buffer.alloc(0), response: greeting, startedAt: at, endedAt: at }, 0),
      buildGenericMock({ request: packet(0, '\x03SELECT 1'), response: deprecated, startedAt: at, endedAt: at }, 1),
    ]);
    const { client, written } = programSide();
    const misses: string[] = [];
    void replayGeneric({ target: { host: 'db', port: 3306 }, client }, index, { onMiss: (m) => misses.push(m.message) });
    const asked = packet(0, `\x03SELECT ${'2'.repeat(100)}`);
    client.push(asked.subarray(0, 30));
    await nextTurn();
    expect(misses, 'nothing missed at the first half').toEqual([]);
    expect(client.writableEnded, 'the connection stays open').toBe(false);
    client.push(asked.subarray(30));
    await nextTurn();
    expect(misses).toHaveLength(1);
    expect(misses[0]).toMatch(/^mysql connection to db:3306: no recorded mock for COM_QUERY "SELECT 2{100}"; closest \S+: COM_QUERY "SELECT 1"$/);
    const answer = Buffer.concat(written.slice(1));
    expect(answer[4]).toBe(0xff); // an ERR packet
    expect(client.writableEnded).toBe(false);
    client.destroy();
  });

  it('rewrites result-set framing between CLIENT_DEPRECATE_EOF and EOF packets, sequence ids renumbered', () => {
    expect(mysqlFramingFor(query, deprecated, 0)).toEqual(classic);
    expect(mysqlFramingFor(query, classic, 0x01000000)).toEqual(deprecated);
    expect(mysqlFramingFor(query, classic, 0)).toBe(classic);
    expect(mysqlFramingFor(query, deprecated, 0x01000000)).toBe(deprecated);
    // Two result sets (SERVER_MORE_RESULTS_EXISTS), and an OK answer, are kept apart.
    const two = Buffer.concat([
      packet(1, [1]),
      column(2),
      packet(3, [0xfe, 0, 0, 0x0a, 0]),
      packet(4, '\x011'),
      packet(5, [0xfe, 0, 0, 0x0a, 0]),
      packet(6, [1]),
      column(7),
      packet(8, [0xfe, 0, 0, 2, 0]),
      packet(9, [0xfe, 0, 0, 2, 0]),
    ]);
    const twoDeprecated = Buffer.concat([packet(1, [1]), column(2), packet(3, '\x011'), packet(4, [0xfe, 0, 0, 0x0a, 0, 0, 0]), packet(5, [1]), column(6), packet(7, [0xfe, 0, 0, 2, 0, 0, 0])]);
    expect(mysqlFramingFor(query, two, 0x01000000)).toEqual(twoDeprecated);
    expect(mysqlFramingFor(query, twoDeprecated, 0)).toEqual(two);
    const ok = packet(1, [0, 1, 5, 2, 0, 0, 0]);
    expect(mysqlFramingFor(query, ok, 0)).toBe(ok);
  });

  it('rewrites COM_STMT_PREPARE_OK definition blocks the same way', () => {
    const prepare = packet(0, '\x16SELECT ?');
    const okHead = packet(1, [0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0]);
    const withEof = Buffer.concat([okHead, column(2), packet(3, [0xfe, 0, 0, 2, 0]), column(4), packet(5, [0xfe, 0, 0, 2, 0])]);
    const without = Buffer.concat([okHead, column(2), column(3)]);
    expect(mysqlFramingFor(prepare, withEof, 0x01000000)).toEqual(without);
    expect(mysqlFramingFor(prepare, without, 0)).toEqual(withEof);
  });
});
