import { isAlias, isMap, isScalar, isSeq, LineCounter, parseAllDocuments, type Node as YamlNode, type Pair } from 'yaml';
import { DebugkitError } from '../../../core/errors.js';
import { TIMESTAMP } from './emit.js';
import { markStyle } from './style.js';
import {
  MODELED_KINDS,
  PASS_THROUGH_KINDS,
  ZERO_TIME,
  type Extra,
  type GenericMessage,
  type GenericPayload,
  type GenericSpec,
  type RedisSpec,
  type HttpBody,
  type HttpRequest,
  type HttpResponse,
  type HttpSpec,
  type Mock,
  type PassThroughKind,
  type PostgresRequestPacket,
  type PostgresResponsePacket,
  type PostgresSpec,
  type YamlMap,
  type YamlValue,
} from './types.js';

/**
 * Parses a Keploy `mocks.yaml`: YAML documents separated by `---`, one mock each.
 *
 * Reads it the way Keploy (Go, yaml.v3) reads it, so files Keploy accepts are accepted:
 * - a plain scalar in a Go string field is that text (`Content-Length: 164` is "164");
 * - a null or missing field is the Go zero value (`""`, `0`, `{}`, `[]`, the zero time);
 * - `!!binary` in a body is the body's bytes (what yaml.v3 writes for a non-UTF-8 Go string);
 * - timestamps stay the strings they are (nanoseconds and zone kept);
 * - empty documents (a trailing `---`) are skipped; Keploy kinds not modeled here are kept verbatim.
 *
 * Anything else wrong throws `DebugkitError('INVALID_ARGUMENT')` naming the file, the document
 * (1-based, with the mock's name when known), the line and the field: never a crash, never a
 * partially parsed set.
 */
export function parseMockSet(text: string, file: string): Mock[] {
  if (typeof text !== 'string') throw new DebugkitError('INVALID_ARGUMENT', `Invalid Keploy mock set ${file}: not text`);
  const lineCounter = new LineCounter();
  let docs;
  try {
    docs = parseAllDocuments(text, { lineCounter, prettyErrors: false, uniqueKeys: true, version: '1.2', schema: 'core' });
  } catch (err) {
    throw new DebugkitError('INVALID_ARGUMENT', `Invalid Keploy mock set ${file}: not YAML: ${(err as Error).message}`, { cause: err });
  }
  const mocks: Mock[] = [];
  let index = 0;
  for (const doc of docs) {
    index++;
    const reader = new DocReader(file, index, lineCounter);
    const error = doc.errors[0];
    if (error) {
      const line = error.linePos?.[0]?.line ?? (error.pos ? lineCounter.linePos(error.pos[0]).line : undefined);
      throw new DebugkitError(
        'INVALID_ARGUMENT',
        `Invalid Keploy mock set ${file}: document ${index}${line ? `, line ${line}` : ''}: not valid YAML: ${firstLine(error.message)}`,
      );
    }
    if (doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null)) continue; // empty document
    mocks.push(reader.mock(doc.contents as YamlNode));
  }
  return mocks;
}

const firstLine = (s: string) => s.split('\n')[0]!.trim();

type N = YamlNode | null | undefined;
type Reader<T> = (r: DocReader, node: N, path: string) => T;

const KNOWN_KINDS: readonly string[] = [...MODELED_KINDS, ...PASS_THROUGH_KINDS];
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Reads one document; every failure names the document, the line and the field. */
class DocReader {
  private name: string | undefined;

  constructor(
    private readonly file: string,
    private readonly index: number,
    private readonly lines: LineCounter,
  ) {}

  fail(path: string, node: N, message: string): never {
    const line = node?.range ? this.lines.linePos(node.range[0]).line : undefined;
    const where = `document ${this.index}${this.name ? ` (${this.name})` : ''}${line ? `, line ${line}` : ''}`;
    throw new DebugkitError('INVALID_ARGUMENT', `Invalid Keploy mock set ${this.file}: ${where}: ${path ? `${path}: ` : ''}${message}`);
  }

  mock(node: YamlNode): Mock {
    const doc = this.fields(node, '', 'a mock document (a mapping with version, kind, name and spec)');
    // The name first, so every later error can say which mock it is about.
    const nameNode = doc.peek('name');
    if (isScalar(nameNode) && typeof nameNode.value === 'string') this.name = nameNode.value;

    const kindNode = doc.peek('kind');
    if (kindNode === undefined) this.fail('kind', node, `missing; expected one of ${KNOWN_KINDS.join(', ')}`);
    const kind = this.str(kindNode, 'kind');
    if (!KNOWN_KINDS.includes(kind)) this.fail('kind', kindNode, `unknown kind ${JSON.stringify(kind)}; Keploy's kinds are ${KNOWN_KINDS.join(', ')}`);
    doc.take('kind');

    const version = this.required(doc, 'version', (r, n, p) => r.nonEmpty(n, p));
    const name = this.required(doc, 'name', (r, n, p) => r.nonEmpty(n, p));
    const specNode = doc.take('spec');
    if (specNode === undefined) this.fail('spec', node, 'missing');
    const connectionId = doc.optional('connectionId', (r, n, p) => r.str(n, p));

    let mock: Mock;
    switch (kind) {
      case 'Http':
        mock = { version, kind, name, spec: this.httpSpec(specNode) };
        break;
      case 'Postgres':
        mock = { version, kind, name, spec: this.postgresSpec(specNode) };
        break;
      case 'Generic':
        mock = { version, kind, name, spec: this.genericSpec(specNode) };
        break;
      case 'Redis': {
        const g = this.genericSpec(specNode, 'redis');
        const { genericrequests, genericresponses, ...rest } = g;
        mock = { version, kind, name, spec: { ...rest, redisrequests: genericrequests, redisresponses: genericresponses } as RedisSpec };
        break;
      }
      default:
        mock = { version, kind: kind as Exclude<PassThroughKind, 'Redis'>, name, spec: this.yamlMap(specNode, 'spec') };
    }
    if (connectionId) mock.connectionId = connectionId;
    return withExtra(mock, doc.rest());
  }

  // ---------------------------------------------------------------- Http

  private httpSpec(node: N): HttpSpec {
    const f = this.fields(node, 'spec', 'a mapping');
    const spec: HttpSpec = {
      metadata: f.optional('metadata', strMap) ?? {},
      req: this.required(f, 'req', (r, n, p) => r.httpRequest(n, p)),
      resp: this.required(f, 'resp', (r, n, p) => r.httpResponse(n, p)),
      objects: f.optional('objects', seqOf(value)) ?? [],
    };
    const created = f.optional('created', int);
    if (created) spec.created = created;
    const reqTs = f.optional('reqTimestampMock', timestamp);
    if (reqTs && reqTs !== ZERO_TIME) spec.reqTimestampMock = reqTs;
    const resTs = f.optional('resTimestampMock', timestamp);
    if (resTs && resTs !== ZERO_TIME) spec.resTimestampMock = resTs;
    return withExtra(spec, f.rest());
  }

  private httpRequest(node: N, path: string): HttpRequest {
    const f = this.fields(node, path, 'a mapping (method, url, header, body, ...)');
    const req: HttpRequest = {
      method: this.required(f, 'method', (r, n, p) => r.nonEmpty(n, p)),
      proto_major: f.optional('proto_major', int) ?? 0,
      proto_minor: f.optional('proto_minor', int) ?? 0,
      url: this.required(f, 'url', str),
      header: {},
      body: '',
      timestamp: ZERO_TIME,
    };
    const params = f.optional('url_params', strMap);
    if (params && Object.keys(params).length > 0) req.url_params = params;
    req.header = f.optional('header', strMap) ?? {};
    req.body = f.optional('body', body) ?? '';
    req.timestamp = f.optional('timestamp', timestamp) ?? ZERO_TIME;
    return withExtra(req, f.rest());
  }

  private httpResponse(node: N, path: string): HttpResponse {
    const f = this.fields(node, path, 'a mapping (status_code, header, body, ...)');
    const status = this.required(f, 'status_code', int);
    if (status < 100 || status > 999) this.fail(`${path}.status_code`, f.node, `${status} is not an HTTP status code (100-999)`);
    const resp: HttpResponse = {
      status_code: status,
      header: f.optional('header', strMap) ?? {},
      body: f.optional('body', body) ?? '',
      status_message: f.optional('status_message', str) ?? '',
      proto_major: f.optional('proto_major', int) ?? 0,
      proto_minor: f.optional('proto_minor', int) ?? 0,
      timestamp: f.optional('timestamp', timestamp) ?? ZERO_TIME,
    };
    return withExtra(resp, f.rest());
  }

  // ---------------------------------------------------------------- Postgres

  private postgresSpec(node: N): PostgresSpec {
    const f = this.fields(node, 'spec', 'a mapping');
    const spec: PostgresSpec = {
      metadata: f.optional('metadata', strMap) ?? {},
      postgresrequests: f.optional('postgresrequests', seqOf((r, n, p) => r.pgRequest(n, p))) ?? [],
      postgresresponses: f.optional('postgresresponses', seqOf((r, n, p) => r.pgResponse(n, p))) ?? [],
      reqtimestampmock: f.optional('reqtimestampmock', timestamp) ?? ZERO_TIME,
      restimestampmock: f.optional('restimestampmock', timestamp) ?? ZERO_TIME,
    };
    return withExtra(spec, f.rest());
  }

  private pgCommon(f: Fields): PostgresRequestPacket & PostgresResponsePacket {
    const packet: PostgresRequestPacket & PostgresResponsePacket = { auth_type: 0 };
    assignDefined(packet, 'header', f.optional('header', seqOf(str)));
    assignDefined(packet, 'identifier', f.optional('identifier', str));
    assignDefined(packet, 'length', f.optional('length', int));
    assignDefined(packet, 'payload', f.optional('payload', base64));
    return packet;
  }

  private pgRequest(node: N, path: string): PostgresRequestPacket {
    const f = this.fields(node, path, 'a mapping (a Postgres request packet)');
    const packet: PostgresRequestPacket = this.pgCommon(f);
    assignDefined(packet, 'startup_message', f.optional('startup_message', openMap({ protocolversion: int, parameters: strMap })));
    assignDefined(packet, 'password_message', f.optional('password_message', openMap({ password: str })));
    assignDefined(packet, 'parse', f.optional('parse', seqOf(openMap({ name: str, query: str, parameter_oids: seqOf(value) }))));
    assignDefined(packet, 'bind', f.optional('bind', seqOf(openMap({ parameters: seqOf(value), result_format_codes: seqOf(value) }))));
    assignDefined(packet, 'describe', f.optional('describe', openMap({})));
    assignDefined(packet, 'execute', f.optional('execute', seqOf(openMap({}))));
    assignDefined(packet, 'query', f.optional('query', openMap({ string: str })));
    assignDefined(packet, 'sync', f.optional('sync', openMap({})));
    assignDefined(packet, 'terminate', f.optional('terminate', openMap({})));
    this.pgTail(f, packet);
    return withExtra(packet, f.rest());
  }

  private pgResponse(node: N, path: string): PostgresResponsePacket {
    const f = this.fields(node, path, 'a mapping (a Postgres response packet)');
    const packet: PostgresResponsePacket = this.pgCommon(f);
    assignDefined(packet, 'authentication_ok', f.optional('authentication_ok', openMap({})));
    assignDefined(packet, 'authentication_md5_password', f.optional('authentication_md5_password', openMap({ salt: seqOf(int) })));
    assignDefined(packet, 'backend_key_data', f.optional('backend_key_data', openMap({ process_id: int, secret_key: int })));
    assignDefined(packet, 'command_complete', f.optional('command_complete', seqOf(openMap({ command_tag_type: str }))));
    assignDefined(packet, 'data_row', f.optional('data_row', seqOf(openMap({ row_values: seqOf(strOrNull) }))));
    assignDefined(packet, 'error_response', f.optional('error_response', openMap({})));
    assignDefined(packet, 'parameter_description', f.optional('parameter_description', openMap({ parameteroids: seqOf(int) })));
    assignDefined(packet, 'parameter_status', f.optional('parameter_status', seqOf(openMap({ name: str, value: str }))));
    assignDefined(packet, 'ready_for_query', f.optional('ready_for_query', openMap({ txstatus: int })));
    assignDefined(packet, 'row_description', f.optional('row_description', openMap({ fields: seqOf(openMap({ field_name: str })) })));
    this.pgTail(f, packet);
    return withExtra(packet, f.rest());
  }

  private pgTail(f: Fields, packet: PostgresRequestPacket | PostgresResponsePacket): void {
    assignDefined(packet, 'msg_type', f.optional('msg_type', int));
    packet.auth_type = f.optional('auth_type', int) ?? 0;
  }

  // ---------------------------------------------------------------- Generic

  /** Generic's spec; Redis has the same one with `redis` for `generic` in the list keys. */
  private genericSpec(node: N, prefix: 'generic' | 'redis' = 'generic'): GenericSpec {
    const f = this.fields(node, 'spec', 'a mapping');
    const payloads = seqOf((r, n, p) => r.genericPayload(n, p));
    const spec: GenericSpec = {
      metadata: f.optional('metadata', strMap) ?? {},
      genericrequests: f.optional(`${prefix}requests`, payloads) ?? [],
      genericresponses: f.optional(`${prefix}responses`, payloads) ?? [],
      reqtimestampmock: f.optional('reqtimestampmock', timestamp) ?? ZERO_TIME,
      restimestampmock: f.optional('restimestampmock', timestamp) ?? ZERO_TIME,
    };
    return withExtra(spec, f.rest());
  }

  private genericPayload(node: N, path: string): GenericPayload {
    const f = this.fields(node, path, 'a mapping (origin, message)');
    const payload: GenericPayload = {
      origin: f.optional('origin', str) ?? '',
      message: f.optional('message', seqOf((r, n, p) => r.genericMessage(n, p))) ?? [],
    };
    return withExtra(payload, f.rest());
  }

  private genericMessage(node: N, path: string): GenericMessage {
    const f = this.fields(node, path, 'a mapping (type, data)');
    const message: GenericMessage = { type: f.optional('type', str) ?? '', data: '' };
    message.data = f.optional('data', message.type === 'binary' ? base64 : str) ?? '';
    return withExtra(message, f.rest());
  }

  // ---------------------------------------------------------------- field access

  fields(node: N, path: string, expected: string): Fields {
    if (!isMap(node)) this.fail(path, node, `expected ${expected}, got ${this.describe(node)}`);
    return new Fields(this, node, path);
  }

  required<T>(f: Fields, key: string, read: Reader<T>): T {
    const node = f.take(key);
    if (node === undefined) this.fail(f.pathOf(key), f.node, 'missing');
    return read(this, node, f.pathOf(key));
  }

  keyOf(pair: Pair, path: string): string {
    const key = pair.key as N;
    if (key === null || key === undefined) return '';
    if (!isScalar(key)) this.fail(path, key, `a mapping key must be a scalar, got ${this.describe(key)}`);
    return this.str(key, path);
  }

  /** A Go string: strings as they are; other plain scalars as their text (yaml.v3 does the same). */
  str(node: N, path: string): string {
    const v = this.scalar(node, path);
    if (v === null) return '';
    if (typeof v === 'string') return v;
    if (v instanceof Uint8Array) return this.fail(path, node, 'expected text, got !!binary data');
    return (node as { source?: string }).source ?? String(v);
  }

  nonEmpty(node: N, path: string): string {
    const s = this.str(node, path);
    if (s === '') this.fail(path, node, 'must not be empty');
    return s;
  }

  int(node: N, path: string): number {
    const v = this.scalar(node, path);
    if (v === null) return 0;
    if (typeof v === 'bigint') {
      if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) this.fail(path, node, `integer ${v} is too large`);
      return Number(v);
    }
    if (typeof v !== 'number' || !Number.isInteger(v)) this.fail(path, node, `expected an integer, got ${this.describe(node)}`);
    return v;
  }

  /** A scalar's value (core schema; `!!binary` as bytes; `!!timestamp` as its text). */
  scalar(node: N, path: string): YamlValue {
    if (node === null || node === undefined) return null;
    if (isAlias(node)) this.fail(path, node, 'YAML aliases are not supported in mock files (Keploy never writes them)');
    if (!isScalar(node)) this.fail(path, node, `expected a scalar, got ${this.describe(node)}`);
    const v: unknown = node.value;
    const source = (node as { source?: string }).source ?? '';
    if (v instanceof Uint8Array) {
      if (!BASE64.test(source.replace(/\s+/g, ''))) this.fail(path, node, '!!binary data is not valid base64');
      return new Uint8Array(v);
    }
    if (v instanceof Date) return source;
    if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v) && /^[-+]?[0-9]+$/.test(source)) return BigInt(source);
    if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return v;
    return this.fail(path, node, `unsupported scalar ${this.describe(node)}`);
  }

  /** Any YAML value, kept as data. */
  value(node: N, path: string): YamlValue {
    if (isMap(node)) return this.yamlMap(node, path);
    if (isSeq(node)) return markStyle(node.items.map((item, i) => this.value(item as N, `${path}[${i}]`)), node.flow);
    return this.scalar(node, path);
  }

  yamlMap(node: N, path: string): YamlMap {
    const f = this.fields(node, path, 'a mapping');
    return markStyle(f.rest(), node && isMap(node) ? node.flow : false);
  }

  describe(node: N): string {
    if (node === null || node === undefined) return 'nothing';
    if (isMap(node)) return 'a mapping';
    if (isSeq(node)) return 'a sequence';
    if (isAlias(node)) return 'an alias';
    if (isScalar(node)) {
      const v: unknown = node.value;
      if (v === null) return 'null';
      if (v instanceof Uint8Array) return '!!binary data';
      if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}...` : v)}`;
      if (typeof v === 'number' || typeof v === 'bigint') return `the number ${String((node as { source?: string }).source ?? v)}`;
      if (typeof v === 'boolean') return String(v);
      return 'a scalar';
    }
    return 'an unknown node';
  }
}

/** The entries of one YAML mapping, taken one by one; what is left over is the `extra` bag. */
class Fields {
  private readonly entries = new Map<string, { node: N; taken: boolean }>();

  constructor(
    private readonly r: DocReader,
    readonly node: YamlNode,
    private readonly path: string,
  ) {
    for (const pair of (node as unknown as { items: Pair[] }).items) {
      const key = r.keyOf(pair, path);
      if (this.entries.has(key)) r.fail(this.pathOf(key), pair.key as N, 'duplicate key');
      this.entries.set(key, { node: pair.value as N, taken: false });
    }
  }

  pathOf(key: string): string {
    const part = /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? key : JSON.stringify(key);
    return this.path ? `${this.path}.${part}` : part;
  }

  /** The value node of `key` without taking it (undefined when absent). */
  peek(key: string): N | undefined {
    const e = this.entries.get(key);
    return e ? e.node : undefined;
  }

  /** The value node of `key`, taken (undefined when absent; null for `key:` with no value). */
  take(key: string): N | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    e.taken = true;
    return e.node;
  }

  optional<T>(key: string, read: Reader<T>): T | undefined {
    const node = this.take(key);
    if (node === undefined) return undefined;
    return read(this.r, node, this.pathOf(key));
  }

  /** Every key not taken, as data, in file order. */
  rest(): YamlMap {
    const out: YamlMap = {};
    for (const [key, e] of this.entries) {
      if (!e.taken) defineKey(out, key, this.r.value(e.node, this.pathOf(key)));
    }
    return out;
  }
}

// ---------------------------------------------------------------- readers

const str: Reader<string> = (r, n, p) => r.str(n, p);
const int: Reader<number> = (r, n, p) => r.int(n, p);
const value: Reader<YamlValue> = (r, n, p) => r.value(n, p);

const strOrNull: Reader<string | null> = (r, n, p) => (r.scalar(n, p) === null ? null : r.str(n, p));

const timestamp: Reader<string> = (r, n, p) => {
  const s = r.str(n, p);
  if (s === '') return ZERO_TIME;
  if (!TIMESTAMP.test(s)) r.fail(p, n, `expected a timestamp like 2024-06-05T16:53:56.841481379+05:30, got ${JSON.stringify(s)}`);
  return s;
};

const base64: Reader<string> = (r, n, p) => {
  const s = r.str(n, p);
  if (!BASE64.test(s)) r.fail(p, n, 'expected base64 data');
  return s;
};

const body: Reader<HttpBody> = (r, n, p) => {
  const v = r.scalar(n, p);
  return v instanceof Uint8Array ? v : r.str(n, p);
};

const strMap: Reader<Record<string, string>> = (r, n, p) => {
  if (n === null || (isScalar(n) && n.value === null)) return {};
  const f = r.fields(n, p, 'a mapping of strings');
  const out: Record<string, string> = {};
  for (const pair of (n as unknown as { items: Pair[] }).items) {
    const key = r.keyOf(pair, p);
    defineKey(out, key, r.str(f.take(key), f.pathOf(key)));
  }
  return markStyle(out, isMap(n) ? n.flow : false);
};

function seqOf<T>(read: Reader<T>): Reader<T[]> {
  return (r, n, p) => {
    if (n === null || (isScalar(n) && n.value === null)) return [];
    if (!isSeq(n)) return r.fail(p, n, `expected a sequence, got ${r.describe(n)}`);
    return markStyle(
      n.items.map((item, i) => read(r, item as N, `${p}[${i}]`)),
      n.flow,
    );
  };
}

/** A mapping kept whole, the listed keys read (and checked) with their reader. */
function openMap(known: Record<string, Reader<YamlValue>>): Reader<YamlMap> {
  return (r, n, p) => {
    if (n === null || (isScalar(n) && n.value === null)) return markStyle({}, false);
    const f = r.fields(n, p, 'a mapping');
    const out: YamlMap = {};
    for (const pair of (n as unknown as { items: Pair[] }).items) {
      const key = r.keyOf(pair, p);
      const read = Object.hasOwn(known, key) ? known[key]! : value;
      defineKey(out, key, read(r, f.take(key), f.pathOf(key)));
    }
    return markStyle(out, isMap(n) ? n.flow : false);
  };
}

/** Sets a key without ever touching a prototype (`__proto__` is just a key here). */
function defineKey(target: object, key: string, v: unknown): void {
  Object.defineProperty(target, key, { value: v, enumerable: true, writable: true, configurable: true });
}

function assignDefined<T extends object, K extends keyof T>(target: T, key: K, v: T[K] | undefined): void {
  if (v !== undefined) target[key] = v;
}

function withExtra<T extends { extra?: Extra }>(target: T, extra: YamlMap): T {
  if (Object.keys(extra).length > 0) target.extra = extra;
  return target;
}
