/**
 * Converting column and parameter values between PostgreSQL's text and binary formats, for the
 * common built-in types. Needed because the recording client and the replaying client may ask
 * for different formats: pgx (the Go app behind Keploy's fixture) gets `int4` results in binary,
 * node-postgres and psycopg2 always in text. Output follows the server defaults the recordings
 * carry (DateStyle ISO, TimeZone UTC, extra_float_digits >= 1); a type not listed here cannot be
 * converted and the caller says so instead of sending bytes the client would misread.
 */

export const OID = {
  bool: 16,
  bytea: 17,
  char: 18,
  name: 19,
  int8: 20,
  int2: 21,
  int4: 23,
  text: 25,
  oid: 26,
  json: 114,
  xml: 142,
  float4: 700,
  float8: 701,
  unknown: 705,
  bpchar: 1042,
  varchar: 1043,
  date: 1082,
  timestamp: 1114,
  timestamptz: 1184,
  numeric: 1700,
  uuid: 2950,
  jsonb: 3802,
} as const;

/** Types whose binary form is their text's UTF-8 bytes. */
const SAME_BYTES = new Set<number>([OID.char, OID.name, OID.text, OID.json, OID.xml, OID.unknown, OID.bpchar, OID.varchar]);
const PG_EPOCH_MS = Date.UTC(2000, 0, 1);

/** Binary → text, or undefined when the type is not handled (or the bytes do not fit it). */
export function binaryToText(oid: number, bin: Buffer): Buffer | undefined {
  const text = binaryToString(oid, bin);
  return text === undefined ? undefined : Buffer.from(text, 'utf8');
}

function binaryToString(oid: number, b: Buffer): string | undefined {
  if (SAME_BYTES.has(oid)) return b.toString('utf8');
  const fixed: Record<number, number> = {
    [OID.bool]: 1,
    [OID.int2]: 2,
    [OID.int4]: 4,
    [OID.oid]: 4,
    [OID.int8]: 8,
    [OID.float4]: 4,
    [OID.float8]: 8,
    [OID.date]: 4,
    [OID.timestamp]: 8,
    [OID.timestamptz]: 8,
    [OID.uuid]: 16,
  };
  if (fixed[oid] !== undefined && b.length !== fixed[oid]) return undefined;
  switch (oid) {
    case OID.bool:
      return b[0] ? 't' : 'f';
    case OID.int2:
      return String(b.readInt16BE(0));
    case OID.int4:
      return String(b.readInt32BE(0));
    case OID.oid:
      return String(b.readUInt32BE(0));
    case OID.int8:
      return String(b.readBigInt64BE(0));
    case OID.float4:
      return floatText(b.readFloatBE(0), 9);
    case OID.float8:
      return floatText(b.readDoubleBE(0), 17);
    case OID.bytea:
      return `\\x${b.toString('hex')}`;
    case OID.uuid: {
      const h = b.toString('hex');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    }
    case OID.jsonb:
      return b[0] === 1 ? b.toString('utf8', 1) : undefined;
    case OID.date:
      return dateText(b.readInt32BE(0));
    case OID.timestamp:
    case OID.timestamptz:
      return timestampText(b.readBigInt64BE(0), oid === OID.timestamptz);
    case OID.numeric:
      return numericText(b);
    default:
      return undefined;
  }
}

/** Text → binary, or undefined when the type is not handled or the text does not parse. */
export function textToBinary(oid: number, textBytes: Buffer): Buffer | undefined {
  const t = textBytes.toString('utf8');
  if (SAME_BYTES.has(oid)) return Buffer.from(textBytes);
  const out = (n: number, write: (b: Buffer) => void) => {
    const b = Buffer.alloc(n);
    write(b);
    return b;
  };
  const int = /^\s*[+-]?\d+\s*$/.test(t) ? BigInt(t.trim()) : undefined;
  switch (oid) {
    case OID.bool:
      return /^(t|true|y|yes|on|1)$/i.test(t.trim()) ? Buffer.from([1]) : /^(f|false|n|no|off|0)$/i.test(t.trim()) ? Buffer.from([0]) : undefined;
    case OID.int2:
      return int === undefined ? undefined : out(2, (b) => b.writeInt16BE(Number(int)));
    case OID.int4:
      return int === undefined ? undefined : out(4, (b) => b.writeInt32BE(Number(int)));
    case OID.oid:
      return int === undefined ? undefined : out(4, (b) => b.writeUInt32BE(Number(int)));
    case OID.int8:
      return int === undefined ? undefined : out(8, (b) => b.writeBigInt64BE(int));
    case OID.float4:
    case OID.float8: {
      const n = /^\s*-?infinity\s*$/i.test(t) ? (t.includes('-') ? -Infinity : Infinity) : Number(t);
      if (Number.isNaN(n) && !/^\s*nan\s*$/i.test(t)) return undefined;
      return oid === OID.float4 ? out(4, (b) => b.writeFloatBE(n)) : out(8, (b) => b.writeDoubleBE(n));
    }
    case OID.bytea:
      return /^\\x([0-9a-fA-F]{2})*$/.test(t) ? Buffer.from(t.slice(2), 'hex') : undefined;
    case OID.uuid:
      return /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(t) ? Buffer.from(t.replace(/-/g, ''), 'hex') : undefined;
    case OID.jsonb:
      return Buffer.concat([Buffer.from([1]), textBytes]);
    default:
      return undefined;
  }
}

/** PostgreSQL's shortest-exact float output (extra_float_digits >= 1, the default since 12). */
function floatText(n: number, digits: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity';
  if (n === 0) return Object.is(n, -0) ? '-0' : '0';
  const shortest = digits === 9 ? shortestFloat4(n) : n.toString();
  const exp = Math.floor(Math.log10(Math.abs(Number(shortest))));
  // %g-style switch to exponent notation, as float8out does.
  if (exp < -4 || exp >= (digits === 9 ? 6 : 15)) {
    const [mantissa, e] = Number(shortest).toExponential().split('e');
    const sign = e!.startsWith('-') ? '-' : '+';
    return `${mantissa}e${sign}${e!.replace(/^[+-]/, '').padStart(2, '0')}`;
  }
  return shortest;
}

/** The fewest digits that read back as the same float4 (JS only knows float8's shortest form). */
function shortestFloat4(n: number): string {
  for (let p = 1; p < 9; p++) {
    const candidate = Number(n.toPrecision(p));
    if (Math.fround(candidate) === n) return candidate.toString();
  }
  return Number(n.toPrecision(9)).toString();
}

function dateText(days: number): string {
  if (days === 0x7fffffff) return 'infinity';
  if (days === -0x80000000) return '-infinity';
  return new Date(PG_EPOCH_MS + days * 86_400_000).toISOString().slice(0, 10);
}

function timestampText(micros: bigint, withZone: boolean): string {
  if (micros === 0x7fffffffffffffffn) return 'infinity';
  if (micros === -0x8000000000000000n) return '-infinity';
  const ms = micros / 1000n - (micros % 1000n < 0n ? 1n : 0n);
  const iso = new Date(PG_EPOCH_MS + Number(ms)).toISOString();
  const frac = (((micros % 1_000_000n) + 1_000_000n) % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${frac ? `.${frac}` : ''}${withZone ? '+00' : ''}`;
}

/** The binary numeric format: int16 ndigits, weight, sign, dscale, then base-10000 digits. */
function numericText(b: Buffer): string | undefined {
  if (b.length < 8) return undefined;
  const ndigits = b.readInt16BE(0);
  const weight = b.readInt16BE(2);
  const sign = b.readUInt16BE(4);
  const dscale = b.readInt16BE(6);
  if (sign === 0xc000) return 'NaN';
  if (sign === 0xd000) return 'Infinity';
  if (sign === 0xf000) return '-Infinity';
  if (b.length !== 8 + ndigits * 2) return undefined;
  const digits = Array.from({ length: ndigits }, (_, i) => b.readInt16BE(8 + i * 2));
  let int = '';
  for (let w = 0; w <= weight; w++) int += String(digits[w] ?? 0).padStart(4, '0');
  int = int.replace(/^0+/, '') || '0';
  let frac = '';
  for (let w = weight + 1; frac.length < dscale; w++) frac += String(w >= 0 ? (digits[w] ?? 0) : 0).padStart(4, '0');
  frac = frac.slice(0, dscale);
  return `${sign === 0x4000 ? '-' : ''}${int}${dscale > 0 ? `.${frac}` : ''}`;
}

/** A value converted to `to` format (0 text, 1 binary), or undefined when that is not possible. */
export function convertValue(oid: number, value: Buffer, from: number, to: number): Buffer | undefined {
  if (from === to) return value;
  try {
    return to === 0 ? binaryToText(oid, value) : textToBinary(oid, value);
  } catch {
    return undefined; // out of range for the type (a text '99999999999' as int4)
  }
}

/**
 * A parameter as a comparable string: its text form when it has one (so `'123'` sent as text and
 * the binary int4 123 match), else the format and hex bytes.
 */
export function parameterKey(value: Buffer | null, format: number, oid: number | undefined): string {
  if (value === null) return 'NULL';
  if (format === 0) return `'${value.toString('utf8')}'`;
  const text = oid === undefined ? undefined : convertValue(oid, value, 1, 0);
  return text ? `'${text.toString('utf8')}'` : `binary:${value.toString('hex')}`;
}
