import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DebugkitError } from '../../../core/errors.js';
import { parseMockSet } from './parse.js';
import { ES_FILE, SQL_FILE } from './testkit.js';
import type { HttpMock, Mock, PostgresMock } from './types.js';

const read = (file: string) => fs.readFileSync(file, 'utf8');

function failure(text: string, file = 'set/mocks.yaml'): DebugkitError {
  try {
    parseMockSet(text, file);
  } catch (err) {
    expect(err).toBeInstanceOf(DebugkitError);
    expect((err as DebugkitError).code).toBe('INVALID_ARGUMENT');
    return err as DebugkitError;
  }
  throw new Error('expected parseMockSet to fail');
}

const HTTP_DOC = `version: api.keploy.io/v1beta1
kind: Http
name: mock-0
spec:
    metadata:
        name: Http
    req:
        method: GET
        proto_major: 1
        proto_minor: 1
        url: /x
        header: {}
        body: ""
        timestamp: 0001-01-01T00:00:00Z
    resp:
        status_code: 200
        header: {}
        body: ok
        status_message: ""
        proto_major: 0
        proto_minor: 0
        timestamp: 0001-01-01T00:00:00Z
    objects: []
`;

describe('parseMockSet on the Postgres fixture (mux-sql)', () => {
  const mocks = parseMockSet(read(SQL_FILE), SQL_FILE) as PostgresMock[];

  it('reads 8 Postgres mocks named mock-0..mock-7 with connectionId "0"', () => {
    expect(mocks).toHaveLength(8);
    expect(mocks.map((m) => m.kind)).toEqual(Array(8).fill('Postgres'));
    expect(mocks.map((m) => m.name)).toEqual(['mock-0', 'mock-1', 'mock-2', 'mock-3', 'mock-4', 'mock-5', 'mock-6', 'mock-7']);
    expect(mocks.every((m) => m.version === 'api.keploy.io/v1beta1' && m.connectionId === '0')).toBe(true);
    expect(mocks.every((m) => m.extra === undefined && m.spec.extra === undefined)).toBe(true);
  });

  it('keeps the lowercase spec keys and the nanosecond timestamps as written', () => {
    const spec = mocks[0]!.spec;
    expect(spec.metadata).toEqual({ type: 'config' });
    expect(spec.reqtimestampmock).toBe('2024-06-05T16:53:56.841481379+05:30');
    expect(spec.restimestampmock).toBe('2024-06-05T16:53:56.843081163+05:30');
    expect(mocks[6]!.spec.reqtimestampmock).toBe('2024-06-05T16:54:36.29409342+05:30');
  });

  it('reads the startup exchange (mock-0)', () => {
    const [req] = mocks[0]!.spec.postgresrequests;
    expect(req!.identifier).toBe('StartupRequest');
    expect(req!.header).toBeUndefined();
    expect(req!.length).toBe(102);
    expect(req!.payload).toMatch(/^AAAAZgADAABkYXRlc3R5bGU/);
    expect(req!.startup_message).toEqual({
      protocolversion: 196608,
      parameters: { client_encoding: 'UTF8', database: 'postgres', datestyle: 'ISO, MDY', extra_float_digits: '2', user: 'postgres' },
    });
    expect(req!.auth_type).toBe(0);
    const [resp] = mocks[0]!.spec.postgresresponses;
    expect(resp).toMatchObject({ header: ['R'], identifier: 'ServerResponse', msg_type: 82, auth_type: 5 });
    expect(resp!.authentication_md5_password).toEqual({ salt: [199, 65, 40, 14] });
  });

  it('reads the password message and the server parameters (mock-1)', () => {
    const req = mocks[1]!.spec.postgresrequests[0]!;
    expect(req.header).toEqual(['p']);
    expect(req.password_message).toEqual({ password: 'md5ea6eaeb31a7d50813faea02c4f2ebe69' });
    const resp = mocks[1]!.spec.postgresresponses[0]!;
    expect(resp.header).toEqual(['R', 'S', 'S', 'S', 'S', 'S', 'S', 'S', 'S', 'S', 'S', 'S', 'K', 'Z']);
    expect(resp.backend_key_data).toEqual({ process_id: 85, secret_key: 2100181801 });
    expect(resp.parameter_status).toHaveLength(13);
    expect(resp.parameter_status![0]).toEqual({ name: 'application_name', value: '' });
    expect(resp.parameter_status!.find((p) => p.name === 'is_superuser')!.value).toBe('on');
    expect(resp.ready_for_query).toEqual({ txstatus: 73 });
  });

  it('reads parse/describe, bind/execute and the rows, quoted header letters included', () => {
    const parse = mocks[2]!.spec.postgresrequests[0]!;
    expect(parse.header).toEqual(['P', 'D']);
    expect(parse.parse).toEqual([{ name: '', query: 'INSERT INTO products(name, price) VALUES($1, $2) RETURNING id', parameter_oids: [] }]);
    expect(parse.describe).toEqual({ object_type: 83, name: '' });
    expect(parse.msg_type).toBe(68);
    const described = mocks[2]!.spec.postgresresponses[0]!;
    expect(described.header).toEqual(['1', 't', 'T', 'Z']);
    expect(described.parameter_description).toEqual({ parameteroids: [25, 1700] });
    expect(described.row_description!.fields![0]).toEqual({
      field_name: 'id',
      table_oid: 16386,
      table_attribute_number: 1,
      data_type_oid: 23,
      data_type_size: 4,
      type_modifier: -1,
      format: 0,
    });

    const bind = mocks[3]!.spec.postgresrequests[0]!;
    expect(bind.bind).toEqual([
      {
        parameters: [
          [66, 117, 98, 98, 108, 101, 115],
          [49, 50, 51],
        ],
        result_format_codes: [1],
      },
    ]);
    expect(bind.execute).toEqual([{}]);
    const rows = mocks[5]!.spec.postgresresponses[0]!;
    expect(rows.header).toEqual(['2', 'D', 'D', 'C', 'Z']);
    expect(rows.command_complete).toEqual([{ command_tag_type: 'SELECT 2' }]);
    expect(rows.data_row).toEqual([{ row_values: ['b64:AAAAAQ==', 'Bubbles', '123.00'] }, { row_values: ['b64:AAAAAg==', 'Bubbles', '123.00'] }]);
    expect(mocks[7]!.spec.postgresrequests[0]!.bind).toEqual([{ parameters: [[49]] }]);
  });
});

describe('parseMockSet on the Http fixture (mux-elasticsearch)', () => {
  const mocks = parseMockSet(read(ES_FILE), ES_FILE) as HttpMock[];

  it('reads 3 Http mocks without connectionId', () => {
    expect(mocks.map((m) => [m.kind, m.name, m.connectionId])).toEqual([
      ['Http', 'mock-0', undefined],
      ['Http', 'mock-1', undefined],
      ['Http', 'mock-2', undefined],
    ]);
  });

  it('reads the request and response of mock-1 exactly', () => {
    const spec = mocks[1]!.spec;
    expect(spec.metadata).toEqual({ name: 'Http', operation: 'POST', type: 'HTTP_CLIENT' });
    expect(spec.req).toEqual({
      method: 'POST',
      proto_major: 1,
      proto_minor: 1,
      url: '/documents/_doc',
      header: {
        'Accept-Encoding': 'gzip',
        'Content-Length': '50',
        'Content-Type': 'application/json',
        'User-Agent': 'go-elasticsearch/8.14.0 (linux amd64; Go 1.22.5)',
        'X-Elastic-Client-Meta': 'es=8.14.0,go=1.22.5,t=8.6.0,hc=1.22.5',
      },
      body: '{"title":"somethingTitle","content":"something22"}',
      timestamp: '0001-01-01T00:00:00Z',
    });
    expect(spec.resp.status_code).toBe(201);
    expect(spec.resp.header.Location).toBe('/documents/_doc/1L5WJ5EBIPW7ZBPsPO8T');
    expect(spec.resp.header['Content-Length']).toBe('161');
    expect(JSON.parse(spec.resp.body as string)).toMatchObject({ result: 'created', _id: '1L5WJ5EBIPW7ZBPsPO8T' });
    expect([spec.resp.status_message, spec.resp.proto_major, spec.resp.proto_minor]).toEqual(['', 0, 0]);
    expect(spec.objects).toEqual([]);
    expect(spec.created).toBe(1722941848);
    expect(spec.reqTimestampMock).toBe('2024-08-06T16:27:28.815334036+05:30');
    expect(spec.resTimestampMock).toBe('2024-08-06T16:27:28.815334036+05:30');
  });

  it('reads an empty body as "" (mock-0 is a GET)', () => {
    expect(mocks[0]!.spec.req.body).toBe('');
    expect(mocks[0]!.spec.req.url).toBe('/documents/_doc/075IJ5EBIPW7ZBPs5-8y');
    expect(mocks[2]!.spec.resp.body).toContain('"result":"updated"');
  });
});

describe('parseMockSet reads files the way Keploy (yaml.v3) does', () => {
  it('takes a plain scalar in a string field as its text, and null or missing fields as zero values', () => {
    const text = HTTP_DOC.replace('header: {}', 'header:\n            Content-Length: 164\n            X-Float: 1.10\n            X-Bool: true')
      .replace('body: ok', 'body:')
      .replace('status_message: ""', 'status_message: ~')
      .replace('    objects: []\n', '');
    const [mock] = parseMockSet(text, 'f') as HttpMock[];
    expect(mock!.spec.req.header).toEqual({ 'Content-Length': '164', 'X-Float': '1.10', 'X-Bool': 'true' });
    expect(mock!.spec.resp.body).toBe('');
    expect(mock!.spec.resp.status_message).toBe('');
    expect(mock!.spec.objects).toEqual([]);
  });

  it('fills the fields Keploy always writes when a minimal document leaves them out', () => {
    const [mock] = parseMockSet('version: v\nkind: Http\nname: m\nspec:\n  req: {method: GET, url: /}\n  resp: {status_code: 204}\n', 'f') as HttpMock[];
    expect(mock!.spec).toEqual({
      metadata: {},
      req: { method: 'GET', proto_major: 0, proto_minor: 0, url: '/', header: {}, body: '', timestamp: '0001-01-01T00:00:00Z' },
      resp: { status_code: 204, header: {}, body: '', status_message: '', proto_major: 0, proto_minor: 0, timestamp: '0001-01-01T00:00:00Z' },
      objects: [],
    });
  });

  it('reads a !!binary body (yaml.v3 writes a non-UTF-8 Go string that way) as bytes', () => {
    const text = HTTP_DOC.replace('body: ok', 'body: !!binary //79AAE=');
    const [mock] = parseMockSet(text, 'f') as HttpMock[];
    expect(mock!.spec.resp.body).toEqual(new Uint8Array([0xff, 0xfe, 0xfd, 0x00, 0x01]));
  });

  it('skips empty documents (a trailing ---) and reads an empty file as no mocks', () => {
    expect(parseMockSet('', 'f')).toEqual([]);
    expect(parseMockSet('---\n', 'f')).toEqual([]);
    expect(parseMockSet(`${HTTP_DOC}---\n`, 'f')).toHaveLength(1);
    expect(parseMockSet(`---\n${HTTP_DOC}---\n# only a comment\n`, 'f')).toHaveLength(1);
  });

  it('keeps unknown keys at every level in extra, and other Keploy kinds verbatim', () => {
    const text =
      HTTP_DOC.replace('kind: Http', 'kind: Http\ncurl: curl http://x')
        .replace('    objects: []', '    objects: []\n    app_port: 8080\n    assertions:\n        noise: {header.Date: []}')
        .replace('        url: /x', '        url: /x\n        body_ref: {path: a/b, size: 2000000}') +
      '---\nversion: api.keploy.io/v1beta1\nkind: Mongo\nname: mock-1\nspec:\n    metadata: {operation: "{ OpMsg }"}\n    requests:\n        - header: {length: 1}\n';
    const [http, mongo] = parseMockSet(text, 'f') as [HttpMock, Mock];
    expect(http.extra).toEqual({ curl: 'curl http://x' });
    expect(http.spec.extra).toEqual({ app_port: 8080, assertions: { noise: { 'header.Date': [] } } });
    expect(http.spec.req.extra).toEqual({ body_ref: { path: 'a/b', size: 2000000 } });
    expect(mongo.kind).toBe('Mongo');
    expect(mongo.spec).toEqual({ metadata: { operation: '{ OpMsg }' }, requests: [{ header: { length: 1 } }] });
  });

  it('keeps integers beyond 2^53 exactly, as bigint', () => {
    const [mock] = parseMockSet(`${HTTP_DOC}    app_port: 18446744073709551615\n`, 'f') as HttpMock[];
    expect(mock!.spec.extra!.app_port).toBe(18446744073709551615n);
  });

  it('never lets a key named __proto__ touch a prototype', () => {
    const [mock] = parseMockSet(HTTP_DOC.replace('header: {}', 'header: {__proto__: polluted}'), 'f') as HttpMock[];
    expect(Object.getOwnPropertyNames(mock!.spec.req.header)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(mock!.spec.req.header)).toBe(Object.prototype);
  });
});

describe('parseMockSet on corrupt files: precise errors, never a crash', () => {
  const two = `${HTTP_DOC}---\n${HTTP_DOC.replace('mock-0', 'mock-1')}`;

  it('bad YAML names the file, the document and the line', () => {
    const err = failure(`${HTTP_DOC}---\nversion: x\nkind: [Http\n`, 'keploy/a/mocks.yaml');
    expect(err.message).toMatch(/^Invalid Keploy mock set keploy\/a\/mocks\.yaml: document 2, line \d+: not valid YAML: /);
  });

  it('a document without kind', () => {
    const err = failure(two.replace(/kind: Http\nname: mock-1/, 'name: mock-1'));
    expect(err.message).toBe(
      'Invalid Keploy mock set set/mocks.yaml: document 2 (mock-1), line 25: kind: missing; expected one of Http, Postgres, Generic, Http2, Redis, MySQL, PostgresV2, gRPC, Mongo, DNS, SQL',
    );
  });

  it('an unknown kind', () => {
    const err = failure(two.replace(/kind: Http\nname: mock-1/, 'kind: Banana\nname: mock-1'));
    expect(err.message).toContain('document 2 (mock-1), line 26: kind: unknown kind "Banana"; Keploy\'s kinds are Http, Postgres, Generic,');
  });

  it('a wrong type for a field', () => {
    expect(failure(two.replace('status_code: 200\n        header: {}\n        body: ok', 'status_code: "200"\n        header: {}\n        body: ok')).message).toBe(
      'Invalid Keploy mock set set/mocks.yaml: document 1 (mock-0), line 16: spec.resp.status_code: expected an integer, got the string "200"',
    );
    expect(failure(HTTP_DOC.replace('header: {}', 'header: [a, b]')).message).toMatch(/document 1 \(mock-0\), line 12: spec\.req\.header: expected a mapping of strings, got a sequence$/);
    expect(failure(HTTP_DOC.replace('proto_major: 1', 'proto_major: 1.5')).message).toContain('spec.req.proto_major: expected an integer, got the number 1.5');
    expect(failure(HTTP_DOC.replace('timestamp: 0001-01-01T00:00:00Z', 'timestamp: yesterday')).message).toContain(
      'spec.req.timestamp: expected a timestamp like 2024-06-05T16:53:56.841481379+05:30, got the string "yesterday"',
    );
    expect(failure(HTTP_DOC.replace('body: ok', 'body: {a: 1}')).message).toContain('spec.resp.body: expected a scalar, got a mapping');
    expect(failure(HTTP_DOC.replace('status_code: 200', 'status_code: 42')).message).toContain('spec.resp.status_code: 42 is not an HTTP status code');
  });

  it('wrong types deep in Postgres and Generic mocks name the packet', () => {
    const sql = read(SQL_FILE);
    const bad = sql.replace('command_tag_type: SELECT 2', 'command_tag_type: [SELECT, 2]');
    expect(failure(bad).message).toMatch(/document 6 \(mock-5\), line \d+: spec\.postgresresponses\[0\]\.command_complete\[0\]\.command_tag_type: expected a scalar, got a sequence$/);
    expect(failure(sql.replace('payload: QgAAACAAAAAAAAIA', 'payload: Qg!!AACAAAAAAAAIA')).message).toContain('document 4 (mock-3)');
    const generic = 'version: v\nkind: Generic\nname: g\nspec:\n  genericrequests:\n    - origin: client\n      message:\n        - type: binary\n          data: "not base64!"\n';
    expect(failure(generic).message).toBe('Invalid Keploy mock set set/mocks.yaml: document 1 (g), line 9: spec.genericrequests[0].message[0].data: expected base64 data');
  });

  it('missing required parts, a document that is not a mapping, aliases, duplicate keys', () => {
    expect(failure(HTTP_DOC.replace(/ {4}resp:[\s\S]*?objects/, '    objects')).message).toMatch(/document 1 \(mock-0\), line 5: spec\.resp: missing$/);
    expect(failure(HTTP_DOC.replace('name: mock-0\n', '')).message).toMatch(/document 1, line 1: name: missing$/);
    expect(failure(HTTP_DOC.replace('method: GET', 'method: ""')).message).toContain('spec.req.method: must not be empty');
    expect(failure('- a\n- b\n').message).toBe('Invalid Keploy mock set set/mocks.yaml: document 1, line 1: expected a mock document (a mapping with version, kind, name and spec), got a sequence');
    expect(failure(HTTP_DOC.replace('method: GET', 'method: &m GET').replace('url: /x', 'url: *m')).message).toContain('spec.req.url: YAML aliases are not supported');
    expect(failure(HTTP_DOC.replace('url: /x', 'url: /x\n        url: /y')).message).toMatch(/document 1 \(mock-0\), line 12: spec\.req\.url: duplicate key$/);
    expect(failure(HTTP_DOC.replace('header: {}', 'header: {1: a, "1": b}')).message).toContain('spec.req.header."1": duplicate key');
  });

  it('binary garbage is an error too', () => {
    const err = failure('\u0000\u0001\u0002: [\n');
    expect(err.message).toMatch(/^Invalid Keploy mock set set\/mocks\.yaml: document 1/);
  });
});
