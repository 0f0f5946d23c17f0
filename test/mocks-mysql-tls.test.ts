import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { freePort } from '../src/toolsets/mocks/free-port.js';
import { startMariadb } from '../src/toolsets/mocks/mysql/testing.js';
import { mocksFixture } from './helpers/mocks-fixture.js';
import { KEPLOY_FIXTURES } from './helpers/fixtures.js';

/**
 * MySQL over TLS: a real MariaDB serving TLS (its own throwaway CA), PyMySQL and mysql2 asking for
 * TLS and verifying the server. Recording terminates the program's TLS with debugkit's CA and
 * opens TLS to MariaDB (verified with upstreamCaFile); replay answers the SSLRequest with TLS
 * (debugkit's leaf) and replays the plaintext, the server stopped. The mariadb command-line client
 * (TLS whenever offered, not verifying: PREFERRED) is recorded and replayed the same way. Keploy's own TLS-recorded
 * connection phase (keploy-docs-mysql.yaml) is replayed to both clients too.
 */

const DOCS_FIXTURE = path.resolve(import.meta.dirname, '../src/toolsets/mocks/mysql/fixtures/keploy-docs-mysql.yaml');
/** A set with HTTP mocks only (Keploy's, for Elasticsearch): no replayer takes a MySQL connection. */
const HTTP_ONLY_FIXTURE = path.join(KEPLOY_FIXTURES, 'mux-elasticsearch/mocks.yaml');

const tool = (name: string, args: Record<string, unknown>) => f.dk.structured(name, args);
const out = (file: string) => readFileSync(path.join(f.root, file), 'utf8');

const f = mocksFixture('debugkit-mocks-mysql-tls-', () => startMariadb('maria-tls-secret', { tls: true }), {
  nodeModules: true,
  prepare: (root, db) => {
    writeFileSync(path.join(root, 'mariadb-ca.pem'), db.caPem!);
    mkdirSync(path.join(root, 'keploy-docs', 'test-set-0'), { recursive: true });
    writeFileSync(path.join(root, 'keploy-docs', 'test-set-0', 'mocks.yaml'), readFileSync(DOCS_FIXTURE, 'utf8'));
  },
});

describe('mocks: MySQL over TLS (a real MariaDB with TLS), recorded decrypted and replayed over TLS', () => {
  it('PyMySQL, mysql2 and the mariadb CLI with TLS: recorded as plaintext (SSLRequest and HandshakeResponse41 in one mock), replayed over TLS without the server; a client in clear replays a TLS recording; clients asking TLS of a clear recording', async () => {
    const port = f.db.port;
    const py = (password: string, item: string, tls = true) => `/usr/bin/python3 shop.py ${port} ${password} ${item}${tls ? ' tls' : ''}`;
    const node = (password: string, item: string, tls = true) => `node shop.mjs ${port} ${password} ${item}${tls ? ' tls' : ''}`;

    // The upstream leg is verified: without the server's CA the recording fails the program's connection, and says why.
    const warnings: string[] = [];
    f.dk.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void warnings.push(String(n.params.data)));
    await f.dk.client.setLoggingLevel('warning');
    const unverified = await tool('keploy_mock_record', { command: py(f.db.password, 'fig'), path: 'keploy-unverified' });
    expect(unverified).toMatchObject({ success: false, mockCount: 0 }); // nothing kept of a login that failed
    expect(warnings.join('\n')).toMatch(
      /MySQL at 127\.0\.0\.1:\d+ over TLS: TLS to 127\.0\.0\.1:\d+ failed: .*certificate.*\(the server's certificate is verified against the system CAs, or upstreamCaFile; insecureUpstream: true skips the check\)/,
    );

    const rec = await tool('keploy_mock_record', { command: py(f.db.password, 'plum'), path: 'keploy-tls-py', upstreamCaFile: 'mariadb-ca.pem' });
    expect(rec).toMatchObject({ success: true, protocols: ['MySQL'] });
    const recorded = out('shop-out.txt');
    expect(recorded).toBe("rows=(('plum', 1),) count=((1,),) tls=TLSv1.3\n");
    const written = readFileSync(path.resolve(f.root, rec.mockFilePath), 'utf8');
    // Keploy's shape: the SSLRequest then the HandshakeResponse41 (sequence 2, sent inside TLS) in one mock's requests.
    expect(written).toMatch(
      /requests:\n\s+- header:\n\s+header:\n\s+payload_length: 32\n\s+sequence_id: 1\n\s+packet_type: SSLRequest\n[^]*?- header:\n\s+header:\n\s+payload_length: \d+\n\s+sequence_id: 2\n\s+packet_type: HandshakeResponse41\n\s+message:\n[^]*?username: app\n\s+auth_response: \[0(, 0){19}\]\n/,
    );
    expect(written).toMatch(/packet_type: COM_QUERY\n\s+message:\n\s+command: 3\n\s+query: INSERT INTO stock VALUES \(.plum., 1\)/);
    expect(written).not.toContain('maria-tls-secret');

    const recNode = await tool('keploy_mock_record', { command: node(f.db.password, 'kiwi'), path: 'keploy-tls-node', upstreamCaFile: 'mariadb-ca.pem' });
    expect(recNode).toMatchObject({ success: true, protocols: ['MySQL'] });
    const recordedNode = out('shop-node-out.txt');
    expect(recordedNode).toMatch(/^kiwi qty=1 price=2\.50 seen=2026-11-23T10:00:00\.000Z n=1 answer=42 tls=TLSv1\.3\n$/);
    expect(readFileSync(path.resolve(f.root, recNode.mockFilePath), 'utf8')).toMatch(/packet_type: SSLRequest\n[^]*?packet_type: HandshakeResponse41\n[^]*?packet_type: COM_STMT_PREPARE\n/);

    // The mariadb command-line client: TLS whenever the server offers it, without verifying (its default).
    const cli = (password: string) => `/usr/bin/python3 mariadb_cli.py ${port} ${password}`;
    const recCli = await tool('keploy_mock_record', { command: cli(f.db.password), path: 'keploy-tls-cli', upstreamCaFile: 'mariadb-ca.pem' });
    expect(recCli).toMatchObject({ success: true, protocols: ['MySQL'] });
    expect(out('cli-out.txt')).toBe('who\tanswer\ncli\t42\n');
    expect(readFileSync(path.resolve(f.root, recCli.mockFilePath), 'utf8')).toMatch(
      /packet_type: SSLRequest\n[^]*?packet_type: HandshakeResponse41\n[^]*?query: SELECT 'cli' AS who, 6 \* 7 AS answer\n/,
    );
    // insecureUpstream: recorded without the server's CA (the recorder's leg to the server verifies nothing).
    const recInsecure = await tool('keploy_mock_record', { command: cli(f.db.password), path: 'keploy-insecure-cli', insecureUpstream: true });
    expect(recInsecure).toMatchObject({ success: true, protocols: ['MySQL'] });
    expect(readFileSync(path.resolve(f.root, recInsecure.mockFilePath), 'utf8')).toMatch(/packet_type: SSLRequest\n[^]*?query: SELECT 'cli' AS who, 6 \* 7 AS answer\n/);

    // A recording in clear from the same server: its greeting offers TLS (CLIENT_SSL).
    const recClear = await tool('keploy_mock_record', { command: node(f.db.password, 'pear', false), path: 'keploy-clear-node' });
    expect(recClear).toMatchObject({ success: true });
    expect(readFileSync(path.resolve(f.root, recClear.mockFilePath), 'utf8')).not.toMatch(/SSLRequest/);
    const recClearPy = await tool('keploy_mock_record', { command: py(f.db.password, 'pear', false), path: 'keploy-clear-py' });
    expect(recClearPy).toMatchObject({ success: true });

    // onMiss record: a set with no MySQL mocks is completed by a TLS connection to the real server,
    // recorded decrypted (the upstream leg verified with upstreamCaFile).
    mkdirSync(path.join(f.root, 'keploy-complete', 'test-set-0'), { recursive: true });
    const completedSet = path.join(f.root, 'keploy-complete', 'test-set-0', 'mocks.yaml');
    writeFileSync(completedSet, readFileSync(HTTP_ONLY_FIXTURE, 'utf8'));
    const completed = await tool('keploy_mock_test', { command: cli(f.db.password), path: 'keploy-complete', onMiss: 'record', upstreamCaFile: 'mariadb-ca.pem' });
    expect(completed).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(completed.mocksRecorded).toBeGreaterThanOrEqual(2); // the connection phase, the query
    expect(out('cli-out.txt')).toBe('who\tanswer\ncli\t42\n');
    const completedYaml = readFileSync(completedSet, 'utf8');
    expect(completedYaml).toMatch(/^kind: Http$/m);
    expect(completedYaml).toMatch(/packet_type: SSLRequest\n[^]*?packet_type: HandshakeResponse41\n[^]*?query: SELECT 'cli' AS who, 6 \* 7 AS answer\n/);
    expect(completedYaml).not.toContain(f.db.password);
    await f.db.stop();

    // Replay over TLS, the server gone, another password.
    writeFileSync(path.join(f.root, 'shop-out.txt'), '');
    const replay = await tool('keploy_mock_test', { command: py('other-password', 'plum'), path: 'keploy-tls-py' });
    expect(replay).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(out('shop-out.txt')).toBe(recorded);
    writeFileSync(path.join(f.root, 'shop-node-out.txt'), '');
    const replayNode = await tool('keploy_mock_test', { command: node('other-password', 'kiwi'), path: 'keploy-tls-node' });
    expect(replayNode).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(out('shop-node-out.txt')).toBe(recordedNode);

    writeFileSync(path.join(f.root, 'cli-out.txt'), '');
    const replayCli = await tool('keploy_mock_test', { command: cli('other-password'), path: 'keploy-tls-cli' });
    expect(replayCli).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(out('cli-out.txt')).toBe('who\tanswer\ncli\t42\n');
    // The set completed with onMiss record replays with the server gone.
    writeFileSync(path.join(f.root, 'cli-out.txt'), '');
    const replayCompleted = await tool('keploy_mock_test', { command: cli('other-password'), path: 'keploy-complete' });
    expect(replayCompleted).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(out('cli-out.txt')).toBe('who\tanswer\ncli\t42\n');

    // A client in clear against a connection phase recorded over TLS only: answered in clear.
    writeFileSync(path.join(f.root, 'shop-out.txt'), '');
    const clear = await tool('keploy_mock_test', { command: py('x', 'plum', false), path: 'keploy-tls-py' });
    expect(clear).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(out('shop-out.txt')).toBe("rows=(('plum', 1),) count=((1,),)\n");

    // A recording in clear: the greeting goes without CLIENT_SSL, so PyMySQL (which uses TLS only
    // when offered) stays in clear and replays; mysql2 requiring TLS is told the server has none.
    writeFileSync(path.join(f.root, 'shop-out.txt'), '');
    const pyClear = await tool('keploy_mock_test', { command: py('x', 'pear'), path: 'keploy-clear-py' });
    expect(pyClear).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(out('shop-out.txt')).toBe("rows=(('pear', 1),) count=((2,),) tls=none\n");
    const nodeClear = await tool('keploy_mock_test', { command: node('x', 'pear'), path: 'keploy-clear-node' });
    expect(nodeClear).toMatchObject({ success: false });
    expect(nodeClear.appOutput).toMatch(/Server does not support secure connection/);
  });

  it("Keploy's own TLS-recorded connection phase (MySQL 8.0.43, SSLRequest, caching_sha2_password full authentication with the password in clear inside TLS) logs PyMySQL and mysql2 in", async () => {
    const port = await freePort();
    const py = await tool('keploy_mock_test', { command: `/usr/bin/python3 login.py ${port} user any-password order_db`, path: 'keploy-docs' });
    expect(py).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(out('login-py-out.txt')).toBe('server=8.0.43 tls=TLSv1.3\n');
    const node = await tool('keploy_mock_test', { command: `node login.mjs ${port} user another-password order_db`, path: 'keploy-docs' });
    expect(node).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(out('login-node-out.txt')).toBe('server=8.0.43 tls=TLSv1.3\n');
  });
});
