import type { PostgresMock, PostgresRequestPacket, PostgresResponsePacket } from './types.js';
import { exactUtf8 } from './utf8.js';

/**
 * Small readers for Keploy's Postgres (v1) mocks. The packets themselves are kept as Keploy
 * wrote them (see types.ts); a recorder that builds them is a later piece of work.
 */

/** Prefix Keploy puts on a `data_row` value that is not printable text: `'b64:AAAAAg=='` (an int4 2 in binary format). */
export const ROW_B64_PREFIX = 'b64:';

/** A `row_values` entry as bytes (`b64:` values), text, or null (SQL NULL). */
export function decodeRowValue(v: string | null | undefined): string | Uint8Array | null {
  if (v === null || v === undefined) return null;
  if (v.startsWith(ROW_B64_PREFIX)) return new Uint8Array(Buffer.from(v.slice(ROW_B64_PREFIX.length), 'base64'));
  return v;
}

/**
 * A column value as a `row_values` entry: printable UTF-8 text as is, anything else (binary-format
 * values, control characters, text that itself starts with `b64:`) as `b64:<base64>`.
 */
export function encodeRowValue(bytes: Uint8Array | null): string | null {
  if (bytes === null) return null;
  const text = exactUtf8(bytes);
  // eslint-disable-next-line no-control-regex
  if (text !== undefined && !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text) && !text.startsWith(ROW_B64_PREFIX)) return text;
  return ROW_B64_PREFIX + Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** The raw bytes of a packet (its base64 `payload`: every message of the packet), empty without one. */
export function packetBytes(packet: PostgresRequestPacket | PostgresResponsePacket): Uint8Array {
  return new Uint8Array(Buffer.from(packet.payload ?? '', 'base64'));
}

/** The SQL a mock's requests carry: extended-protocol `parse` queries and simple `query` strings, in order. */
export function queriesOf(mock: PostgresMock): string[] {
  const out: string[] = [];
  for (const packet of mock.spec.postgresrequests) {
    for (const p of packet.parse ?? []) if (typeof p.query === 'string' && p.query) out.push(p.query);
    if (typeof packet.query?.string === 'string' && packet.query.string) out.push(packet.query.string);
  }
  return out;
}
