/**
 * Keploy mock documents as Keploy writes them to `<path>/<mock-set>/mocks.yaml`.
 *
 * Property names are the YAML keys, byte for byte: Keploy's Go structs decide them, and they are
 * not uniform. `HTTPSchema` has explicit tags (`proto_major`, `status_code`, `reqTimestampMock`),
 * while `PostgresSpec` and `GenericSchema` have none on their lists and timestamps, so yaml.v3
 * lowercases the Go field names: `postgresrequests`, `genericrequests`, `reqtimestampmock`.
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

/** The kinds this module models field by field. */
export const MODELED_KINDS = ['Http', 'Postgres', 'Generic'] as const;
export type ModeledKind = (typeof MODELED_KINDS)[number];
/**
 * Other kinds Keploy writes (`models.Kind` constants). Their documents are accepted and kept
 * verbatim (spec as plain YAML data) so a real mock set that also holds, say, Mongo mocks can be
 * listed and read; any other `kind` is an error.
 */
export const PASS_THROUGH_KINDS = ['Http2', 'Redis', 'MySQL', 'PostgresV2', 'gRPC', 'Mongo', 'DNS', 'SQL'] as const;
export type PassThroughKind = (typeof PASS_THROUGH_KINDS)[number];
export type MockKind = ModeledKind | PassThroughKind;

interface MockDocument<K extends string, S> {
  version: string;
  kind: K;
  /** `mock-0`, `mock-1`, ... in file order (Keploy records them as `mocks` and numbers them on write). */
  name: string;
  spec: S;
  /** Top-level `connectionId` (newer Keploy; the fixtures' Postgres mocks have `"0"`). */
  connectionId?: string;
  /** Other top-level keys: `curl`, `async`, `noise`, `last_updated` in newer Keploy. */
  extra?: Extra;
}

// ---------------------------------------------------------------- Http

/**
 * A body as Keploy stores it: the text (Go `string(body)`), or, when the bytes are not valid
 * UTF-8, the bytes themselves. yaml.v3 writes such a Go string as a `!!binary` base64 scalar and
 * reads it back into the same bytes; this module does the same.
 */
export type HttpBody = string | Uint8Array;

/** `models.HTTPReq`. */
export interface HttpRequest {
  method: string;
  proto_major: number;
  proto_minor: number;
  /** The request target as it was on the wire (Go `req.URL.String()`): `/path?query` for a direct call. */
  url: string;
  /** Query parameters, several values of one name joined with `", "` (omitted when empty). */
  url_params?: Record<string, string>;
  /** Canonical header names (`Content-Type`); several values joined with `","`. Go keeps `Host` out of it. */
  header: Record<string, string>;
  body: HttpBody;
  /** Go zero time (`0001-01-01T00:00:00Z`) in mocks. */
  timestamp: string;
  /** `body_ref`, `binary`, `form`, unknown keys. */
  extra?: Extra;
}

/** `models.HTTPResp`. */
export interface HttpResponse {
  status_code: number;
  header: Record<string, string>;
  body: HttpBody;
  /** Keploy's recorder leaves it empty. */
  status_message: string;
  /** Keploy's recorder leaves these at 0. */
  proto_major: number;
  proto_minor: number;
  timestamp: string;
  /** `body_skipped`, `body_size`, `stream_type`, `stream_events`, `binary`, unknown keys. */
  extra?: Extra;
}

/** `models.HTTPSchema`. */
export interface HttpSpec {
  /** `{name: Http, operation: <method>, type: HTTP_CLIENT}` from Keploy's recorder. */
  metadata: Record<string, string>;
  req: HttpRequest;
  resp: HttpResponse;
  /** Always `[]` in recorded mocks; parsing fills `[]` when absent (Keploy always writes it). */
  objects?: YamlValue[];
  /** Unix seconds (`time.Now().Unix()`); omitted by Keploy when 0. */
  created?: number;
  reqTimestampMock?: string;
  resTimestampMock?: string;
  /** `assertions`, `app_port`, unknown keys. */
  extra?: Extra;
}

export type HttpMock = MockDocument<'Http', HttpSpec>;

// ---------------------------------------------------------------- Postgres (v1 packets)

/**
 * A pgproto3 message object as Keploy writes it: every key kept; the listed ones are checked when
 * parsing (and coerced the way yaml.v3 reads a Go string: a plain `2` is the text "2").
 */
export interface PgMessage {
  /** Parsed values are `YamlValue`s (or the typed views below). */
  [key: string]: unknown;
}
/** `pgproto3.StartupMessage`. */
export interface PgStartupMessage extends PgMessage {
  protocolversion?: number;
  parameters?: Record<string, string>;
}
/** `pgproto3.Parse`: `query` is the SQL text. */
export interface PgParse extends PgMessage {
  name?: string;
  query?: string;
  parameter_oids?: YamlValue[];
}
/** `pgproto3.Bind`: `parameters` holds each parameter's bytes as a list of byte values. */
export interface PgBind extends PgMessage {
  parameters?: YamlValue[];
  result_format_codes?: YamlValue[];
}
/** `pgproto3.Query` (simple query protocol). */
export interface PgQuery extends PgMessage {
  string?: string;
}
export interface PgCommandComplete extends PgMessage {
  command_tag_type?: string;
}
/** One row; a value that is not printable text is written as `'b64:<base64>'` (see postgres.ts). */
export interface PgDataRow extends PgMessage {
  row_values?: Array<string | null>;
}
export interface PgFieldDescription extends PgMessage {
  field_name?: string;
}
export interface PgRowDescription extends PgMessage {
  fields?: PgFieldDescription[];
}
export interface PgParameterStatus extends PgMessage {
  name?: string;
  value?: string;
}

interface PgPacketCommon {
  /** Message type letters of the packet, e.g. `[P, D]`, `["1", t, T, Z]` (Keploy omits some, e.g. Sync). */
  header?: string[];
  /** `StartupRequest`, `ClientRequest` or `ServerResponse`. */
  identifier?: string;
  /** Keploy writes a constant here (102 in the fixture); not the packet's length. */
  length?: number;
  /** Base64 of the packet's raw bytes, all messages included. */
  payload?: string;
  /** The last message's type byte (e.g. 90 for `Z`). */
  msg_type?: number;
  /** `int32`, always written (5 = MD5 during the startup exchange). */
  auth_type: number;
  /** Every other field of Keploy's Backend/Frontend struct and unknown keys, verbatim. */
  extra?: Extra;
}

/** `models.Backend` (what the client sent). */
export interface PostgresRequestPacket extends PgPacketCommon {
  startup_message?: PgStartupMessage;
  password_message?: PgMessage & { password?: string };
  parse?: PgParse[];
  bind?: PgBind[];
  describe?: PgMessage;
  execute?: PgMessage[];
  query?: PgQuery;
  sync?: PgMessage;
  terminate?: PgMessage;
}

/** `models.Frontend` (what the server answered). */
export interface PostgresResponsePacket extends PgPacketCommon {
  authentication_ok?: PgMessage;
  /** Keploy writes `{salt: [0, 0, 0, 0]}` on every response (a Go zero-value quirk). */
  authentication_md5_password?: PgMessage;
  backend_key_data?: PgMessage;
  command_complete?: PgCommandComplete[];
  data_row?: PgDataRow[];
  error_response?: PgMessage;
  parameter_description?: PgMessage;
  parameter_status?: PgParameterStatus[];
  ready_for_query?: PgMessage;
  row_description?: PgRowDescription;
}

/** `models.PostgresSpec`. */
export interface PostgresSpec {
  /** `{type: config}` in the fixture. */
  metadata: Record<string, string>;
  postgresrequests: PostgresRequestPacket[];
  postgresresponses: PostgresResponsePacket[];
  /** Go field `ReqTimestampMock`, no YAML tag, hence lowercase. Always written. */
  reqtimestampmock: string;
  restimestampmock: string;
  extra?: Extra;
}

export type PostgresMock = MockDocument<'Postgres', PostgresSpec>;

// ---------------------------------------------------------------- Generic

/** `models.OutputBinary`: `type` is `string` or `binary` (then `data` is base64). */
export interface GenericMessage {
  type: string;
  data: string;
  extra?: Extra;
}

/** `models.Payload`. */
export interface GenericPayload {
  /** `client` or `server`. */
  origin: string;
  message: GenericMessage[];
  extra?: Extra;
}

/** `models.GenericSchema`: lists and timestamps have no YAML tags, hence lowercase keys. */
export interface GenericSpec {
  metadata: Record<string, string>;
  genericrequests: GenericPayload[];
  genericresponses: GenericPayload[];
  reqtimestampmock: string;
  restimestampmock: string;
  /** `noise`, unknown keys. */
  extra?: Extra;
}

export type GenericMock = MockDocument<'Generic', GenericSpec>;

// ---------------------------------------------------------------- Redis

/**
 * `models.RedisSchema` as Keploy's Redis parser writes it: Generic's payloads under
 * `redisrequests`/`redisresponses` (no YAML tags, hence lowercase), one command and its reply per
 * mock. Counted like the pass-through kinds (only when present), but modeled.
 */
export interface RedisSpec {
  metadata: Record<string, string>;
  redisrequests: GenericPayload[];
  redisresponses: GenericPayload[];
  reqtimestampmock: string;
  restimestampmock: string;
  extra?: Extra;
}

export type RedisMock = MockDocument<'Redis', RedisSpec>;

// ---------------------------------------------------------------- others

/** A kind Keploy writes that this module does not model: its spec kept as plain YAML data. */
export type PassThroughMock = MockDocument<Exclude<PassThroughKind, 'Redis'>, YamlMap>;

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
}
