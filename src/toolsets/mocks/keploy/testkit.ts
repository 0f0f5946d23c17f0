import path from 'node:path';
import { Lexer } from 'yaml';
import type { HttpMock } from './types.js';
import { KEPLOY_FIXTURES } from '../../../../test/helpers/fixtures.js';

/** The real Keploy files (never modified: tests copy them when they need a directory). */
export const FIXTURES = KEPLOY_FIXTURES;
export const SQL_FILE = path.join(FIXTURES, 'mux-sql/mocks.yaml');
export const ES_FILE = path.join(FIXTURES, 'mux-elasticsearch/mocks.yaml');

/** A complete Http mock as Keploy writes one, for tests to vary. */
export function httpMock(overrides: Partial<HttpMock['spec']> = {}, name = 'mock-0'): HttpMock {
  return {
    version: 'api.keploy.io/v1beta1',
    kind: 'Http',
    name,
    spec: {
      metadata: { type: 'HTTP_CLIENT', operation: 'GET', name: 'Http' },
      req: { method: 'GET', proto_major: 1, proto_minor: 1, url: '/v1/charges?limit=3', header: { Accept: '*/*' }, body: '', timestamp: '0001-01-01T00:00:00Z' },
      resp: {
        status_code: 200,
        header: { 'Content-Type': 'application/json' },
        body: '{"ok":true}',
        status_message: '',
        proto_major: 0,
        proto_minor: 0,
        timestamp: '0001-01-01T00:00:00Z',
      },
      objects: [],
      created: 1704153600,
      reqTimestampMock: '2024-01-02T00:00:00.5Z',
      resTimestampMock: '2024-01-02T00:00:00.75Z',
      ...overrides,
    },
  };
}

/** The lines of a Generic mock-0 as Keploy writes it, up to its first request message's type (a string). */
export const GENERIC_HEAD: readonly string[] = [
  'version: api.keploy.io/v1beta1',
  'kind: Generic',
  'name: mock-0',
  'spec:',
  '    metadata:',
  '        type: config',
  '    genericrequests:',
  '        - origin: client',
  '          message:',
  '            - type: string',
];

/** The length (as written, between the quotes) of every double-quoted scalar in `text`, by yaml's own lexer. */
export const quotedLengths = (text: string): number[] => [...new Lexer().lex(text)].filter((t) => t.startsWith('"')).map((t) => t.length - 2);
