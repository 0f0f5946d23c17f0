import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/toolsets/mocks/free-port.js';
import { parseMockSet } from '../src/toolsets/mocks/keploy/parse.js';
import { serializeMockSet } from '../src/toolsets/mocks/keploy/serialize.js';
import type { Mock, YamlMap } from '../src/toolsets/mocks/keploy/types.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { mocksWorkspace } from './helpers/programs.js';

/**
 * A mock set Keploy itself recorded from MySQL 9.0.1 (caching_sha2_password, Connector/J with
 * CLIENT_DEPRECATE_EOF and query attributes), replayed by debugkit to PyMySQL and mysql2, which
 * ask for neither DEPRECATE_EOF framing nor (PyMySQL) query attributes. No server runs.
 */

const FIXTURE = path.resolve(import.meta.dirname, '../src/toolsets/mocks/mysql/fixtures/keploy-samples-java-spring-mysql-redis.yaml');

let root: string;
let dk: TestClient;

const tool = (name: string, args: Record<string, unknown>) => dk.structured(name, args);

beforeAll(async () => {
  root = mocksWorkspace('debugkit-mocks-mysql-keploy-', { nodeModules: true });
  // The MySQL mocks of the file as Keploy wrote them (its Redis mocks are another protocol's test).
  const docs = readFileSync(FIXTURE, 'utf8')
    .split(/^---\n/m)
    .filter((d) => /^kind: MySQL$/m.test(d));
  mkdirSync(path.join(root, 'keploy-java', 'test-set-0'), { recursive: true });
  writeFileSync(path.join(root, 'keploy-java', 'test-set-0', 'mocks.yaml'), docs.join('---\n'));
  // The same set with caching_sha2_password's full authentication over plain TCP in Keploy's
  // fields (PerformFullAuthentication, RequestPublicKey, the key as AuthMoreData, the client's
  // encrypted_password, OK), as Keploy writes it when the server has no cached hash: the clients
  // must fetch the RSA key and encrypt the password.
  const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const head = (length: number, seq: number, type: string) => ({ header: { payload_length: length, sequence_id: seq }, packet_type: type });
  const full = parseMockSet(docs.join('---\n'), 'mocks.yaml').map((m) => {
    const spec = m.spec as YamlMap;
    if ((spec['metadata'] as YamlMap)['requestOperation'] !== 'HandshakeV10') return m;
    const [greeting, , ok] = spec['responses'] as YamlMap[];
    ((ok!['header'] as YamlMap)['header'] as YamlMap)['sequence_id'] = 6;
    const requests = [
      (spec['requests'] as YamlMap[])[0]!,
      { header: head(1, 3, 'RequestPublicKey'), message: 'request_public_key' },
      { header: head(256, 5, 'encrypted_password'), message: Buffer.alloc(256).toString('base64') },
    ];
    const responses = [
      greeting!,
      { header: head(2, 2, 'AuthMoreData'), message: { status_tag: 1, data: 'PerformFullAuthentication' } },
      { header: head(1 + key.length, 4, 'AuthMoreData'), message: { status_tag: 1, data: key } },
      ok!,
    ];
    return { ...m, spec: { ...spec, requests, responses } } as Mock;
  });
  mkdirSync(path.join(root, 'keploy-java-full-auth', 'test-set-0'), { recursive: true });
  writeFileSync(path.join(root, 'keploy-java-full-auth', 'test-set-0', 'mocks.yaml'), serializeMockSet(full));
  dk = await connectStdio({ root, args: ['--toolsets', 'mocks'] });
}, 120_000);
afterAll(async () => {
  await dk?.close();
});

describe('mocks: a MySQL set recorded by Keploy (MySQL 9, caching_sha2_password) replayed to real clients', () => {
  it('PyMySQL and mysql2 log in (fast auth), read, insert and list from the structured result sets', async () => {
    const port = await freePort();
    const py = await tool('keploy_mock_test', { command: `/usr/bin/python3 todo.py ${port} any-password`, path: 'keploy-java' });
    expect(py, `the whole report: ${JSON.stringify(py).slice(0, 3000)}`).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    const learn = 'Learn Spring Boot';
    expect(readFileSync(path.join(root, 'todo-py-out.txt'), 'utf8')).toBe(`REPEATABLE-READ id=5 rows=[${[1, 2, 3, 4, 5].map((id) => `(${id}, '00', '${learn}')`).join(', ')}]\n`);
    const node = await tool('keploy_mock_test', { command: `node todo.mjs ${port} another-password`, path: 'keploy-java' });
    expect(node, `the whole report: ${JSON.stringify(node).slice(0, 3000)}`).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'todo-node-out.txt'), 'utf8')).toBe(`REPEATABLE-READ id=5 rows=${[1, 2, 3, 4, 5].map((id) => `${id}/00/${learn}`).join(',')}\n`);
  });

  it("PyMySQL and mysql2 go through caching_sha2_password's full authentication (RSA key request, encrypted password) in Keploy's fields", async () => {
    const port = await freePort();
    writeFileSync(path.join(root, 'todo-py-out.txt'), '');
    writeFileSync(path.join(root, 'todo-node-out.txt'), '');
    const py = await tool('keploy_mock_test', { command: `/usr/bin/python3 todo.py ${port} any-password`, path: 'keploy-java-full-auth' });
    expect(py, `the whole report: ${JSON.stringify(py).slice(0, 3000)}`).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'todo-py-out.txt'), 'utf8')).toMatch(/^REPEATABLE-READ id=5 rows=\[\(1, '00', 'Learn Spring Boot'\)/);
    const node = await tool('keploy_mock_test', { command: `node todo.mjs ${port} another-password`, path: 'keploy-java-full-auth' });
    expect(node, `the whole report: ${JSON.stringify(node).slice(0, 3000)}`).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'todo-node-out.txt'), 'utf8')).toMatch(/^REPEATABLE-READ id=5 rows=1\/00\/Learn Spring Boot,/);
  });
});
