import { readFileSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DebugkitCa } from '../src/toolsets/mocks/tls/ca.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { mocksWorkspace } from './helpers/programs.js';

let root: string;
let dk: TestClient;
let server: grpc.Server | undefined;
let port = 0;
let calls = 0;
const modules = path.resolve(import.meta.dirname, '../node_modules');

const tool = (name: string, args: Record<string, unknown>) => dk.structured(name, args);

/**
 * A real gRPC server (@grpc/grpc-js): Hello (unary), Count (server streaming), Sum (client
 * streaming) and Chat (bidirectional: a reply to each message as it comes, `bye` after the
 * client's end; the word `stop` ends the call with FAILED_PRECONDITION); TLS with `creds`.
 */
async function startServer(creds = grpc.ServerCredentials.createInsecure()): Promise<void> {
  const def = loader.loadSync(path.join(root, 'greeter.proto'));
  const shop = grpc.loadPackageDefinition(def).shop as any;
  server = new grpc.Server();
  server.addService(shop.Greeter.service, {
    Hello: (call: any, cb: any) => {
      calls++;
      cb(null, { message: `hello ${call.request.name}`, seq: 0 });
    },
    Count: (call: any) => {
      calls++;
      for (let i = 1; i <= call.request.n; i++) call.write({ message: `${call.request.name} #${i}`, seq: i });
      call.end();
    },
    Sum: (call: any, cb: any) => {
      calls++;
      const names: string[] = [];
      call.on('data', (r: any) => names.push(r.name));
      call.on('end', () => cb(null, { message: names.join('+'), seq: names.length }));
    },
    Chat: (call: any) => {
      calls++;
      let n = 0;
      call.on('data', (r: any) => {
        // 'stop' ends the call at once with an error, the client still sending.
        if (r.name === 'stop') call.emit('error', { code: grpc.status.FAILED_PRECONDITION, details: `stopped after ${n}` });
        else call.write({ message: `hi ${r.name}`, seq: ++n });
      });
      call.on('end', () => {
        call.write({ message: 'bye', seq: 0 });
        call.end();
      });
    },
  });
  port = await new Promise<number>((resolve, reject) => server!.bindAsync('127.0.0.1:0', creds, (err, p) => (err ? reject(err) : resolve(p))));
}

beforeAll(async () => {
  root = mocksWorkspace('debugkit-mocks-grpc-');
  await startServer();
  dk = await connectStdio({ root, args: ['--toolsets', 'mocks'] });
});
afterAll(async () => {
  await dk?.close();
  server?.forceShutdown();
});

describe('mocks: gRPC over HTTP/2 in clear (h2c), recorded as Keploy gRPC mocks', () => {
  it('records a unary and a streaming call, replays them with the server stopped, reports a changed request', async () => {
    const command = (name: string) => `node grpc-client.mjs ${modules} ${port} ${name}`;
    const rec = await tool('keploy_mock_record', { command: command('ada'), path: 'keploy-grpc' });
    expect(rec).toMatchObject({ success: true, mockCount: 2, protocols: ['gRPC'] });
    const recorded = readFileSync(path.join(root, 'grpc-out.txt'), 'utf8');
    expect(recorded).toBe('hello: hello ada\ncount 1: ada #1\ncount 2: ada #2\ncount 3: ada #3\n');
    expect(calls).toBe(2);
    const yaml = readFileSync(path.join(root, rec.mockFilePath), 'utf8');
    expect(yaml).toMatch(/^version: api.keploy.io\/v1beta1\nkind: gRPC\nname: mock-0\nspec:\n {4}grpcReq:\n {8}headers:\n {12}pseudo_headers:\n/);
    expect(yaml).toContain(':path: /shop.Greeter/Hello');
    expect(yaml).toContain('grpc-status: "0"');
    expect(yaml).toContain('additional_messages:');

    // onMiss record, the server up: the calls the set lacks (another name) go to it and are added to the set.
    const completed = await tool('keploy_mock_test', { command: command('eve'), path: 'keploy-grpc', onMiss: 'record' });
    expect(completed).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0, mocksRecorded: 2 });
    const eveOut = readFileSync(path.join(root, 'grpc-out.txt'), 'utf8');
    expect(eveOut).toBe('hello: hello eve\ncount 1: eve #1\ncount 2: eve #2\ncount 3: eve #3\n');
    // onMiss passthrough: answered by the server, not added.
    const passed = await tool('keploy_mock_test', { command: command('kim'), path: 'keploy-grpc', onMiss: 'passthrough' });
    expect(passed).toMatchObject({ success: false, appExitCode: 0, mocksFellBack: 2 });
    expect(calls).toBe(6);

    server!.forceShutdown();
    server = undefined;
    writeFileSync(path.join(root, 'grpc-out.txt'), '');
    expect(await tool('keploy_mock_test', { command: command('eve'), path: 'keploy-grpc' })).toMatchObject({ success: true, mocksMissed: 0, mocksReplayed: 2 });
    expect(readFileSync(path.join(root, 'grpc-out.txt'), 'utf8')).toBe(eveOut);
    writeFileSync(path.join(root, 'grpc-out.txt'), '');
    const replay = await tool('keploy_mock_test', { command: command('ada'), path: 'keploy-grpc' });
    expect(replay).toMatchObject({ success: true, mocksReplayed: 2, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'grpc-out.txt'), 'utf8')).toBe(recorded);
    expect(calls).toBe(6); // the replays never reached a server

    const changed = await tool('keploy_mock_test', { command: command('bob'), path: 'keploy-grpc' });
    expect(changed).toMatchObject({ success: false, appExitCode: 2 });
    expect(changed.mocksMissed).toBeGreaterThanOrEqual(1);
    expect(changed.misses[0]).toMatch(/^gRPC \/shop\.Greeter\/Hello \(request \d+ bytes\): no mock has this request; closest mock-0/);
    expect(readFileSync(path.join(root, 'grpc-out.txt'), 'utf8')).toMatch(/^error: 14 debugkit mocks: gRPC \/shop\.Greeter\/Hello/);
  });
});

describe('mocks: HTTP/2 over TLS (ALPN h2), recorded as Keploy Http2 mocks', () => {
  it('records a GET and a POST through the TLS interception, replays them with the server stopped', async () => {
    const ca = await DebugkitCa.load(path.join(root, '.test-ca'));
    writeFileSync(path.join(root, 'upstream-ca.pem'), ca.certPem);
    const leaf = ca.leafFor('localhost');
    let hits = 0;
    const h2 = http2.createSecureServer({ key: leaf.key, cert: leaf.cert }, (req, res) => {
      hits++;
      let body = '';
      req
        .on('data', (d) => (body += d))
        .on('end', () => {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify(req.method === 'GET' ? { path: req.url, version: req.httpVersion } : { accepted: JSON.parse(body), id: 9 }));
        });
    });
    const port = await new Promise<number>((r) => h2.listen(0, '127.0.0.1', () => r((h2.address() as AddressInfo).port)));
    const command = (item: string) => `node h2-client.mjs ${port} ${item}`;
    try {
      const rec = await tool('keploy_mock_record', { command: command('fig'), path: 'keploy-h2', upstreamCaFile: 'upstream-ca.pem' });
      expect(rec).toMatchObject({ success: true, mockCount: 2, protocols: ['HTTP2'] });
      expect(hits).toBe(2);
      const recorded = readFileSync(path.join(root, 'h2-out.txt'), 'utf8');
      expect(recorded).toBe('protocol: h2\n200 {"path":"/stock/fig","version":"2.0"}\n200 {"accepted":{"item":"fig","qty":2},"id":9}\n');
      const yaml = readFileSync(path.join(root, rec.mockFilePath), 'utf8');
      expect(yaml).toMatch(/^version: api.keploy.io\/v1beta1\nkind: Http2\nname: mock-0\nspec:\n {4}metadata:\n/);
      expect(yaml).toContain('authority: localhost:');
      expect(yaml).toContain('status_code: 200');
    } finally {
      await new Promise<void>((r) => h2.close(() => r()));
    }
    writeFileSync(path.join(root, 'h2-out.txt'), '');
    const replay = await tool('keploy_mock_test', { command: command('fig'), path: 'keploy-h2' });
    expect(replay).toMatchObject({ success: true, mocksReplayed: 2, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'h2-out.txt'), 'utf8')).toBe('protocol: h2\n200 {"path":"/stock/fig","version":"2.0"}\n200 {"accepted":{"item":"fig","qty":2},"id":9}\n');
    const changed = await tool('keploy_mock_test', { command: command('kiwi'), path: 'keploy-h2' });
    expect(changed).toMatchObject({ success: false });
    expect(changed.misses[0]).toMatch(/^GET \/stock\/kiwi \(HTTP\/2\); closest mock-0/);
    expect(readFileSync(path.join(root, 'h2-out.txt'), 'utf8')).toMatch(/^protocol: h2\n502 debugkit mocks: no mock matches GET \/stock\/kiwi/);
  });
});

describe('mocks: gRPC over TLS (ALPN h2 through the interception)', () => {
  it('records a unary and a streaming call over TLS and replays them with the server stopped', async () => {
    const ca = await DebugkitCa.load(path.join(root, '.test-ca'));
    writeFileSync(path.join(root, 'upstream-ca.pem'), ca.certPem);
    const leaf = ca.leafFor('localhost');
    await startServer(grpc.ServerCredentials.createSsl(null, [{ private_key: Buffer.from(leaf.key), cert_chain: Buffer.from(leaf.cert) }]));
    const before = calls;
    const command = `node grpc-client.mjs ${modules} ${port} tia tls`;
    const rec = await tool('keploy_mock_record', { command, path: 'keploy-grpcs', upstreamCaFile: 'upstream-ca.pem' });
    expect(rec).toMatchObject({ success: true, mockCount: 2, protocols: ['gRPC'] });
    const recorded = readFileSync(path.join(root, 'grpc-out.txt'), 'utf8');
    expect(recorded).toBe('hello: hello tia\ncount 1: tia #1\ncount 2: tia #2\ncount 3: tia #3\n');
    expect(readFileSync(path.join(root, rec.mockFilePath), 'utf8')).toContain(':scheme: https');
    server!.forceShutdown();
    server = undefined;
    writeFileSync(path.join(root, 'grpc-out.txt'), '');
    const replay = await tool('keploy_mock_test', { command, path: 'keploy-grpcs' });
    expect(replay).toMatchObject({ success: true, mocksReplayed: 2, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'grpc-out.txt'), 'utf8')).toBe(recorded);
    expect(calls - before).toBe(2);
  });
});

describe('mocks: gRPC client streaming and bidirectional streaming', () => {
  it('records a client-streaming and a ping-pong bidi call, replays both in step with the server stopped, and a miss in the middle of the stream', async () => {
    await startServer();
    const before = calls;
    const command = (words: string) => `node grpc-stream-client.mjs ${modules} ${port} ${words}`;
    const out = () => readFileSync(path.join(root, 'grpc-stream-out.txt'), 'utf8');
    const rec = await tool('keploy_mock_record', { command: command('ada,bob,cy'), path: 'keploy-grpc-streams' });
    expect(rec).toMatchObject({ success: true, mockCount: 2, protocols: ['gRPC'] });
    const recorded = out();
    expect(recorded).toBe('sum: ada+bob+cy (3)\nchat 1: hi ada\nchat 2: hi bob\nchat 3: hi cy\nchat 0: bye\n');
    expect(calls - before).toBe(2);
    const yaml = readFileSync(path.join(root, rec.mockFilePath), 'utf8');
    // Keploy's decoded_data (protoscope text) for HelloRequest{name: "ada"}; each bidi reply notes its step.
    expect(yaml).toContain('decoded_data: |\n                1: {"ada"}\n');
    expect(yaml.match(/debugkit_after_requests: \d/g)).toEqual(['debugkit_after_requests: 1', 'debugkit_after_requests: 2', 'debugkit_after_requests: 3']);

    server!.forceShutdown();
    server = undefined;
    writeFileSync(path.join(root, 'grpc-stream-out.txt'), '');
    const replay = await tool('keploy_mock_test', { command: command('ada,bob,cy'), path: 'keploy-grpc-streams' });
    expect(replay).toMatchObject({ success: true, mocksReplayed: 2, mocksMissed: 0, appExitCode: 0 });
    expect(out()).toBe(recorded);

    // The second word differs: Sum misses at its second message (the first call the program makes).
    const changed = await tool('keploy_mock_test', { command: command('ada,zed,cy'), path: 'keploy-grpc-streams' });
    expect(changed).toMatchObject({ success: false, appExitCode: 2 });
    expect(changed.misses[0]).toMatch(
      /^gRPC \/shop\.Greeter\/Sum \(request message 2, 5 bytes\): no mock has this request; closest mock-0 \(same method, same first 1, its message 2: 5 bytes, 3 bytes differ\)/,
    );
    expect(out()).toMatch(/^error: 14 debugkit mocks: gRPC \/shop\.Greeter\/Sum \(request message 2/);
    // Fewer messages than recorded: a miss at the client's end.
    const short = await tool('keploy_mock_test', { command: `${command('ada,bob')} sum`, path: 'keploy-grpc-streams' });
    expect(short).toMatchObject({ success: false, appExitCode: 2 });
    expect(short.misses[0]).toBe('gRPC /shop.Greeter/Sum: the client ended after 2 request messages; closest mock-0 (same method, same first 2, 3 request messages)');
    expect(calls - before).toBe(2); // the replays never reached a server
  });

  it('a bidi call that misses in the middle gets its earlier replies, then UNAVAILABLE naming the message', async () => {
    writeFileSync(path.join(root, 'grpc-stream-out.txt'), '');
    const changed = await tool('keploy_mock_test', { command: `node grpc-stream-client.mjs ${modules} ${port} ada,zed,cy chat`, path: 'keploy-grpc-streams' });
    expect(changed).toMatchObject({ success: false, appExitCode: 2, mocksMissed: 1 });
    expect(changed.misses[0]).toMatch(/^gRPC \/shop\.Greeter\/Chat \(request message 2, 5 bytes\): no mock has this request; closest mock-1 /);
    expect(readFileSync(path.join(root, 'grpc-stream-out.txt'), 'utf8')).toMatch(/^chat 1: hi ada\nerror: 14 debugkit mocks: gRPC \/shop\.Greeter\/Chat \(request message 2, 5 bytes\)/);
  });

  it('onMiss record completes a set with a bidi call that missed at its first message, relayed live to the server', async () => {
    await startServer();
    const before = calls;
    const command = `node grpc-stream-client.mjs ${modules} ${port} eve,fay chat`;
    const out = () => readFileSync(path.join(root, 'grpc-stream-out.txt'), 'utf8');
    writeFileSync(path.join(root, 'grpc-stream-out.txt'), '');
    const completed = await tool('keploy_mock_test', { command, path: 'keploy-grpc-streams', onMiss: 'record' });
    expect(completed).toMatchObject({ success: true, mocksMissed: 0, mocksRecorded: 1, appExitCode: 0 });
    const live = out();
    expect(live).toBe('chat 1: hi eve\nchat 2: hi fay\nchat 0: bye\n');
    expect(calls - before).toBe(1);
    server!.forceShutdown();
    server = undefined;
    writeFileSync(path.join(root, 'grpc-stream-out.txt'), '');
    expect(await tool('keploy_mock_test', { command, path: 'keploy-grpc-streams' })).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(out()).toBe(live);
  });

  it('a bidi call the server ended before the client did replays its status at the same message (trailers-only too)', async () => {
    await startServer();
    const command = (words: string) => `node grpc-stream-client.mjs ${modules} ${port} ${words} chat`;
    const out = () => readFileSync(path.join(root, 'grpc-stream-out.txt'), 'utf8');
    const recorded: string[] = [];
    for (const [words, set, after] of [
      ['ada,stop,cy', 'keploy-grpc-stop', 2],
      ['stop,cy', 'keploy-grpc-stop0', 1],
    ] as const) {
      const rec = await tool('keploy_mock_record', { command: command(words), path: set });
      expect(rec).toMatchObject({ mockCount: 1, appExitCode: 2 }); // the program saw the error: its exit code 2
      recorded.push(out());
      const yaml = readFileSync(path.join(root, rec.mockFilePath), 'utf8');
      expect(yaml.match(/debugkit_trailers_after_requests: \d/g)).toEqual([`debugkit_trailers_after_requests: ${after}`]);
    }
    expect(recorded).toEqual(['chat 1: hi ada\nerror: 9 stopped after 1\n', 'error: 9 stopped after 0\n']);
    server!.forceShutdown();
    server = undefined;
    writeFileSync(path.join(root, 'grpc-stream-out.txt'), '');
    const first = await tool('keploy_mock_test', { command: command('ada,stop,cy'), path: 'keploy-grpc-stop' });
    expect(first).toMatchObject({ mocksMissed: 0, mocksReplayed: 1, appExitCode: 2 });
    expect(out()).toBe(recorded[0]);
    const second = await tool('keploy_mock_test', { command: command('stop,cy'), path: 'keploy-grpc-stop0' });
    expect(second).toMatchObject({ mocksMissed: 0, mocksReplayed: 1, appExitCode: 2 });
    expect(out()).toBe(recorded[1]);
  });
});
