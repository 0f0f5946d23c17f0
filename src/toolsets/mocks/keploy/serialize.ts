import { DebugkitError } from '../../../core/errors.js';
import { compareKeys, emitDocument, formatNumber, TIMESTAMP, type ENode } from './emit.js';
import { collectionStyle } from './style.js';
import {
  ZERO_TIME,
  type Extra,
  type GenericMessage,
  type GenericPayload,
  type GenericSpec,
  type HttpBody,
  type HttpRequest,
  type HttpResponse,
  type HttpSpec,
  type Mock,
  type PostgresRequestPacket,
  type PostgresResponsePacket,
  type PostgresSpec,
} from './types.js';

/*
 * Key order of each structure: the field order of Keploy's Go structs (yaml.v3 writes struct
 * fields in declaration order). Keys not listed (unknown to this module) follow, in their order.
 */
const DOC_ORDER = ['version', 'kind', 'name', 'spec', 'async', 'noise', 'last_updated', 'curl', 'connectionId'];
const HTTP_SPEC_ORDER = ['metadata', 'req', 'resp', 'objects', 'assertions', 'created', 'reqTimestampMock', 'resTimestampMock', 'app_port'];
const HTTP_REQ_ORDER = ['method', 'proto_major', 'proto_minor', 'url', 'url_params', 'header', 'body', 'body_ref', 'binary', 'form', 'timestamp'];
const HTTP_RESP_ORDER = [
  'status_code', 'header', 'body', 'body_skipped', 'body_size', 'stream_type', 'stream_events',
  'status_message', 'proto_major', 'proto_minor', 'binary', 'timestamp',
];
const PG_SPEC_ORDER = ['metadata', 'postgresrequests', 'postgresresponses', 'reqtimestampmock', 'restimestampmock'];
/** `models.Backend`. */
const PG_REQUEST_ORDER = [
  'header', 'identifier', 'length', 'payload', 'bind', 'cancel_request', 'close', 'copy_fail', 'copy_data', 'copy_done',
  'describe', 'execute', 'flush', 'function_call', 'gss_enc_request', 'parse', 'query', 'ssl_request', 'startup_message',
  'sync', 'terminate', 'sasl_initial_response', 'sasl_response', 'password_message', 'msg_type', 'partial_msg', 'auth_type', 'body_len',
];
/** `models.Frontend`. */
const PG_RESPONSE_ORDER = [
  'header', 'identifier', 'length', 'payload', 'authentication_ok', 'authentication_cleartext_password',
  'authentication_md5_password', 'authentication_gss', 'authentication_gss_continue', 'authentication_sasl',
  'authentication_sasl_continue', 'authentication_sasl_final', 'backend_key_data', 'bind_complete', 'close_complete',
  'command_complete', 'copy_both_response', 'copy_data', 'copy_in_response', 'copy_out_response', 'copy_done', 'data_row',
  'empty_query_response', 'error_response', 'function_call_response', 'no_data', 'notice_response', 'notification_response',
  'parameter_description', 'parameter_status', 'parse_complete', 'ready_for_query', 'row_description', 'portal_suspended',
  'msg_type', 'auth_type', 'body_len',
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
 * Writes mocks the way Keploy writes a `mocks.yaml`: one YAML document per mock, separated by
 * `---` lines (none before the first), in yaml.v3's layout (see emit.ts). Empty list: empty text.
 *
 * Throws `DebugkitError('INVALID_ARGUMENT')` naming the mock and field for a value that cannot be
 * written (a non-integer status code, `undefined` in a list, a function, ...).
 */
export function serializeMockSet(mocks: readonly Mock[]): string {
  return mocks.map((mock, i) => emitDocument(new Writer(i, mock).document())).join('---\n');
}

type Field = [string, ENode | undefined];

class Writer {
  constructor(
    private readonly index: number,
    private readonly mock: Mock,
  ) {}

  fail(path: string, message: string): never {
    const name = typeof this.mock?.name === 'string' ? ` (${this.mock.name})` : '';
    throw new DebugkitError('INVALID_ARGUMENT', `Cannot write mock ${this.index + 1}${name}: ${path}: ${message}`);
  }

  document(): ENode {
    const m = this.mock;
    if (!m || typeof m !== 'object') this.fail('', 'not a mock object');
    let spec: ENode;
    switch (m.kind) {
      case 'Http':
        spec = this.httpSpec(m.spec, 'spec');
        break;
      case 'Postgres':
        spec = this.postgresSpec(m.spec, 'spec');
        break;
      case 'Generic':
        spec = this.genericSpec(m.spec, 'spec');
        break;
      case 'Redis': {
        const { redisrequests, redisresponses, ...rest } = m.spec;
        spec = this.genericSpec({ ...rest, genericrequests: redisrequests, genericresponses: redisresponses }, 'spec', 'redis');
        break;
      }
      default:
        spec = this.value(m.spec, 'spec');
        if (spec.kind !== 'map') this.fail('spec', 'expected an object');
        // MySQLSpec's timestamps are Go times: written plain, as yaml.v3 writes them.
        if (m.kind === 'MySQL') {
          spec.entries = spec.entries.map(([k, v]): [string, ENode] =>
            (k === 'reqtimestampmock' || k === 'restimestampmock') && v.kind === 'str' && TIMESTAMP.test(v.value) ? [k, { kind: 'raw', text: v.value }] : [k, v],
          );
        }
    }
    return this.ordered(
      [
        ['version', this.str(m.version, 'version')],
        ['kind', this.str(m.kind, 'kind')],
        ['name', this.str(m.name, 'name')],
        ['spec', spec],
        ['connectionId', m.connectionId ? this.str(m.connectionId, 'connectionId') : undefined],
      ],
      m.extra,
      DOC_ORDER,
      '',
    );
  }

  // ---------------------------------------------------------------- Http

  private httpSpec(s: HttpSpec, path: string): ENode {
    this.object(s, path);
    return this.ordered(
      [
        ['metadata', this.goMap(s.metadata ?? {}, `${path}.metadata`)],
        ['req', this.httpRequest(s.req, `${path}.req`)],
        ['resp', this.httpResponse(s.resp, `${path}.resp`)],
        ['objects', this.value(s.objects ?? [], `${path}.objects`)],
        ['created', s.created ? this.int(s.created, `${path}.created`) : undefined],
        ['reqTimestampMock', this.optionalTime(s.reqTimestampMock, `${path}.reqTimestampMock`)],
        ['resTimestampMock', this.optionalTime(s.resTimestampMock, `${path}.resTimestampMock`)],
      ],
      s.extra,
      HTTP_SPEC_ORDER,
      path,
    );
  }

  private httpRequest(r: HttpRequest, path: string): ENode {
    this.object(r, path);
    const params = r.url_params && Object.keys(r.url_params).length > 0 ? this.goMap(r.url_params, `${path}.url_params`) : undefined;
    return this.ordered(
      [
        ['method', this.str(r.method, `${path}.method`)],
        ['proto_major', this.int(r.proto_major ?? 0, `${path}.proto_major`)],
        ['proto_minor', this.int(r.proto_minor ?? 0, `${path}.proto_minor`)],
        ['url', this.str(r.url, `${path}.url`)],
        ['url_params', params],
        ['header', this.goMap(r.header ?? {}, `${path}.header`)],
        ['body', this.body(r.body ?? '', `${path}.body`)],
        ['timestamp', this.time(r.timestamp ?? ZERO_TIME, `${path}.timestamp`)],
      ],
      r.extra,
      HTTP_REQ_ORDER,
      path,
    );
  }

  private httpResponse(r: HttpResponse, path: string): ENode {
    this.object(r, path);
    return this.ordered(
      [
        ['status_code', this.int(r.status_code, `${path}.status_code`)],
        ['header', this.goMap(r.header ?? {}, `${path}.header`)],
        ['body', this.body(r.body ?? '', `${path}.body`)],
        ['status_message', this.str(r.status_message ?? '', `${path}.status_message`)],
        ['proto_major', this.int(r.proto_major ?? 0, `${path}.proto_major`)],
        ['proto_minor', this.int(r.proto_minor ?? 0, `${path}.proto_minor`)],
        ['timestamp', this.time(r.timestamp ?? ZERO_TIME, `${path}.timestamp`)],
      ],
      r.extra,
      HTTP_RESP_ORDER,
      path,
    );
  }

  // ---------------------------------------------------------------- Postgres

  private postgresSpec(s: PostgresSpec, path: string): ENode {
    this.object(s, path);
    return this.ordered(
      [
        ['metadata', this.goMap(s.metadata ?? {}, `${path}.metadata`)],
        ['postgresrequests', this.list(s.postgresrequests ?? [], `${path}.postgresrequests`, (p, pp) => this.pgPacket(p, pp, PG_REQUEST_ORDER))],
        ['postgresresponses', this.list(s.postgresresponses ?? [], `${path}.postgresresponses`, (p, pp) => this.pgPacket(p, pp, PG_RESPONSE_ORDER))],
        ['reqtimestampmock', this.time(s.reqtimestampmock ?? ZERO_TIME, `${path}.reqtimestampmock`)],
        ['restimestampmock', this.time(s.restimestampmock ?? ZERO_TIME, `${path}.restimestampmock`)],
      ],
      s.extra,
      PG_SPEC_ORDER,
      path,
    );
  }

  private pgPacket(packet: PostgresRequestPacket | PostgresResponsePacket, path: string, order: string[]): ENode {
    this.object(packet, path);
    const fields: Field[] = [];
    for (const [key, v] of Object.entries(packet)) {
      if (key === 'extra' || v === undefined) continue;
      if (key === 'auth_type') continue;
      fields.push([key, this.value(v, `${path}.${key}`, PG_FLOW[key])]);
    }
    fields.push(['auth_type', this.int(packet.auth_type ?? 0, `${path}.auth_type`)]);
    return this.ordered(fields, packet.extra, order, path);
  }

  // ---------------------------------------------------------------- Generic

  /** Generic's spec; Redis writes the same one with `redis` for `generic` in the list keys. */
  private genericSpec(s: GenericSpec, path: string, prefix: 'generic' | 'redis' = 'generic'): ENode {
    this.object(s, path);
    const payloads = (list: GenericPayload[], p: string) => this.list(list, p, (payload, pp) => this.genericPayload(payload, pp));
    return this.ordered(
      [
        ['metadata', this.goMap(s.metadata ?? {}, `${path}.metadata`)],
        [`${prefix}requests`, payloads(s.genericrequests ?? [], `${path}.${prefix}requests`)],
        [`${prefix}responses`, payloads(s.genericresponses ?? [], `${path}.${prefix}responses`)],
        ['reqtimestampmock', this.time(s.reqtimestampmock ?? ZERO_TIME, `${path}.reqtimestampmock`)],
        ['restimestampmock', this.time(s.restimestampmock ?? ZERO_TIME, `${path}.restimestampmock`)],
      ],
      s.extra,
      prefix === 'generic' ? GENERIC_SPEC_ORDER : REDIS_SPEC_ORDER,
      path,
    );
  }

  private genericPayload(p: GenericPayload, path: string): ENode {
    this.object(p, path);
    return this.ordered(
      [
        ['origin', this.str(p.origin ?? '', `${path}.origin`)],
        ['message', this.list(p.message ?? [], `${path}.message`, (m, mp) => this.genericMessage(m, mp))],
      ],
      p.extra,
      PAYLOAD_ORDER,
      path,
    );
  }

  private genericMessage(m: GenericMessage, path: string): ENode {
    this.object(m, path);
    return this.ordered(
      [
        ['type', this.str(m.type ?? '', `${path}.type`)],
        ['data', this.str(m.data ?? '', `${path}.data`)],
      ],
      m.extra,
      MESSAGE_ORDER,
      path,
    );
  }

  // ---------------------------------------------------------------- building blocks

  /** Known fields in Keploy's order, then the extra keys not already written, in their order. */
  private ordered(fields: Field[], extra: Extra | undefined, order: string[], path: string): ENode {
    const byKey = new Map<string, ENode>();
    for (const [key, node] of fields) if (node) byKey.set(key, node);
    if (extra !== undefined) {
      if (!isPlainObject(extra)) this.fail(`${path}.extra`, 'expected an object');
      for (const [key, v] of Object.entries(extra)) {
        if (v === undefined) continue;
        if (fields.some(([k]) => k === key)) this.fail(`${path}.extra.${key}`, 'duplicates a modeled field; set the field itself');
        byKey.set(key, this.value(v, path ? `${path}.${key}` : key));
      }
    }
    const entries: Array<[string, ENode]> = [];
    for (const key of order) {
      const node = byKey.get(key);
      if (node) {
        entries.push([key, node]);
        byKey.delete(key);
      }
    }
    entries.push(...byKey);
    return { kind: 'map', entries };
  }

  private list<T>(items: readonly T[], path: string, write: (item: T, path: string) => ENode): ENode {
    if (!Array.isArray(items)) this.fail(path, 'expected a list');
    return { kind: 'seq', items: items.map((item, i) => write(item, `${path}[${i}]`)) };
  }

  /** A Go map: keys sorted the way yaml.v3 sorts them. */
  private goMap(map: Record<string, string>, path: string): ENode {
    if (!isPlainObject(map)) this.fail(path, 'expected an object of strings');
    const entries: Array<[string, ENode]> = Object.keys(map)
      .sort(compareKeys)
      .map((key) => [key, this.str(map[key], `${path}.${key}`)]);
    return { kind: 'map', entries, flow: collectionStyle(map) === 'flow' };
  }

  private str(v: unknown, path: string): ENode {
    if (typeof v !== 'string') this.fail(path, `expected a string, got ${describe(v)}`);
    return { kind: 'str', value: v };
  }

  private int(v: unknown, path: string): ENode {
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) this.fail(path, `expected an integer, got ${describe(v)}`);
    return { kind: 'raw', text: formatNumber(v) };
  }

  /** A Go `time.Time`: written plain, as yaml.v3 writes times. */
  private time(v: unknown, path: string): ENode {
    if (typeof v !== 'string' || !TIMESTAMP.test(v)) this.fail(path, `expected a timestamp like 2024-06-05T16:53:56.841481379+05:30, got ${describe(v)}`);
    return { kind: 'raw', text: v };
  }

  /** An omitempty `time.Time`: left out when absent or zero. */
  private optionalTime(v: unknown, path: string): ENode | undefined {
    return v === undefined || v === ZERO_TIME ? undefined : this.time(v, path);
  }

  private body(v: HttpBody, path: string): ENode {
    if (v instanceof Uint8Array) return { kind: 'binary', value: v };
    return this.str(v, path);
  }

  private object(v: unknown, path: string): void {
    if (!isPlainObject(v)) this.fail(path, `expected an object, got ${describe(v)}`);
  }

  /** Plain data (parsed pass-through values and pgproto3 messages): style as parsed, else from `hint`. */
  value(v: unknown, path: string, hint?: FlowHint): ENode {
    if (typeof v === 'string') return { kind: 'str', value: v };
    if (typeof v === 'number' || typeof v === 'bigint') return { kind: 'raw', text: formatNumber(v) };
    if (typeof v === 'boolean') return { kind: 'raw', text: String(v) };
    if (v === null) return { kind: 'raw', text: 'null' };
    if (v instanceof Uint8Array) return { kind: 'binary', value: v };
    const flow = (o: object) => (collectionStyle(o) ?? (hint === true ? 'flow' : 'block')) === 'flow';
    const childHint = (key: string) => (hint === true ? true : hint?.[key]);
    if (Array.isArray(v)) {
      const items = v.map((item, i) => {
        if (item === undefined) this.fail(`${path}[${i}]`, 'undefined in a list');
        return this.value(item, `${path}[${i}]`, hint);
      });
      return { kind: 'seq', items, flow: flow(v) };
    }
    if (isPlainObject(v)) {
      const entries: Array<[string, ENode]> = [];
      for (const [key, item] of Object.entries(v)) {
        if (item !== undefined) entries.push([key, this.value(item, `${path}.${key}`, childHint(key))]);
      }
      return { kind: 'map', entries, flow: flow(v) };
    }
    return this.fail(path, `cannot be written as YAML: ${describe(v)}`);
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
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
