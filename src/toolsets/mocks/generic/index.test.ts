import { describe, expect, it } from 'vitest';
import { TimeSlice } from '../../../core/wait.js';
import { parseMockSet } from '../keploy/parse.js';
import { genericAndMysql } from './index.js';
import { longestBlock } from '../../../../test/helpers/stall.js';

/** One MySQL mock as Keploy writes it: a request and a response entry (YAML flow mappings). */
const mysqlMock = (name: string, request: string, response: string) => `version: api.keploy.io/v1beta1
kind: MySQL
name: ${name}
spec:
    metadata: {type: mocks, host: "127.0.0.1:3306"}
    requests:
        - ${request}
    responses:
        - ${response}
    reqtimestampmock: 2026-11-27T03:17:27.217Z
    restimestampmock: 2026-11-27T03:17:27.219Z
`;
const QUERY = '{header: {header: {payload_length: 9, sequence_id: 0}, packet_type: COM_QUERY}, message: {command: 3, query: SELECT 1}}';
const OK = '{header: {header: {payload_length: 7, sequence_id: 1}, packet_type: OK}, message: "AAAAAgAAAA=="}';
const textResult = (columnCount: number, columns: number, rows: number) => {
  const column = (i: number) => `{header: {payload_length: 20, sequence_id: ${(2 + i) & 0xff}}, catalog: def, name: c${i}, type: 253}`;
  const row = '{header: {payload_length: 1, sequence_id: 2}, values: []}';
  return `{header: {header: {payload_length: 1, sequence_id: 1}, packet_type: TextResultSet}, message: {columnCount: ${columnCount}, columns: [${Array.from({ length: columns }, (_, i) => column(i)).join(', ')}], rows: [${Array(rows).fill(row).join(', ')}], FinalResponse: {data: "/gAAAgA=", type: EOF}}}`;
};
const execute = (parameterCount: number) =>
  `{header: {header: {payload_length: 11, sequence_id: 0}, packet_type: COM_STMT_EXECUTE}, message: {status: 23, statement_id: 1, flags: 0, iteration_count: 1, parameter_count: ${parameterCount}, new_params_bind_flag: 1, parameters: []}}`;

const setOf = (...mocks: string[]) => parseMockSet(mocks.join('---\n'), 'mocks.yaml');

describe('MySQL mocks turned into bytes for replay (attack 18r K3)', () => {
  it('leaves out, quickly and with a warning naming it, a mock whose counts would size its bytes past the set', async () => {
    const cases: [string, RegExp][] = [
      [mysqlMock('wide', QUERY, textResult(3_000_000, 0, 3)), /^MySQL mock wide: responses\[0\]: a TextResultSet message: columnCount is not an integer 0-4096$/],
      [mysqlMock('unlisted', QUERY, textResult(4000, 0, 1)), /^MySQL mock unlisted: responses\[0\]: a TextResultSet message: columnCount 4000 is not the 0 column\(s\) listed$/],
      [mysqlMock('params', execute(2 ** 53 - 1), OK), /^MySQL mock params: requests\[0\]: a COM_STMT_EXECUTE message: parameter_count is not an integer 0-65535$/],
      // 4096 listed columns and 3000 short rows: 12 MB of NULLs from a set of a few hundred KB.
      [mysqlMock('long', QUERY, textResult(4096, 4096, 3000)), /^MySQL mock long: responses\[0\]: a TextResultSet message: rows\[\d+\] makes it more than the \d+ bytes it may have$/],
    ];
    for (const [text, why] of cases) {
      const mocks = setOf(text, mysqlMock('fine', QUERY, textResult(1, 1, 2)));
      const warnings: string[] = [];
      global.gc?.();
      const heap = process.memoryUsage().heapUsed;
      const began = performance.now();
      const out = await genericAndMysql(mocks, new TimeSlice(10), (w) => warnings.push(w));
      // Bounded work (the last case builds its first MiB of rows): well under a second alone, more beside other suites.
      expect(performance.now() - began).toBeLessThan(5000);
      expect(process.memoryUsage().heapUsed - heap).toBeLessThan(64 * 1024 * 1024);
      expect(out.map((g) => g.name)).toEqual(['fine']);
      expect(warnings).toHaveLength(1);
      const [, first] = /^1 MySQL mock\(s\) cannot be replayed and were left out; the first: (.*)$/.exec(warnings[0]!) ?? [];
      expect(first).toMatch(why);
    }
  });

  it('keeps a mock at the bounds: 4096 listed columns, 65535 parameters', async () => {
    const warnings: string[] = [];
    const out = await genericAndMysql(setOf(mysqlMock('wide', QUERY, textResult(4096, 4096, 2)), mysqlMock('params', execute(65535), OK)), new TimeSlice(10), (w) => warnings.push(w));
    expect(warnings).toEqual([]);
    expect(out.map((g) => g.name)).toEqual(['wide', 'params']);
  });

  it('gives the loop turns while it converts a large set', async () => {
    // 40 mocks of about 400 KB each (4096 columns of NULLs, 100 rows): seconds of work in all.
    const [one] = setOf(mysqlMock('m', QUERY, textResult(4096, 4096, 100)));
    const mocks = Array.from({ length: 40 }, (_, i) => ({ ...one!, name: `m${i}` }));
    const { longest, turns, value: out } = await longestBlock(() => genericAndMysql(mocks, new TimeSlice(10), () => {}), { everyMs: 1 });
    expect(out).toHaveLength(40);
    // In one go (the slicing disabled) the conversion held the loop 2.7 s here, in which the 1 ms probe got no turn; in
    // slices, 38 here, and more on a slower host, never fewer. Not a bound on the longest block: a busy host stretches that.
    expect(turns, `longest block ${longest.toFixed(0)} ms`).toBeGreaterThan(7);
  });
});
