import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseMockSet } from './parse.js';
import { decodeRowValue, encodeRowValue, packetBytes, queriesOf } from './postgres.js';
import { SQL_FILE } from './testkit.js';
import type { PostgresMock } from './types.js';

const mocks = parseMockSet(fs.readFileSync(SQL_FILE, 'utf8'), SQL_FILE) as PostgresMock[];

describe('Postgres helpers on the mux-sql fixture', () => {
  it('decodes b64: row values as bytes and leaves text as text', () => {
    const rows = mocks[5]!.spec.postgresresponses[0]!.data_row!;
    expect(rows.map((r) => r.row_values!.map(decodeRowValue))).toEqual([
      [new Uint8Array([0, 0, 0, 1]), 'Bubbles', '123.00'],
      [new Uint8Array([0, 0, 0, 2]), 'Bubbles', '123.00'],
    ]);
    expect(decodeRowValue(null)).toBeNull();
  });

  it('encodes column values the same way, so they decode back', () => {
    for (const v of [new Uint8Array([0, 0, 0, 2]), new TextEncoder().encode('Bubbles'), new TextEncoder().encode('b64:looks encoded'), new Uint8Array([0xff])]) {
      expect(decodeRowValue(encodeRowValue(v))).toEqual(encodeRowValue(v)!.startsWith('b64:') ? v : new TextDecoder().decode(v));
    }
    expect(encodeRowValue(new Uint8Array([0, 0, 0, 2]))).toBe('b64:AAAAAg==');
    expect(encodeRowValue(new TextEncoder().encode('123.00'))).toBe('123.00');
    expect(encodeRowValue(null)).toBeNull();
    // A text value that starts with a byte-order mark keeps it (TextDecoder drops it by default).
    const bom = Buffer.from('\ufeffplum', 'utf8');
    expect(Buffer.from(decodeRowValue(encodeRowValue(bom)) as string, 'utf8')).toEqual(bom);
  });

  it("gives a packet's raw bytes: the startup message of mock-0 is 102 bytes, protocol 3.0", () => {
    const bytes = packetBytes(mocks[0]!.spec.postgresrequests[0]!);
    expect(bytes.byteLength).toBe(102);
    const view = new DataView(bytes.buffer, bytes.byteOffset);
    expect([view.getUint32(0), view.getUint32(4)]).toEqual([102, 196608]);
    // A Parse packet holds Parse, Describe and Sync although its header says [P, D].
    const parse = packetBytes(mocks[2]!.spec.postgresrequests[0]!);
    expect(String.fromCharCode(parse[0]!)).toBe('P');
    expect(String.fromCharCode(parse[parse.byteLength - 5]!)).toBe('S');
  });

  it('lists the SQL of a set', () => {
    expect(mocks.flatMap(queriesOf)).toEqual([
      'INSERT INTO products(name, price) VALUES($1, $2) RETURNING id',
      'SELECT id, name, price FROM products LIMIT $1 OFFSET $2',
      'SELECT name, price FROM products WHERE id=$1',
    ]);
  });
});
