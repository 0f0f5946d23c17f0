import { z } from 'zod';
import { collectionStyle, markStyle } from './style.js';
import { exactUtf8 } from './utf8.js';

/**
 * Keploy mock documents as Keploy writes them to `<path>/<mock-set>/mocks.yaml`, as zod schemas:
 * each schema is both the validator parse.ts applies to a document and, through `z.output`, the
 * TypeScript type of a parsed mock.
 *
 * Property names are the YAML keys, byte for byte: Keploy's Go structs decide them, and they are
 * not uniform. `HTTPSchema` has explicit tags (`proto_major`, `status_code`, `reqTimestampMock`),
 * while `PostgresSpec` and `GenericSchema` have none on their lists and timestamps, so yaml.v3
 * lowercases the Go field names: `postgresrequests`, `genericrequests`, `reqtimestampmock`.
 *
 * The schemas read a document the way Keploy (Go, yaml.v3) reads it: a plain scalar in a Go
 * string field is that text (`Content-Length: 164` is "164", `1.10` is "1.10"); a null or
 * missing field is the Go zero value (`""`, `0`, `{}`, `[]`, the zero time).
 *
 * Every modeled object carries an `extra` bag: keys this module does not model (newer or older
 * Keploy fields, other kinds' fields) are kept there verbatim and written back, so a
 * parse/serialize round trip loses nothing.
 */

/** A YAML value as read from a mock file (core schema; `!!binary` becomes bytes). */
export type YamlValue = string | number | bigint | boolean | null | Uint8Array | YamlValue[] | YamlMap;
export interface YamlMap {
  [key: string]: YamlValue;
}
/** Keys of a modeled object that this module does not model, in file order. */
export type Extra = Record<string, YamlValue>;

/** `models.V1Beta1`, what Keploy writes in `version:` (v1beta2 and an enterprise version exist too). */
export const KEPLOY_MOCK_VERSION = 'api.keploy.io/v1beta1';
/** Go's zero `time.Time` as yaml.v3 writes it; Keploy leaves `req.timestamp`/`resp.timestamp` of mocks at this. */
export const ZERO_TIME = '0001-01-01T00:00:00Z';
/** The formats yaml.v3's `parseTimestamp` tries (Go layouts with 1-or-2-digit fields). */
export const TIMESTAMP = /^\d{4}-\d{1,2}-\d{1,2}(?:(?:[Tt]\d{1,2}:\d{1,2}:\d{1,2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2}))|(?: \d{1,2}:\d{1,2}:\d{1,2}(?:\.\d+)?))?$/;
const TIME_ERROR = 'expected a timestamp like 2024-06-05T16:53:56.841481379+05:30';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The kinds this module models field by field (always counted, see `KindCounts`). */
export const MODELED_KINDS = ['Http', 'Postgres', 'Generic'] as const;
export type ModeledKind = (typeof MODELED_KINDS)[number];
/**
 * Other kinds Keploy writes (`models.Kind` constants): Redis is modeled too, the others are kept
 * verbatim (spec as plain YAML data) so a real mock set that also holds, say, Mongo mocks can be
 * listed and read; any other `kind` is an error.
 */
export const PASS_THROUGH_KINDS = ['Http2', 'Redis', 'MySQL', 'PostgresV2', 'gRPC', 'Mongo', 'DNS', 'SQL'] as const;
export type PassThroughKind = (typeof PASS_THROUGH_KINDS)[number];
export type MockKind = ModeledKind | PassThroughKind;

// ---------------------------------------------------------------- what the YAML reader gives the schemas

/**
 * A plain scalar that is not a string (a number or boolean), as parse.ts hands it to the schemas:
 * a Go string field takes its text, any other field its value.
 */
export class Plain {
  constructor(
    readonly value: number | bigint | boolean,
    readonly source: string,
  ) {}
}

/** Sets a key without ever touching a prototype (`__proto__` is just a key here). */
export function defineKey(target: object, key: string, v: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value: v, enumerable: true, writable: true, configurable: true });
  else (target as Record<string, unknown>)[key] = v;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Data kept verbatim: `Plain` scalars become their values (a collection is copied, style and all, only if it holds one). */
export function plainData(v: unknown): YamlValue {
  if (v instanceof Plain) return v.value;
  if (Array.isArray(v) || isPlainObject(v)) {
    let out: Record<string, unknown> | unknown[] | undefined;
    for (const key of Object.keys(v)) {
      const item = (v as Record<string, unknown>)[key];
      const data = plainData(item);
      if (data === item) continue;
      if (!out) {
        out = Array.isArray(v) ? [...v] : {};
        if (!Array.isArray(v)) for (const k of Object.keys(v)) defineKey(out, k, v[k]);
        markStyle(out, collectionStyle(v) === 'flow');
      }
      defineKey(out, key, data);
    }
    return (out ?? v) as YamlValue;
  }
  return v as YamlValue;
}

// ---------------------------------------------------------------- Go fields

/**
 * A scalar's text for a Go string field. `!!binary` holding UTF-8 is that text, as yaml.v3 reads
 * `!!binary` into a Go string: emit.ts writes long text that would need double quotes that way.
 */
const text = (v: unknown) => (v instanceof Plain ? v.source : v === null ? '' : v instanceof Uint8Array ? (exactUtf8(v) ?? v) : v);

/** A Go string: a scalar's text. */
const goString = z.preprocess(text, z.string({ error: (iss) => (iss.input instanceof Uint8Array ? 'expected text' : 'expected a scalar') }));
const nonEmpty = z.preprocess(text, z.string({ error: 'expected a scalar' }).min(1, 'must not be empty'));
/** A Go int (within JavaScript's safe integers). */
const goInt = z.preprocess(
  (v) => (v === null ? 0 : v instanceof Plain ? (typeof v.value === 'bigint' ? Number(v.value) : v.value) : v),
  z.int({ error: (iss) => (iss.code === 'too_big' || iss.code === 'too_small' ? 'integer too large (the limit is 2^53)' : 'expected an integer') }),
);
/** A Go `time.Time` as yaml.v3 writes it, kept as its text (nanoseconds and zone); empty is the zero time. */
const timestamp = z.preprocess((v) => (text(v) === '' ? ZERO_TIME : text(v)), z.string({ error: TIME_ERROR }).regex(TIMESTAMP, TIME_ERROR));
const base64 = z.preprocess(text, z.string({ error: 'expected base64 data' }).regex(BASE64, 'expected base64 data'));
/** Any YAML data, kept as it is. */
const data = z.any().transform(plainData);

/**
 * A mapping read in file order: `schemaOf(key)` reads a key's value, or, when it gives nothing,
 * the value is kept as data. Null is the empty mapping. (zod's own records and objects drop a
 * key named `__proto__`; here it is a key like any other.)
 */
function mapping<T>(expected: string, schemaOf: (key: string) => z.ZodType | undefined) {
  return z.any().transform((input, ctx): T => {
    if (input === null) return markStyle({}, false) as T;
    if (!isPlainObject(input)) {
      ctx.addIssue({ code: 'custom', message: `expected ${expected}`, input, params: { got: true } });
      return z.NEVER;
    }
    const out = {};
    for (const key of Object.keys(input)) {
      const schema = schemaOf(key);
      if (!schema) {
        defineKey(out, key, plainData(input[key]));
        continue;
      }
      const r = schema.safeParse(input[key]);
      if (r.success) defineKey(out, key, r.data);
      else for (const issue of r.error.issues) ctx.addIssue({ ...issue, path: [key, ...issue.path] } as never);
    }
    return markStyle(out, collectionStyle(input) === 'flow') as T;
  });
}

/** A Go `map[string]string` (null is empty). */
const strMap = mapping<Record<string, string>>('a mapping of strings', () => goString);
const seqOf = <T extends z.ZodType>(item: T) => z.preprocess((v) => (v === null ? [] : v), z.array(item, { error: 'expected a sequence' }));

/**
 * A Keploy struct: the keys of `shape` read by their schemas, every other key kept verbatim (in
 * file order) in `extra`, omitted when there are none.
 */
function keployObject<S extends z.ZodRawShape>(shape: S, expected: string) {
  const known = new Set(Object.keys(shape));
  return z.preprocess(
    (input) => {
      if (input === null) return {};
      if (!isPlainObject(input) || Object.keys(input).every((key) => known.has(key))) return input;
      const out: Record<string, unknown> = {};
      const extra: Extra = {};
      for (const key of Object.keys(input)) defineKey(known.has(key) ? out : extra, key, known.has(key) ? input[key] : plainData(input[key]));
      if (Object.keys(extra).length > 0) out.extra = extra;
      return out;
    },
    z.object({ ...shape, extra: z.custom<Extra>().optional() }, { error: `expected ${expected}` }),
  );
}

/** A pgproto3 message: the keys of `shape` read (and checked), every other key kept as data, in file order. */
function pgMessage<S extends z.ZodRawShape>(shape: S = {} as S) {
  return mapping<PgMessage & { [K in keyof S]?: z.output<S[K]> }>('a mapping', (key) => (Object.hasOwn(shape, key) ? (shape[key] as z.ZodType) : undefined));
}

/** Drops the fields Keploy omits when empty (`omitempty`), so a round trip writes what Keploy wrote. */
function omitEmpty<T extends object>(o: T, isEmpty: Partial<Record<keyof T, (v: never) => boolean>>): T {
  for (const [key, empty] of Object.entries(isEmpty) as Array<[keyof T, (v: unknown) => boolean]>) if (o[key] === undefined || empty(o[key])) delete o[key];
  return o;
}
const isZeroTime = (t: string) => t === ZERO_TIME;

// ---------------------------------------------------------------- Http

/**
 * A body as Keploy stores it: the text (Go `string(body)`), or, when the bytes are not valid
 * UTF-8, the bytes themselves. yaml.v3 writes such a Go string as a `!!binary` base64 scalar and
 * reads it back into the same bytes; this module does the same.
 */
export type HttpBody = string | Uint8Array;
const body = z.preprocess(text, z.union([z.string(), z.custom<Uint8Array>((v) => v instanceof Uint8Array)], { error: 'expected a scalar' })).default('');

/** `models.HTTPReq`; `extra`: `body_ref`, `binary`, `form`, unknown keys. */
const HttpRequestSchema = keployObject(
  {
    method: nonEmpty,
    proto_major: goInt.default(0),
    proto_minor: goInt.default(0),
    /** The request target as it was on the wire (Go `req.URL.String()`): `/path?query` for a direct call. */
    url: goString,
    /** Query parameters, several values of one name joined with `", "` (omitted when empty). */
    url_params: strMap.optional(),
    /** Canonical header names (`Content-Type`); several values joined with `","`. Go keeps `Host` out of it. */
    header: strMap.default({}),
    body,
    /** Go zero time (`0001-01-01T00:00:00Z`) in mocks. */
    timestamp: timestamp.default(ZERO_TIME),
  },
  'a mapping (method, url, header, body, ...)',
).transform((r) => omitEmpty(r, { url_params: (p: object) => Object.keys(p).length === 0 }));
export type HttpRequest = z.output<typeof HttpRequestSchema>;

/** `models.HTTPResp`; `extra`: `body_skipped`, `body_size`, `stream_type`, `stream_events`, `binary`, unknown keys. */
const HttpResponseSchema = keployObject(
  {
    status_code: goInt.refine((n) => n >= 100 && n <= 999, { error: (iss) => `${String(iss.input)} is not an HTTP status code (100-999)` }),
    header: strMap.default({}),
    body,
    /** Keploy's recorder leaves it empty, and the proto version and timestamp at their zero values. */
    status_message: goString.default(''),
    proto_major: goInt.default(0),
    proto_minor: goInt.default(0),
    timestamp: timestamp.default(ZERO_TIME),
  },
  'a mapping (status_code, header, body, ...)',
);
export type HttpResponse = z.output<typeof HttpResponseSchema>;

/** `models.HTTPSchema`; `extra`: `assertions`, `app_port`, unknown keys. */
const HttpSpecSchema = keployObject(
  {
    /** `{name: Http, operation: <method>, type: HTTP_CLIENT}` from Keploy's recorder. */
    metadata: strMap.default({}),
    req: HttpRequestSchema,
    resp: HttpResponseSchema,
    /** Always `[]` in recorded mocks; parsing fills `[]` when absent (Keploy always writes it). */
    objects: seqOf(data).default([]).optional(),
    /** Unix seconds (`time.Now().Unix()`); omitted by Keploy when 0. */
    created: goInt.optional(),
    reqTimestampMock: timestamp.optional(),
    resTimestampMock: timestamp.optional(),
  },
  'a mapping',
).transform((s) => omitEmpty(s, { created: (n: number) => n === 0, reqTimestampMock: isZeroTime, resTimestampMock: isZeroTime }));
export type HttpSpec = z.output<typeof HttpSpecSchema>;

// ---------------------------------------------------------------- Postgres (v1 packets)

/**
 * A pgproto3 message object as Keploy writes it: every key kept; the typed ones are checked when
 * parsing (and coerced the way yaml.v3 reads a Go string: a plain `2` is the text "2").
 */
export interface PgMessage {
  [key: string]: unknown;
}
const pgEmpty = pgMessage();
/** `pgproto3.Parse`: `query` is the SQL text. */
const PgParse = pgMessage({ name: goString, query: goString, parameter_oids: seqOf(data) });
/** `pgproto3.Bind`: `parameters` holds each parameter's bytes as a list of byte values. */
const PgBind = pgMessage({ parameters: seqOf(data), result_format_codes: seqOf(data) });
/** One row; a value that is not printable text is written as `'b64:<base64>'` (see postgres.ts). */
const PgDataRow = pgMessage({ row_values: seqOf(z.preprocess((v) => (v === null ? v : text(v)), z.string({ error: 'expected a scalar' }).nullable())) });
const PgRowDescription = pgMessage({ fields: seqOf(pgMessage({ field_name: goString })) });
export type PgParse = z.output<typeof PgParse>;
export type PgBind = z.output<typeof PgBind>;
export type PgDataRow = z.output<typeof PgDataRow>;
export type PgRowDescription = z.output<typeof PgRowDescription>;

const pgPacketCommon = {
  /** Message type letters of the packet, e.g. `[P, D]`, `["1", t, T, Z]` (Keploy omits some, e.g. Sync). */
  header: seqOf(goString).optional(),
  /** `StartupRequest`, `ClientRequest` or `ServerResponse`. */
  identifier: goString.optional(),
  /** Keploy writes a constant here (102 in the fixture); not the packet's length. */
  length: goInt.optional(),
  /** Base64 of the packet's raw bytes, all messages included. */
  payload: base64.optional(),
  /** The last message's type byte (e.g. 90 for `Z`). */
  msg_type: goInt.optional(),
  /** `int32`, always written (5 = MD5 during the startup exchange). */
  auth_type: goInt.default(0),
};

/** `models.Backend` (what the client sent); `extra`: every other field of Keploy's struct and unknown keys, verbatim. */
const PostgresRequestPacketSchema = keployObject(
  {
    ...pgPacketCommon,
    startup_message: pgMessage({ protocolversion: goInt, parameters: strMap }).optional(),
    password_message: pgMessage({ password: goString }).optional(),
    parse: seqOf(PgParse).optional(),
    bind: seqOf(PgBind).optional(),
    describe: pgEmpty.optional(),
    execute: seqOf(pgEmpty).optional(),
    /** `pgproto3.Query` (simple query protocol). */
    query: pgMessage({ string: goString }).optional(),
    sync: pgEmpty.optional(),
    terminate: pgEmpty.optional(),
  },
  'a mapping (a Postgres request packet)',
);
export type PostgresRequestPacket = z.output<typeof PostgresRequestPacketSchema>;

/** `models.Frontend` (what the server answered). */
const PostgresResponsePacketSchema = keployObject(
  {
    ...pgPacketCommon,
    authentication_ok: pgEmpty.optional(),
    /** Keploy writes `{salt: [0, 0, 0, 0]}` on every response (a Go zero-value quirk). */
    authentication_md5_password: pgMessage({ salt: seqOf(goInt) }).optional(),
    backend_key_data: pgMessage({ process_id: goInt, secret_key: goInt }).optional(),
    command_complete: seqOf(pgMessage({ command_tag_type: goString })).optional(),
    data_row: seqOf(PgDataRow).optional(),
    error_response: pgEmpty.optional(),
    parameter_description: pgMessage({ parameteroids: seqOf(goInt) }).optional(),
    parameter_status: seqOf(pgMessage({ name: goString, value: goString })).optional(),
    ready_for_query: pgMessage({ txstatus: goInt }).optional(),
    row_description: PgRowDescription.optional(),
  },
  'a mapping (a Postgres response packet)',
);
export type PostgresResponsePacket = z.output<typeof PostgresResponsePacketSchema>;

/** `models.PostgresSpec`: `metadata` is `{type: config}` in the fixture; the timestamps are always written. */
const PostgresSpecSchema = keployObject(
  {
    metadata: strMap.default({}),
    postgresrequests: seqOf(PostgresRequestPacketSchema).default([]),
    postgresresponses: seqOf(PostgresResponsePacketSchema).default([]),
    reqtimestampmock: timestamp.default(ZERO_TIME),
    restimestampmock: timestamp.default(ZERO_TIME),
  },
  'a mapping',
);
export type PostgresSpec = z.output<typeof PostgresSpecSchema>;

// ---------------------------------------------------------------- Generic and Redis

/** `models.OutputBinary`: `type` is `string` or `binary` (then `data` is base64). */
const GenericMessageSchema = keployObject({ type: goString.default(''), data: goString.default('') }, 'a mapping (type, data)').superRefine((m, ctx) => {
  if (m.type === 'binary' && !BASE64.test(m.data)) ctx.addIssue({ code: 'custom', path: ['data'], message: 'expected base64 data' });
});
export type GenericMessage = z.output<typeof GenericMessageSchema>;

/** `models.Payload`: `origin` is `client` or `server`. */
const GenericPayloadSchema = keployObject({ origin: goString.default(''), message: seqOf(GenericMessageSchema).default([]) }, 'a mapping (origin, message)');
export type GenericPayload = z.output<typeof GenericPayloadSchema>;

/**
 * `models.GenericSchema`, and `models.RedisSchema` as Keploy's Redis parser writes it (Generic's
 * payloads under `redisrequests`/`redisresponses`, one command and its reply per mock): lists and
 * timestamps have no YAML tags, hence lowercase keys. `extra`: `noise`, unknown keys.
 */
function payloadSpec<P extends 'generic' | 'redis'>(prefix: P) {
  const payloads = seqOf(GenericPayloadSchema).default([]);
  const lists = { [`${prefix}requests`]: payloads, [`${prefix}responses`]: payloads } as Record<`${P}requests` | `${P}responses`, typeof payloads>;
  return keployObject({ metadata: strMap.default({}), ...lists, reqtimestampmock: timestamp.default(ZERO_TIME), restimestampmock: timestamp.default(ZERO_TIME) }, 'a mapping');
}
const GenericSpecSchema = payloadSpec('generic');
const RedisSpecSchema = payloadSpec('redis');
export type GenericSpec = z.output<typeof GenericSpecSchema>;
export type RedisSpec = z.output<typeof RedisSpecSchema>;

// ---------------------------------------------------------------- documents

/** A kind Keploy writes that this module does not model: its spec kept as plain YAML data. */
const YamlMapSchema = mapping<YamlMap>('a mapping', () => undefined);

function mockDocument<K extends string, S extends z.ZodType>(kind: K, spec: S) {
  return keployObject(
    {
      version: nonEmpty,
      kind: z.literal(kind),
      /** `mock-0`, `mock-1`, ... in file order (Keploy records them as `mocks` and numbers them on write). */
      name: nonEmpty,
      spec,
      /** Top-level `connectionId` (newer Keploy; the fixtures' Postgres mocks have `"0"`). */
      connectionId: goString.optional(),
    },
    'a mock document (a mapping with version, kind, name and spec)',
  ).transform((m) => omitEmpty(m as { connectionId?: string }, { connectionId: (id: string) => id === '' }) as typeof m);
}

type PassThroughSchemaKind = Exclude<PassThroughKind, 'Redis'>;
/** The schema of a document of each kind; `extra` of a document: `curl`, `async`, `noise`, `last_updated` in newer Keploy. */
export const MOCK_SCHEMAS = {
  Http: mockDocument('Http', HttpSpecSchema),
  Postgres: mockDocument('Postgres', PostgresSpecSchema),
  Generic: mockDocument('Generic', GenericSpecSchema),
  Redis: mockDocument('Redis', RedisSpecSchema),
  ...(Object.fromEntries(PASS_THROUGH_KINDS.filter((k) => k !== 'Redis').map((k) => [k, mockDocument(k, YamlMapSchema)])) as {
    [K in PassThroughSchemaKind]: ReturnType<typeof mockDocument<K, typeof YamlMapSchema>>;
  }),
};

export type HttpMock = z.output<typeof MOCK_SCHEMAS.Http>;
export type PostgresMock = z.output<typeof MOCK_SCHEMAS.Postgres>;
export type GenericMock = z.output<typeof MOCK_SCHEMAS.Generic>;
export type RedisMock = z.output<typeof MOCK_SCHEMAS.Redis>;
export type PassThroughMock = z.output<(typeof MOCK_SCHEMAS)[PassThroughSchemaKind]>;
export type Mock = HttpMock | PostgresMock | GenericMock | RedisMock | PassThroughMock;

/** Number of mocks per kind; the three modeled kinds are always present. */
export type KindCounts = Record<ModeledKind, number> & Partial<Record<PassThroughKind, number>>;

/** One mock set as `MockStore.list()` reports it. */
export interface MockSetInfo {
  name: string;
  /** The set's `mocks.yaml`. */
  path: string;
  /** Number of mock documents (0 when the file is corrupt). */
  mocks: number;
  kinds: KindCounts;
  /** ISO time: the newest `created` of its mocks, else the newest response timestamp, else the file's mtime. */
  created: string;
  /** Set when the file could not be read or parsed: the reason (the set is still listed). */
  error?: string;
  /** Set when the set was counted by a scan rather than parsed (too big to parse when listing): why. */
  note?: string;
}
