import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type RunningPostgres } from '../src/toolsets/mocks/postgres/testing.js';
import { DebugkitCa } from '../src/toolsets/mocks/tls/ca.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { mocksWorkspace } from './helpers/programs.js';

let root: string;
let dk: TestClient;
let servers: Server[] = [];
let ports: { http: number; https: number };
let hits = 0;

/** An HTTP API and an HTTPS API with a private CA, as real services a program depends on. */
async function startServices(): Promise<void> {
  const ca = await DebugkitCa.load(path.join(root, '.test-ca'));
  writeFileSync(path.join(root, 'upstream-ca.pem'), ca.certPem);
  const leaf = ca.leafFor('localhost');
  const api = createHttpServer((req, res) => {
    hits++;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ path: req.url, stock: 7 }));
  });
  const orders = createHttpsServer({ key: leaf.key, cert: leaf.cert }, (req, res) => {
    hits++;
    let body = '';
    req
      .on('data', (d) => (body += d))
      .on('end', () => {
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ accepted: JSON.parse(body), id: 41 }));
      });
  });
  const listen = (s: Server) => new Promise<number>((r) => s.listen(0, '127.0.0.1', () => r((s.address() as AddressInfo).port)));
  ports = { http: await listen(api), https: await listen(orders) };
  servers = [api, orders];
}

function stopServices(): Promise<void> {
  return Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r())))).then(() => undefined);
}

async function tool(name: string, args: Record<string, unknown>): Promise<any> {
  const r = await dk.tool(name, args);
  expect(r.isError).toBe(false);
  expect(JSON.parse(r.text)).toEqual(r.structured);
  return r.structured;
}

beforeAll(async () => {
  root = mocksWorkspace('debugkit-mocks-');
  await startServices();
  dk = await connectStdio({ root, args: ['--toolsets', 'mocks'] });
});
afterAll(async () => {
  await dk?.close();
  await stopServices().catch(() => undefined);
});

describe('mocks: record, stop the services, replay', () => {
  it('lists no mock sets at first', async () => {
    expect(await tool('keploy_list_mocks', {})).toEqual({
      success: true,
      mockSets: [],
      count: 0,
      path: './keploy',
      message: 'No mock sets found. Use keploy_mock_record to create mocks first.',
    });
  });

  it('records a Python program (urllib, HTTP and HTTPS) and replays it with the services gone', async () => {
    const command = `/usr/bin/python3 client.py ${ports.http} ${ports.https} apple`;
    const rec = await tool('keploy_mock_record', { command, upstreamCaFile: 'upstream-ca.pem' });
    expect(rec).toMatchObject({ success: true, mockCount: 2, protocols: ['HTTP'], message: 'Recorded 2 mocks (HTTP)', configuration: { command, path: './keploy' } });
    expect(rec.mockFilePath).toMatch(/^\.\/keploy\/[a-z0-9.-]+-http\/mocks\.yaml$/);
    const recorded = readFileSync(path.join(root, 'out.txt'), 'utf8');
    expect(recorded).toBe(`GET 200 {"path":"/items/apple?verbose=1","stock":7}\nPOST 200 {"accepted":{"item":"apple","qty":2},"id":41}\n`);
    const yaml = readFileSync(path.join(root, rec.mockFilePath), 'utf8');
    expect(yaml).toMatch(/^version: api.keploy.io\/v1beta1\nkind: Http\nname: mock-0\n/);
    expect(yaml).toContain('kind: Http\nname: mock-1');

    await stopServices();
    const before = hits;
    writeFileSync(path.join(root, 'out.txt'), '');
    const replay = await tool('keploy_mock_test', { command });
    expect(replay).toMatchObject({ success: true, mocksReplayed: 2, mocksMissed: 0, appExitCode: 0, message: 'Replayed 2 mocks' });
    expect(readFileSync(path.join(root, 'out.txt'), 'utf8')).toBe(recorded);
    expect(hits).toBe(before);

    // A changed request is a visible miss, naming the closest mock.
    const changed = await tool('keploy_mock_test', { command: `/usr/bin/python3 client.py ${ports.http} ${ports.https} pear` });
    expect(changed.success).toBe(false);
    expect(changed.mocksMissed).toBeGreaterThanOrEqual(1);
    expect(changed.appExitCode).not.toBe(0); // urllib raises on the 502
    expect(changed.misses[0]).toMatch(/^GET \/items\/pear\?verbose=1; closest mock-0/);
    // The app's own output comes back with the failure: here urllib's traceback, its end only, after the misses (issue 21).
    expect(changed.appOutput).toMatch(/HTTPError: HTTP Error 502/);
    expect(changed.appOutput.length).toBeLessThanOrEqual(603);
    const keys = Object.keys(changed);
    expect(keys.indexOf('misses')).toBe(keys.indexOf('message') + 1);
    expect(keys.at(-1)).toBe('appOutput');
    await startServices();

    // onMiss record: the missing calls go to the services and are added to the set; then they replay.
    const pear = `/usr/bin/python3 client.py ${ports.http} ${ports.https} pear`;
    const completed = await tool('keploy_mock_test', { command: pear, onMiss: 'record', upstreamCaFile: 'upstream-ca.pem' });
    expect(completed).toMatchObject({ success: true, mocksMissed: 0, mocksRecorded: 2, appExitCode: 0 });
    expect(completed.message).toMatch(/recorded 2 missing calls into '.+' \(now 4 mocks\)/);
    const pearOut = readFileSync(path.join(root, 'out.txt'), 'utf8');
    expect(pearOut).toContain('"path":"/items/pear?verbose=1"');
    const setYaml = readFileSync(path.join(root, rec.mockFilePath), 'utf8');
    expect(setYaml).toMatch(/^version: api.keploy.io\/v1beta1\nkind: Http\nname: mock-0\n/);
    expect(setYaml).toContain('name: mock-3');
    await stopServices();
    const hitsBefore = hits;
    writeFileSync(path.join(root, 'out.txt'), '');
    expect(await tool('keploy_mock_test', { command: pear })).toMatchObject({ success: true, mocksReplayed: 2, mocksMissed: 0 });
    expect(readFileSync(path.join(root, 'out.txt'), 'utf8')).toBe(pearOut);
    expect(await tool('keploy_mock_test', { command })).toMatchObject({ success: true, mocksReplayed: 2, mocksMissed: 0 });
    expect(hits).toBe(hitsBefore);
    await startServices();
  });

  it('records and replays a Node program (fetch)', async () => {
    const command = `node client.mjs ${ports.http} ${ports.https} kiwi`;
    const rec = await tool('keploy_mock_record', { command, path: 'keploy-node', upstreamCaFile: 'upstream-ca.pem' });
    expect(rec).toMatchObject({ success: true, mockCount: 2 });
    const recorded = readFileSync(path.join(root, 'out-node.txt'), 'utf8');
    await stopServices();
    expect(rec.mockFilePath).toBe('keploy-node/client-http/mocks.yaml');
    const replay = await tool('keploy_mock_test', { command, mockName: 'client-http', path: 'keploy-node' });
    expect(replay).toMatchObject({ success: true, mocksReplayed: 2, mocksMissed: 0 });
    expect(readFileSync(path.join(root, 'out-node.txt'), 'utf8')).toBe(recorded);
    await startServices();
  });

  it('lists mock sets newest first', async () => {
    const listed = await tool('keploy_list_mocks', {});
    expect(listed.count).toBe(1);
    expect(listed.message).toBe(`Found 1 mock set(s). The latest is '${listed.mockSets[0]}'.`);
  });
});

describe('mocks: PostgreSQL, recorded against a real server and replayed without it', () => {
  let db: RunningPostgres | undefined;
  beforeAll(async () => {
    db = await startPostgres();
    // The Node program imports pg from the project's node_modules.
    symlinkSync(path.resolve(import.meta.dirname, '../node_modules'), path.join(root, 'node_modules'));
  });
  afterAll(async () => {
    await db?.stop();
  });

  it('psycopg2: record, stop PostgreSQL, replay with identical output; a changed query misses', async () => {
    const command = `/usr/bin/python3 db.py ${db!.port} ${db!.password} apple`;
    const rec = await tool('keploy_mock_record', { command, path: 'keploy-db' });
    expect(rec).toMatchObject({ success: true, protocols: ['Postgres'] });
    expect(rec.mockCount).toBeGreaterThanOrEqual(3);
    const recorded = readFileSync(path.join(root, 'db-out.txt'), 'utf8');
    expect(recorded).toBe("qty=1 rows=[('apple', 1)]\n");
    const yaml = readFileSync(path.join(root, rec.mockFilePath), 'utf8');
    expect(yaml).toContain('kind: Postgres');
    expect(yaml).not.toContain(db!.password);

    const port = db!.port;
    await db!.stop();
    db = undefined;
    writeFileSync(path.join(root, 'db-out.txt'), '');
    const replay = await tool('keploy_mock_test', { command, path: 'keploy-db' });
    expect(replay).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(replay.mocksReplayed).toBeGreaterThanOrEqual(3);
    expect(readFileSync(path.join(root, 'db-out.txt'), 'utf8')).toBe(recorded);

    const changed = await tool('keploy_mock_test', { command: `/usr/bin/python3 db.py ${port} x pear`, path: 'keploy-db' });
    expect(changed).toMatchObject({ success: false });
    expect(changed.mocksMissed).toBeGreaterThanOrEqual(1);
    expect(changed.misses.join('\n')).toMatch(/no recorded mock for query: .*pear/);
    db = await startPostgres();
  });

  it('onMiss: a PostgreSQL session a set lacks fails, passes through, or is recorded into the set', async () => {
    // A set with only a Generic mock: PostgreSQL is missing from it.
    const kv = createNetServer((socket) => socket.on('data', (d) => socket.write(`VALUE ${String(d).trim().split(' ')[1]}-42\n`)));
    const kvPort = await new Promise<number>((r) => kv.listen(0, '127.0.0.1', () => r((kv.address() as AddressInfo).port)));
    const rec = await tool('keploy_mock_record', { command: `/usr/bin/python3 kv.py ${kvPort} fig`, path: 'keploy-pg-miss' });
    expect(rec).toMatchObject({ success: true, mockCount: 1, protocols: ['Generic'] });
    await new Promise<void>((r) => kv.close(() => r()));
    const setName = rec.mockFilePath.split('/')[1];
    const command = `/usr/bin/python3 db.py ${db!.port} ${db!.password} fig`;
    const failing = await tool('keploy_mock_test', { command, path: 'keploy-pg-miss' });
    expect(failing).toMatchObject({ success: false });
    expect(failing.misses[0]).toMatch(/^debugkit: no recorded mock for query: /);
    expect(failing.appOutput).toMatch(/psycopg2/);
    const passed = await tool('keploy_mock_test', { command, path: 'keploy-pg-miss', onMiss: 'passthrough' });
    expect(passed).toMatchObject({ mocksFellBack: 1, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'db-out.txt'), 'utf8')).toBe("qty=1 rows=[('fig', 1)]\n");
    const recorded = await tool('keploy_mock_test', { command, path: 'keploy-pg-miss', onMiss: 'record' });
    expect(recorded).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(recorded.mocksRecorded).toBeGreaterThanOrEqual(3);
    expect(readFileSync(path.join(root, 'db-out.txt'), 'utf8')).toBe("qty=2 rows=[('fig', 2)]\n");
    const yaml = readFileSync(path.join(root, 'keploy-pg-miss', setName, 'mocks.yaml'), 'utf8');
    expect(yaml).toContain('kind: Generic\nname: mock-0');
    expect(yaml).toContain('kind: Postgres\nname: mock-1');
    expect(yaml).not.toContain(db!.password);
    // The completed set replays with PostgreSQL gone.
    await db!.stop();
    db = undefined;
    writeFileSync(path.join(root, 'db-out.txt'), '');
    const replay = await tool('keploy_mock_test', { command, path: 'keploy-pg-miss' });
    expect(replay).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'db-out.txt'), 'utf8')).toBe("qty=2 rows=[('fig', 2)]\n");
    db = await startPostgres();
  });

  it('onMiss inside a replayed PostgreSQL session: passthrough asks the real server, record completes the set', async () => {
    const rec = await tool('keploy_mock_record', { command: `/usr/bin/python3 db.py ${db!.port} ${db!.password} apple`, path: 'keploy-db-inner' });
    expect(rec).toMatchObject({ success: true, protocols: ['Postgres'] });
    const setName = rec.mockFilePath.split('/')[1];
    // pear was never recorded: its INSERT and SELECT miss inside a session whose other queries replay.
    const pear = `/usr/bin/python3 db.py ${db!.port} ${db!.password} pear`;
    const failing = await tool('keploy_mock_test', { command: pear, path: 'keploy-db-inner' });
    expect(failing).toMatchObject({ success: false });
    expect(failing.misses[0]).toMatch(/^debugkit: no recorded mock for query: INSERT INTO fruit .*'pear'.* \(closest: mock-\d+: query text differs at character \d+/);
    const passed = await tool('keploy_mock_test', { command: pear, path: 'keploy-db-inner', onMiss: 'passthrough' });
    expect(passed).toMatchObject({ mocksFellBack: 2, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'db-out.txt'), 'utf8')).toBe("qty=1 rows=[('pear', 1)]\n");
    const plum = `/usr/bin/python3 db.py ${db!.port} ${db!.password} plum`;
    const recorded = await tool('keploy_mock_test', { command: plum, path: 'keploy-db-inner', onMiss: 'record' });
    expect(recorded).toMatchObject({ success: true, mocksMissed: 0, mocksRecorded: 2, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'db-out.txt'), 'utf8')).toBe("qty=1 rows=[('plum', 1)]\n");
    const yaml = readFileSync(path.join(root, 'keploy-db-inner', setName, 'mocks.yaml'), 'utf8');
    expect(yaml).toContain('plum');
    expect(yaml).not.toContain(db!.password);
    await db!.stop();
    db = undefined;
    writeFileSync(path.join(root, 'db-out.txt'), '');
    const replay = await tool('keploy_mock_test', { command: plum, path: 'keploy-db-inner' });
    expect(replay).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'db-out.txt'), 'utf8')).toBe("qty=1 rows=[('plum', 1)]\n");
    db = await startPostgres();
  });

  it('node-postgres: record and replay', async () => {
    const command = `node db.mjs ${db!.port} ${db!.password} kiwi`;
    const rec = await tool('keploy_mock_record', { command, path: 'keploy-db-node' });
    expect(rec).toMatchObject({ success: true, protocols: ['Postgres'] });
    const recorded = readFileSync(path.join(root, 'db-node-out.txt'), 'utf8');
    expect(recorded).toBe('qty=1 rows=[{"name":"kiwi","qty":1}]\n');
    await db!.stop();
    db = undefined;
    const replay = await tool('keploy_mock_test', { command, path: 'keploy-db-node' });
    expect(replay).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'db-node-out.txt'), 'utf8')).toBe(recorded);
  });
});

describe('mocks: other TCP protocols, as Generic byte exchanges', () => {
  it('records a line protocol, replays it without the server, and reports a changed request', async () => {
    const kv = createNetServer((socket) => {
      socket.on('data', (d) => socket.write(`VALUE ${String(d).trim().split(' ')[1]}-42\n`));
    });
    const port = await new Promise<number>((r) => kv.listen(0, '127.0.0.1', () => r((kv.address() as AddressInfo).port)));
    const command = `/usr/bin/python3 kv.py ${port} melon`;
    const rec = await tool('keploy_mock_record', { command, path: 'keploy-kv' });
    expect(rec).toMatchObject({ success: true, mockCount: 1, protocols: ['Generic'] });
    expect(readFileSync(path.join(root, 'kv-out.txt'), 'utf8')).toBe('VALUE melon-42\n');
    expect(readFileSync(path.join(root, rec.mockFilePath), 'utf8')).toContain('kind: Generic');
    await new Promise<void>((r) => kv.close(() => r()));
    writeFileSync(path.join(root, 'kv-out.txt'), '');
    const replay = await tool('keploy_mock_test', { command, path: 'keploy-kv' });
    expect(replay).toMatchObject({ success: true, mocksReplayed: 1, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'kv-out.txt'), 'utf8')).toBe('VALUE melon-42\n');
    const changed = await tool('keploy_mock_test', { command: `/usr/bin/python3 kv.py ${port} lime`, path: 'keploy-kv' });
    expect(changed).toMatchObject({ success: false, mocksMissed: 1 });
    expect(changed.misses[0]).toMatch(/no recorded request matches .*"GET lime\\n"; closest mock-0/);
  });
});

describe('mocks: volatile fields and fields to ignore', () => {
  it('an epoch-seconds ts does not miss; a nonce misses until it is ignored (body path and header)', async () => {
    const command = (offset: number) => `/usr/bin/python3 events.py ${ports.http} ${offset}`;
    const rec = await tool('keploy_mock_record', { command: command(0), path: 'keploy-events' });
    expect(rec).toMatchObject({ success: true, mockCount: 1 });
    const recorded = readFileSync(path.join(root, 'events-out.txt'), 'utf8');
    await stopServices();
    // A day later, with a new nonce in the body and the header.
    const strict = await tool('keploy_mock_test', { command: command(86_400), path: 'keploy-events' });
    expect(strict).toMatchObject({ success: false, mocksMissed: 1 });
    expect(strict.misses[0]).toMatch(/body \$\.nonce: recorded ".+", got ".+"/);
    expect(strict.misses[0]).not.toMatch(/\$\.ts/);
    expect(strict.appOutput).toMatch(/HTTP Error 502/);
    const bodyOnly = await tool('keploy_mock_test', { command: command(86_400), path: 'keploy-events', ignore: ['body.nonce'] });
    expect(bodyOnly).toMatchObject({ success: false, mocksMissed: 1 });
    expect(bodyOnly.misses[0]).toMatch(/header x-nonce: recorded/);
    writeFileSync(path.join(root, 'events-out.txt'), '');
    const loose = await tool('keploy_mock_test', { command: command(86_400), path: 'keploy-events', ignore: ['body.nonce', 'header.X-Nonce'] });
    expect(loose).toMatchObject({ success: true, mocksReplayed: 1, mocksMissed: 0 });
    expect(loose.appOutput).toBeUndefined();
    expect(readFileSync(path.join(root, 'events-out.txt'), 'utf8')).toBe(recorded);
    const bad = await tool('keploy_mock_test', { command: command(0), path: 'keploy-events', ignore: ['nonce'] });
    expect(bad).toMatchObject({ success: false, message: expect.stringMatching(/^ignore: 'nonce' is not a field; use 'header.<Name>', 'query.<name>' or 'body.<JSON path>'/) });
    await startServices();
  });
});

describe('mocks: failures are clear and lose nothing', () => {
  it('reports a command that does not exist, fails, or runs too long', async () => {
    const missing = await tool('keploy_mock_record', { command: 'no-such-program --flag', path: 'keploy-bad' });
    expect(missing.success).toBe(false);
    expect(missing.message).toMatch(/^Recording failed: /);
    const failing = await tool('keploy_mock_record', { command: '/usr/bin/python3 -c "import sys; sys.exit(3)"', path: 'keploy-bad' });
    expect(failing).toMatchObject({ success: false, appExitCode: 3, message: expect.stringMatching(/exited with code 3/) });
    expect(failing.mockFilePath).toBe('');
    expect(failing.message).toMatch(/no mock set written/);
    const slow = await tool('keploy_mock_record', { command: '/usr/bin/python3 -c "import time; time.sleep(30)"', path: 'keploy-bad', timeout: 1 });
    expect(slow).toMatchObject({ success: false, message: expect.stringMatching(/ran longer than 1 s/) });
    // No failed recording left an empty set behind, so none can become the latest.
    expect(await tool('keploy_list_mocks', { path: 'keploy-bad' })).toMatchObject({ count: 0, mockSets: [] });
    const printed = await tool('keploy_mock_record', { command: '/usr/bin/python3 -c "print(\'boom\'); raise SystemExit(4)"', path: 'keploy-bad' });
    expect(printed).toMatchObject({ success: false, appExitCode: 4, appOutput: 'boom' });
    const piped = await tool('keploy_mock_record', { command: 'echo hi | cat' });
    expect(piped.message).toMatch(/shell syntax "\|"/);
  });

  it('gives the command its environment: a NAME=value prefix as a shell takes it, and the env argument (the prefix wins)', async () => {
    // Before: the assignment was taken for the program, and proxychains answered only "can't load process".
    const shown = "/usr/bin/python3 -c \"import os; print(os.environ['A'], os.environ['B']); raise SystemExit(4)\"";
    const both = await tool('keploy_mock_record', { command: `A=1 B='two words' ${shown}`, path: 'keploy-bad', env: ['B=from env', 'C=3'] });
    expect(both).toMatchObject({ success: false, appExitCode: 4, appOutput: '1 two words' });
    const fromEnv = await tool('keploy_mock_record', { command: `A=prefix ${shown}`, path: 'keploy-bad', env: ['A=0', 'B=from env'] });
    expect(fromEnv).toMatchObject({ success: false, appExitCode: 4, appOutput: 'prefix from env' });
    const none = await tool('keploy_mock_record', { command: 'A=1 B=2', path: 'keploy-bad' });
    expect(none).toMatchObject({ success: false, message: expect.stringMatching(/sets A, B but names no program to run/) });
  });

  it('refuses a corrupt mock set without touching it', async () => {
    mkdirSync(path.join(root, 'keploy', 'broken'), { recursive: true });
    const corrupt = 'version: api.keploy.io/v1beta1\nkind: Banana\nname: mock-0\nspec: {}\n';
    writeFileSync(path.join(root, 'keploy', 'broken', 'mocks.yaml'), corrupt);
    const replay = await tool('keploy_mock_test', { command: '/usr/bin/python3 -c "pass"', mockName: 'broken' });
    expect(replay.success).toBe(false);
    expect(replay.message).toMatch(/^Failed to load mocks: .*document 1.*kind/);
    expect(readFileSync(path.join(root, 'keploy', 'broken', 'mocks.yaml'), 'utf8')).toBe(corrupt);
    const unknown = await tool('keploy_mock_test', { command: '/usr/bin/python3 -c "pass"', mockName: 'nope' });
    expect(unknown.message).toMatch(/^Failed to load mocks: /);
  });
});
