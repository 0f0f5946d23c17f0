import { DebugkitError } from '../../../core/errors.js';
import { compareKeys, emitDocument, formatNumber, type ENode } from './emit.js';
import { issueText, pathText } from './parse.js';
import { collectionStyle, markStyle } from './style.js';
import { defineKey, isPlainObject, MOCK_SCHEMAS, TIMESTAMP, ZERO_TIME, type Mock } from './types.js';

/*
 * Key order of each structure: the field order of Keploy's Go structs (yaml.v3 writes struct
 * fields in declaration order). Keys not listed (unknown to this module) follow, in their order.
 */
const DOC_ORDER = ['version', 'kind', 'name', 'spec', 'async', 'noise', 'last_updated', 'curl', 'connectionId'];
const HTTP_SPEC_ORDER = ['metadata', 'req', 'resp', 'objects', 'assertions', 'created', 'reqTimestampMock', 'resTimestampMock', 'app_port'];
const HTTP_REQ_ORDER = ['method', 'proto_major', 'proto_minor', 'url', 'url_params', 'header', 'body', 'body_ref', 'binary', 'form', 'timestamp'];
const HTTP_RESP_ORDER = ['status_code', 'header', 'body', 'body_skipped', 'body_size', 'stream_type', 'stream_events', 'status_message', 'proto_major', 'proto_minor', 'binary', 'timestamp'];
const PG_SPEC_ORDER = ['metadata', 'postgresrequests', 'postgresresponses', 'reqtimestampmock', 'restimestampmock'];
/** `models.Backend`. */
const PG_REQUEST_ORDER = [
  'header',
  'identifier',
  'length',
  'payload',
  'bind',
  'cancel_request',
  'close',
  'copy_fail',
  'copy_data',
  'copy_done',
  'describe',
  'execute',
  'flush',
  'function_call',
  'gss_enc_request',
  'parse',
  'query',
  'ssl_request',
  'startup_message',
  'sync',
  'terminate',
  'sasl_initial_response',
  'sasl_response',
  'password_message',
  'msg_type',
  'partial_msg',
  'auth_type',
  'body_len',
];
/** `models.Frontend`. */
const PG_RESPONSE_ORDER = [
  'header',
  'identifier',
  'length',
  'payload',
  'authentication_ok',
  'authentication_cleartext_password',
  'authentication_md5_password',
  'authentication_gss',
  'authentication_gss_continue',
  'authentication_sasl',
  'authentication_sasl_continue',
  'authentication_sasl_final',
  'backend_key_data',
  'bind_complete',
  'close_complete',
  'command_complete',
  'copy_both_response',
  'copy_data',
  'copy_in_response',
  'copy_out_response',
  'copy_done',
  'data_row',
  'empty_query_response',
  'error_response',
  'function_call_response',
  'no_data',
  'notice_response',
  'notification_response',
  'parameter_description',
  'parameter_status',
  'parse_complete',
  'ready_for_query',
  'row_description',
  'portal_suspended',
  'msg_type',
  'auth_type',
  'body_len',
];
const GENERIC_SPEC_ORDER = ['metadata', 'noise', 'genericrequests', 'genericresponses', 'reqtimestampmock', 'restimestampmock'];
const REDIS_SPEC_ORDER = ['metadata', 'redisrequests', 'redisresponses', 'reqtimestampmock', 'restimestampmock'];
const PAYLOAD_ORDER = ['origin', 'message'];
const MESSAGE_ORDER = ['type', 'data'];

/**
 * Where Keploy's Postgres structs ask yaml.v3 for flow style (`yaml:",flow"`, as in the fixture):
 * `true` for the value itself, an object for keys inside it (inside lists: inside each item).
 * Only used for collections built in code; parsed ones keep the style they had.
 */
type FlowHint = true | { readonly [key: string]: FlowHint };
const PG_FLOW: { readonly [key: string]: FlowHint } = {
  header: true,
  data_row: true,
  row_description: true,
  authentication_sasl_continue: true,
  authentication_sasl_final: true,
  authentication_md5_password: { salt: true },
  bind: { parameters: true, result_format_codes: true, parameter_format_codes: true },
};

/**
 * How Keploy writes one struct: its key order, the fields it omits when empty (`omitempty`), the
 * Go maps among them (keys sorted as yaml.v3 sorts them), and the layout of nested structs (in
 * lists: of each item).
 */
interface Layout {
  order: readonly string[];
  omitEmpty?: readonly string[];
  goMaps?: readonly string[];
  defaults?: Readonly<Record<string, unknown>>;
  fields?: Readonly<Record<string, Layout>>;
  flow?: { readonly [key: string]: FlowHint };
}

const payloads: Layout = { order: PAYLOAD_ORDER, fields: { message: { order: MESSAGE_ORDER } } };
const payloadSpec = (order: readonly string[], prefix: string): Layout => ({
  order,
  goMaps: ['metadata'],
  fields: { [`${prefix}requests`]: payloads, [`${prefix}responses`]: payloads },
});
const SPECS: Record<string, Layout> = {
  Http: {
    order: HTTP_SPEC_ORDER,
    omitEmpty: ['created', 'reqTimestampMock', 'resTimestampMock'],
    goMaps: ['metadata'],
    defaults: { objects: [] },
    fields: {
      req: { order: HTTP_REQ_ORDER, omitEmpty: ['url_params'], goMaps: ['url_params', 'header'] },
      resp: { order: HTTP_RESP_ORDER, goMaps: ['header'] },
    },
  },
  Postgres: {
    order: PG_SPEC_ORDER,
    goMaps: ['metadata'],
    fields: { postgresrequests: { order: PG_REQUEST_ORDER, flow: PG_FLOW }, postgresresponses: { order: PG_RESPONSE_ORDER, flow: PG_FLOW } },
  },
  Generic: payloadSpec(GENERIC_SPEC_ORDER, 'generic'),
  Redis: payloadSpec(REDIS_SPEC_ORDER, 'redis'),
};
const documentLayout = (kind: string): Layout => ({ order: DOC_ORDER, omitEmpty: ['connectionId'], fields: SPECS[kind] ? { spec: SPECS[kind] } : {} });

/** Go time fields (`time.Time`): yaml.v3 writes them plain, where a Go string that looks like a time is quoted. */
const TIME_KEYS = new Set(['timestamp', 'reqTimestampMock', 'resTimestampMock', 'reqtimestampmock', 'restimestampmock']);

/**
 * Writes mocks the way Keploy writes a `mocks.yaml`: one YAML document per mock, separated by
 * `---` lines (none before the first), in yaml.v3's layout (see emit.ts). Empty list: empty text.
 *
 * Each mock is laid out as Keploy lays it out (key order, `extra` keys in place, empty fields
 * omitted), checked with the schema of its kind (types.ts, the one parsing uses), then written.
 * A mock that does not pass throws `DebugkitError('INVALID_ARGUMENT')` naming the mock and the
 * field (a non-integer status code, `undefined` in a list, a function, ...).
 */
export function serializeMockSet(mocks: readonly Mock[]): string {
  return mocks.map((mock, i) => emitDocument(new Writer(i, mock).document())).join('---\n');
}

class Writer {
  /** Keploy's flow tags for the collections laid out under a Postgres packet's keys. */
  private readonly hints = new WeakMap<object, FlowHint>();
  /** Where the writer is (one stack, pushed and popped, for error messages). */
  private readonly path: PropertyKey[] = [];

  constructor(
    private readonly index: number,
    private readonly mock: Mock,
  ) {}

  fail(path: readonly PropertyKey[] = this.path, message: string): never {
    const name = typeof this.mock?.name === 'string' ? ` (${this.mock.name})` : '';
    throw new DebugkitError('INVALID_ARGUMENT', `Cannot write mock ${this.index + 1}${name}: ${path.length ? `${pathText(path)}: ` : ''}${message}`);
  }

  document(): ENode {
    const m = this.mock;
    if (!isPlainObject(m)) this.fail([], 'not a mock object');
    const schema = MOCK_SCHEMAS[m.kind as keyof typeof MOCK_SCHEMAS];
    if (!schema) this.fail(['kind'], `unknown kind ${JSON.stringify(m.kind)}`);
    const doc = this.layout(m, documentLayout(m.kind));
    const result = schema.safeParse(doc);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      let value: unknown = doc;
      for (const part of issue.path) value = (value as Record<PropertyKey, unknown> | undefined)?.[part];
      this.fail(
        issue.path,
        issueText(issue, value === undefined ? undefined : (value as never), () => describe(value)),
      );
    }
    return this.value(doc);
  }

  /** `v` laid out as Keploy writes it: known fields in Keploy's order, `extra` keys in place, empty ones left out. */
  private layout(v: unknown, layout: Layout | undefined): unknown {
    if (Array.isArray(v)) return v.map((item, i) => this.at(i, () => this.layout(item, layout)));
    if (layout === undefined || !isPlainObject(v)) return v;
    const fields: Record<string, unknown> = { ...layout.defaults };
    for (const key of Object.keys(v)) if (key !== 'extra' && v[key] !== undefined) defineKey(fields, key, v[key]);
    const extra = v.extra;
    if (extra !== undefined) {
      if (!isPlainObject(extra)) this.fail([...this.path, 'extra'], `expected an object, got ${describe(extra)}`);
      for (const key of Object.keys(extra)) {
        if (extra[key] === undefined) continue;
        if (Object.hasOwn(fields, key)) this.fail([...this.path, 'extra', key], 'duplicates a modeled field; set the field itself');
        defineKey(fields, key, extra[key]);
      }
    }
    for (const key of layout.omitEmpty ?? []) {
      const value = fields[key];
      if (value === 0 || value === '' || value === ZERO_TIME || (isPlainObject(value) && Object.keys(value).length === 0)) delete fields[key];
    }
    const out: Record<string, unknown> = {};
    const put = (key: string) => {
      let value = this.at(key, () => this.layout(fields[key], layout.fields?.[key]));
      if (layout.goMaps?.includes(key) && isPlainObject(value)) value = goMap(value);
      if (layout.flow?.[key] !== undefined && typeof value === 'object' && value !== null) this.hints.set(value, layout.flow[key]);
      defineKey(out, key, value);
    };
    for (const key of layout.order) if (Object.hasOwn(fields, key)) put(key);
    for (const key of Object.keys(fields)) if (!Object.hasOwn(out, key)) put(key);
    return out;
  }

  private at<T>(key: PropertyKey, f: () => T): T {
    this.path.push(key);
    const result = f();
    this.path.pop();
    return result;
  }

  /** Plain data as emitter nodes: style as parsed, else from `hint` (Keploy's flow tags). */
  private value(v: unknown, hint?: FlowHint, key?: string): ENode {
    if (typeof v === 'object' && v !== null) hint = this.hints.get(v) ?? hint;
    if (typeof v === 'string') return key !== undefined && TIME_KEYS.has(key) && TIMESTAMP.test(v) ? { kind: 'raw', text: v } : { kind: 'str', value: v };
    if (typeof v === 'number' || typeof v === 'bigint') return { kind: 'raw', text: formatNumber(v) };
    if (typeof v === 'boolean') return { kind: 'raw', text: String(v) };
    if (v === null) return { kind: 'raw', text: 'null' };
    if (v instanceof Uint8Array) return { kind: 'binary', value: v };
    const flow = (o: object) => (collectionStyle(o) ?? (hint === true ? 'flow' : 'block')) === 'flow';
    if (Array.isArray(v)) {
      const items = v.map((item, i) => {
        if (item === undefined) this.fail([...this.path, i], 'undefined in a list');
        return this.at(i, () => this.value(item, hint));
      });
      return { kind: 'seq', items, flow: flow(v) };
    }
    if (isPlainObject(v)) {
      const entries: Array<[string, ENode]> = [];
      for (const [k, item] of Object.entries(v)) {
        if (item !== undefined) entries.push([k, this.at(k, () => this.value(item, hint === true ? true : hint?.[k], k))]);
      }
      return { kind: 'map', entries, flow: flow(v) };
    }
    return this.fail(undefined, `cannot be written as YAML: ${describe(v)}`);
  }
}

/** A Go map: keys sorted the way yaml.v3 sorts them (the style it had kept). */
function goMap(map: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(map).sort(compareKeys)) defineKey(out, key, map[key]);
  return collectionStyle(map) === 'flow' ? markStyle(out, true) : out;
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}...` : v)}`;
  if (typeof v === 'number') return `the number ${v}`;
  if (Array.isArray(v)) return 'a list';
  if (v instanceof Date) return 'a Date (give the timestamp as a string)';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/**
 * The mocks named `mock-0`, `mock-1`, ... in order, as Keploy names them when it writes a set
 * (its recorder calls every mock `mocks` until then). Returns copies; the input is not changed.
 */
export function numberMocks<T extends Mock>(mocks: readonly T[]): T[] {
  return mocks.map((mock, i) => ({ ...mock, name: `mock-${i}` }));
}
