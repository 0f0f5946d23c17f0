import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DebugkitError } from '../../../core/errors.js';
import { parseMockSet } from './parse.js';
import { numberMocks, serializeMockSet } from './serialize.js';
import { ES_FILE, GENERIC_HEAD, httpMock, SQL_FILE } from './testkit.js';
import type { GenericMock, HttpMock, Mock, PostgresMock } from './types.js';

const read = (file: string) => fs.readFileSync(file, 'utf8');

function failure(mocks: unknown[]): DebugkitError {
  try {
    serializeMockSet(mocks as Mock[]);
  } catch (err) {
    expect(err).toBeInstanceOf(DebugkitError);
    expect((err as DebugkitError).code).toBe('INVALID_ARGUMENT');
    return err as DebugkitError;
  }
  throw new Error('expected serializeMockSet to fail');
}

describe('serializeMockSet round trips the real Keploy files', () => {
  for (const file of [SQL_FILE, ES_FILE]) {
    const name = file.split('/').at(-2);

    it(`${name}: parse -> serialize -> parse equals the first parse`, () => {
      const first = parseMockSet(read(file), file);
      const second = parseMockSet(serializeMockSet(first), file);
      expect(second).toEqual(first);
    });

    it(`${name}: writes back exactly the bytes Keploy wrote`, () => {
      const text = read(file);
      expect(serializeMockSet(parseMockSet(text, file))).toBe(text);
    });

    it(`${name}: the same bytes from plain copies (Keploy's layout defaults, no remembered styles)`, () => {
      const text = read(file);
      expect(serializeMockSet(structuredClone(parseMockSet(text, file)))).toBe(text);
    });
  }

  it('an empty list is an empty file', () => {
    expect(serializeMockSet([])).toBe('');
    expect(parseMockSet('', 'f')).toEqual([]);
  });
});

describe('serializeMockSet writes mocks built in code as Keploy would', () => {
  it('orders fields like Keploy, sorts Go maps, omits what yaml.v3 omits', () => {
    const mock = httpMock({ metadata: { type: 'HTTP_CLIENT', operation: 'GET', name: 'Http' } });
    mock.spec.req.url_params = { limit: '3' };
    mock.spec.resp.header = { 'X-B': '2', 'Content-Type': 'application/json', 'X-A': '1' };
    const text = serializeMockSet([mock]);
    expect(text).toBe(
      [
        'version: api.keploy.io/v1beta1',
        'kind: Http',
        'name: mock-0',
        'spec:',
        '    metadata:',
        '        name: Http',
        '        operation: GET',
        '        type: HTTP_CLIENT',
        '    req:',
        '        method: GET',
        '        proto_major: 1',
        '        proto_minor: 1',
        '        url: /v1/charges?limit=3',
        '        url_params:',
        '            limit: "3"',
        '        header:',
        "            Accept: '*/*'",
        '        body: ""',
        '        timestamp: 0001-01-01T00:00:00Z',
        '    resp:',
        '        status_code: 200',
        '        header:',
        '            Content-Type: application/json',
        '            X-A: "1"',
        '            X-B: "2"',
        `        body: '{"ok":true}'`,
        '        status_message: ""',
        '        proto_major: 0',
        '        proto_minor: 0',
        '        timestamp: 0001-01-01T00:00:00Z',
        '    objects: []',
        '    created: 1704153600',
        '    reqTimestampMock: 2024-01-02T00:00:00.5Z',
        '    resTimestampMock: 2024-01-02T00:00:00.75Z',
        '',
      ].join('\n'),
    );
    const noExtras = httpMock({ created: 0, reqTimestampMock: undefined, resTimestampMock: '0001-01-01T00:00:00Z' });
    noExtras.spec.req.url_params = {};
    const plain = serializeMockSet([noExtras]);
    expect(plain).not.toMatch(/created|TimestampMock|url_params/);
  });

  it('writes multi-line bodies as block literals and non-UTF-8 bodies as !!binary, both reading back', () => {
    const html = '<html>\n  <body>hi</body>\n</html>\n';
    const bytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff]);
    const mock = httpMock();
    mock.spec.resp.body = html;
    mock.spec.req.body = bytes;
    const text = serializeMockSet([mock]);
    expect(text).toContain('        body: !!binary iVBORw0KGgr/\n');
    expect(text).toContain('        body: |\n            <html>\n              <body>hi</body>\n            </html>\n        status_message: ""');
    const [back] = parseMockSet(text, 'f') as HttpMock[];
    expect(back!.spec.resp.body).toBe(html);
    expect(back!.spec.req.body).toEqual(bytes);
    expect(parseMockSet(text, 'f')).toEqual([mock]);
  });

  it('puts extra keys where Keploy has them, unknown ones last, and refuses duplicates of modeled fields', () => {
    const mock = httpMock();
    mock.extra = { zzz: 1, curl: 'curl x' };
    mock.connectionId = '7';
    mock.spec.extra = { app_port: 8080, assertions: { noise: ['a'] } };
    mock.spec.req.extra = { form: [{ key: 'a', values: ['1'] }] };
    const text = serializeMockSet([mock]);
    expect(text.split('\n').filter((l) => /^\S/.test(l))).toEqual(['version: api.keploy.io/v1beta1', 'kind: Http', 'name: mock-0', 'spec:', 'curl: curl x', 'connectionId: "7"', 'zzz: 1']);
    expect(text).toMatch(/ {4}objects: \[\]\n {4}assertions:\n {8}noise:\n {12}- a\n {4}created: 1704153600\n[\s\S]*resTimestampMock: .*\n {4}app_port: 8080\n/);
    expect(text).toMatch(/ {8}body: ""\n {8}form:\n {12}- key: a\n {14}values:\n {16}- "1"\n {8}timestamp:/);
    expect(parseMockSet(text, 'f')).toEqual([mock]);

    const dup = httpMock();
    dup.spec.req.extra = { method: 'POST' };
    expect(failure([dup]).message).toBe('Cannot write mock 1 (mock-0): spec.req.extra.method: duplicates a modeled field; set the field itself');
  });

  it("writes Postgres packets built in code with Keploy's flow fields", () => {
    const mock: PostgresMock = {
      version: 'api.keploy.io/v1beta1',
      kind: 'Postgres',
      name: 'mock-0',
      connectionId: '3',
      spec: {
        metadata: { type: 'config' },
        postgresrequests: [{ auth_type: 0, query: { string: 'SELECT 1' }, identifier: 'ClientRequest', header: ['Q'], bind: [{ parameters: [[49]], result_format_codes: [1] }] }],
        postgresresponses: [
          {
            header: ['T', 'D', 'C', 'Z'],
            identifier: 'ServerResponse',
            authentication_md5_password: { salt: [0, 0, 0, 0] },
            row_description: { fields: [{ field_name: '?column?', data_type_oid: 23 }] },
            data_row: [{ row_values: ['1', null] }],
            command_complete: [{ command_tag_type: 'SELECT 1' }],
            ready_for_query: { txstatus: 73 },
            msg_type: 90,
            auth_type: 0,
          },
        ],
        reqtimestampmock: '2024-06-05T16:53:56.841481379+05:30',
        restimestampmock: '2024-06-05T16:53:56.843081163+05:30',
      },
    };
    const text = serializeMockSet([mock]);
    expect(text).toContain(
      [
        '    postgresrequests:',
        '        - header: [Q]',
        '          identifier: ClientRequest',
        '          bind:',
        '            - parameters: [[49]]',
        '              result_format_codes: [1]',
        '          query:',
        '            string: SELECT 1',
        '          auth_type: 0',
        '    postgresresponses:',
        '        - header: [T, D, C, Z]',
        '          identifier: ServerResponse',
        '          authentication_md5_password:',
        '            salt: [0, 0, 0, 0]',
        '          command_complete:',
        '            - command_tag_type: SELECT 1',
        '          data_row: [{row_values: ["1", null]}]',
        '          ready_for_query:',
        '            txstatus: 73',
        "          row_description: {fields: [{field_name: '?column?', data_type_oid: 23}]}",
        '          msg_type: 90',
        '          auth_type: 0',
        '    reqtimestampmock: 2024-06-05T16:53:56.841481379+05:30',
      ].join('\n'),
    );
    expect(text.endsWith('connectionId: "3"\n')).toBe(true);
    const [back] = parseMockSet(text, 'f') as PostgresMock[];
    expect(back).toEqual(mock);
  });

  it("writes Generic mocks with Keploy's lowercase keys", () => {
    const mock: GenericMock = {
      version: 'api.keploy.io/v1beta1',
      kind: 'Generic',
      name: 'mock-0',
      spec: {
        metadata: { type: 'config' },
        genericrequests: [{ origin: 'client', message: [{ type: 'string', data: '*1\r\n$4\r\nping\r\n' }] }],
        genericresponses: [{ origin: 'server', message: [{ type: 'binary', data: 'K1BPTkcNCg==' }] }],
        reqtimestampmock: '2024-06-05T16:53:56Z',
        restimestampmock: '2024-06-05T16:53:57Z',
      },
    };
    const text = serializeMockSet([mock]);
    expect(text).toBe(
      [
        ...GENERIC_HEAD,
        '              data: "*1\\r\\n$4\\r\\nping\\r\\n"',
        '    genericresponses:',
        '        - origin: server',
        '          message:',
        '            - type: binary',
        '              data: K1BPTkcNCg==',
        '    reqtimestampmock: 2024-06-05T16:53:56Z',
        '    restimestampmock: 2024-06-05T16:53:57Z',
        '',
      ].join('\n'),
    );
    expect(parseMockSet(text, 'f')).toEqual([mock]);
  });

  it('separates documents with ---, and numberMocks names them mock-0.. without touching the input', () => {
    const mocks = [httpMock({}, 'mocks'), httpMock({}, 'mocks')];
    const numbered = numberMocks(mocks);
    expect(numbered.map((m) => m.name)).toEqual(['mock-0', 'mock-1']);
    expect(mocks.map((m) => m.name)).toEqual(['mocks', 'mocks']);
    const text = serializeMockSet(numbered);
    expect(text.match(/^---$/gm)).toHaveLength(1);
    expect(text.startsWith('version:')).toBe(true);
    expect(parseMockSet(text, 'f').map((m) => m.name)).toEqual(['mock-0', 'mock-1']);
  });

  it('refuses values it cannot write, naming the mock and the field', () => {
    const badStatus = httpMock();
    (badStatus.spec.resp as { status_code: unknown }).status_code = '200';
    expect(failure([httpMock(), badStatus]).message).toBe('Cannot write mock 2 (mock-0): spec.resp.status_code: expected an integer, got the string "200"');
    const badTime = httpMock();
    (badTime.spec as { reqTimestampMock: unknown }).reqTimestampMock = new Date();
    expect(failure([badTime]).message).toContain('spec.reqTimestampMock: expected a timestamp like 2024-06-05T16:53:56.841481379+05:30, got a Date');
    const hole = httpMock();
    hole.spec.objects = [1, undefined as never];
    expect(failure([hole]).message).toContain('spec.objects[1]: undefined in a list');
    const fn = httpMock();
    fn.spec.extra = { f: (() => 1) as never };
    expect(failure([fn]).message).toContain('spec.f: cannot be written as YAML: a function');
    expect(failure([null]).message).toBe('Cannot write mock 1: not a mock object');
  });
});
