import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startMariadb } from '../src/toolsets/mocks/mysql/testing.js';
import { mysqlAsGenerics } from '../src/toolsets/mocks/mysql/keploy.js';
import { parseMockSet } from '../src/toolsets/mocks/keploy/parse.js';
import { serializeMockSet } from '../src/toolsets/mocks/keploy/serialize.js';
import { mocksFixture } from './helpers/mocks-fixture.js';

const tool = (name: string, args: Record<string, unknown>) => f.dk.structured(name, args);

const f = mocksFixture('debugkit-mocks-mysql-', () => startMariadb(), { nodeModules: true });

describe('mocks: MySQL (a real MariaDB), recorded as Keploy MySQL mocks and replayed without the server', () => {
  it('PyMySQL (text protocol, multi-statement) and mysql2 (prepared statements, binary rows, two result sets): replayed with another password; a changed query is a MySQL error', async () => {
    const command = (password: string, item: string) => `/usr/bin/python3 shop.py ${f.db.port} ${password} ${item}`;
    const rec = await tool('keploy_mock_record', { command: command(f.db.password, 'plum'), path: 'keploy-mysql' });
    expect(rec).toMatchObject({ success: true, protocols: ['MySQL'] });
    const written = readFileSync(path.resolve(f.root, rec.mockFilePath), 'utf8');
    expect(written).toMatch(/^kind: MySQL$/m);
    expect(written).not.toMatch(/^kind: Generic$/m);
    expect(written).toMatch(/packet_type: COM_QUERY\n\s+message:\n\s+command: 3\n\s+query: INSERT INTO stock VALUES \(.plum., 1\)/);
    expect(written).toMatch(/packet_type: HandshakeV10/);
    // The login in Keploy's HandshakeResponse41 fields, its auth response zeroed.
    expect(written).toMatch(
      /packet_type: HandshakeResponse41\n\s+message:\n\s+capability_flags: \d+\n[^]*?username: app\n\s+auth_response: \[0(, 0){19}\]\n\s+database: shop\n\s+auth_plugin_name: mysql_native_password\n/,
    );
    expect(written).toMatch(/packet_type: OK\n\s+message:\n\s+header: 0\n\s+affected_rows: 1\n/);
    expect(written).toMatch(/^ {4}reqtimestampmock: \d{4}-/m);
    // As Keploy writes it: the whole connection phase in one config mock (greeting first in its
    // responses), then one `mocks` mock per command.
    expect(written.match(/type: config/g)).toHaveLength(1);
    expect(written).toMatch(
      /^name: mock-0\nspec:\n {4}metadata:\n[^]*?requestOperation: HandshakeV10\n\s+responseOperation: OK\n\s+type: config\n\s+requests:\n\s+- header:\n\s+header:\n\s+payload_length: \d+\n\s+sequence_id: 1\n\s+packet_type: HandshakeResponse41\n[^]*?\n {4}responses:\n\s+- header:\n\s+header:\n\s+payload_length: \d+\n\s+sequence_id: 0\n\s+packet_type: HandshakeV10\n/m,
    );
    expect(written).toMatch(/requestOperation: COM_QUERY\n\s+responseOperation: \w+\n\s+type: mocks\n/);
    const recorded = readFileSync(path.join(f.root, 'shop-out.txt'), 'utf8');
    expect(recorded).toBe("rows=(('plum', 1),) count=((1,),)\n");
    const port = f.db.port;
    const nodeCommand = `node shop.mjs ${port} ${f.db.password} kiwi`;
    const recNode = await tool('keploy_mock_record', { command: nodeCommand, path: 'keploy-mysql-node' });
    expect(recNode).toMatchObject({ success: true, protocols: ['MySQL'] });
    // Result sets, the prepare's answer and the execute's parameters in Keploy's structured fields.
    const writtenNode = readFileSync(path.resolve(f.root, recNode.mockFilePath), 'utf8');
    expect(writtenNode).toMatch(/packet_type: COM_STMT_PREPARE_OK\n\s+message:\n\s+status: 0\n\s+statement_id: \d+\n/);
    expect(writtenNode).toMatch(/packet_type: COM_STMT_EXECUTE\n\s+message:\n\s+status: 23\n[^]*?parameters:\n\s+- type: 253\n\s+unsigned: false\n\s+value: kiwi\n/);
    expect(writtenNode).toMatch(/packet_type: BinaryProtocolResultSet\n\s+message:\n\s+columnCount: 4\n[^]*?name: seen\n\s+value: "?2026-11-23 10:00:00"?\n/);
    expect(writtenNode).toMatch(/packet_type: TextResultSet\n\s+message:\n\s+columnCount: 1\n\s+columns:\n/);
    const recordedNode = readFileSync(path.join(f.root, 'shop-node-out.txt'), 'utf8');
    expect(recordedNode).toBe('kiwi qty=1 price=2.50 seen=2026-11-23T10:00:00.000Z n=1 answer=42\n');
    await f.db.stop();

    writeFileSync(path.join(f.root, 'shop-out.txt'), '');
    // Another password: the client's scramble and its pid (a connection attribute) differ from the recording.
    const replay = await tool('keploy_mock_test', { command: `/usr/bin/python3 shop.py ${port} other-password plum`, path: 'keploy-mysql' });
    expect(replay).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(f.root, 'shop-out.txt'), 'utf8')).toBe(recorded);

    // A set recorded before MySQL was written as Keploy's MySQL kind (the same exchanges as Generic mocks) still replays.
    // (the connection phase was then one Generic mock per step: the greeting, each login step)
    const asGeneric = parseMockSet(written, 'mocks.yaml').flatMap((m) => {
      const g = mysqlAsGenerics(m);
      if (typeof g === 'string') throw new Error(g);
      return g;
    });
    mkdirSync(path.join(f.root, 'keploy-mysql-old', 'generic-set'), { recursive: true });
    writeFileSync(path.join(f.root, 'keploy-mysql-old', 'generic-set', 'mocks.yaml'), serializeMockSet(asGeneric));
    writeFileSync(path.join(f.root, 'shop-out.txt'), '');
    const old = await tool('keploy_mock_test', { command: `/usr/bin/python3 shop.py ${port} other-password plum`, path: 'keploy-mysql-old' });
    expect(old).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(f.root, 'shop-out.txt'), 'utf8')).toBe(recorded);

    // mysql2: prepared statements with binary rows, and two result sets.
    writeFileSync(path.join(f.root, 'shop-node-out.txt'), '');
    const replayNode = await tool('keploy_mock_test', { command: nodeCommand, path: 'keploy-mysql-node' });
    expect(replayNode).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(f.root, 'shop-node-out.txt'), 'utf8')).toBe(recordedNode);

    const changed = await tool('keploy_mock_test', { command: `/usr/bin/python3 shop.py ${port} x pear`, path: 'keploy-mysql' });
    expect(changed).toMatchObject({ success: false });
    expect(changed.misses[0]).toMatch(/^mysql connection to 127\.0\.0\.1:\d+: no recorded mock for COM_QUERY "INSERT INTO stock VALUES \('pear', 1\)/);
    expect(changed.appOutput).toMatch(/debugkit: mysql connection/);
  });
});
