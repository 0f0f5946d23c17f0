import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ES_FILE } from '../src/toolsets/mocks/keploy/testkit.js';
import { connectHttp, startHttpServer, type HttpServer, type TestClient } from './helpers/client.js';
import { createKey, rpc, startNode, tempDataDir, type Node } from './helpers/control.js';
import { tempDir } from './helpers/programs.js';
import { hugeScalar, manyDocuments, stopHard, track } from './helpers/stall.js';

/**
 * Issue 18, "no request can hold the event loop": inputs one key sends that used to stop the
 * server answering everyone (a catastrophic grep pattern, listing huge mock sets, a body that
 * drips forever). Each is sent by one client while another client's pings must still be answered
 * before it is done, against a real `debugkit serve`.
 */

/** A line on which `(a+)+` backtracks exponentially before failing (and `(a+)+b` before finding the `ab` at its end). */
const BAD_LINE = `${'a'.repeat(40)}!ab`;

describe('grep_files and keploy_list_mocks never hold the event loop', () => {
  let server: HttpServer;
  let a: TestClient;
  let b: TestClient;
  let root: string;

  beforeAll(async () => {
    root = tempDir('debugkit-nostall-');
    // A support bundle of five log lines.
    mkdirSync(path.join(root, 'five', 'logs'), { recursive: true });
    writeFileSync(path.join(root, 'five', 'logs', 'app.log'), ['starting', BAD_LINE, 'ready', `${'a'.repeat(30)}!`, 'done'].join('\n') + '\n');
    mkdirSync(path.join(root, 'five', 'cluster-resources', 'pods'), { recursive: true });
    writeFileSync(path.join(root, 'five', 'cluster-resources', 'pods', 'default.json'), '{"kind": "PodList", "items": []}\n');
    execFileSync('tar', ['-czf', path.join(root, 'five.tar.gz'), '-C', root, 'five']);
    // Mock sets: a normal one, a corrupt one, one 100 MB scalar, 200,000 small documents.
    for (const name of ['normal', 'broken', 'huge', 'many']) mkdirSync(path.join(root, 'keploy', name), { recursive: true });
    copyFileSync(ES_FILE, path.join(root, 'keploy', 'normal', 'mocks.yaml'));
    writeFileSync(path.join(root, 'keploy', 'broken', 'mocks.yaml'), 'version: x\nkind: [Http\n');
    hugeScalar(path.join(root, 'keploy', 'huge', 'mocks.yaml'), 100);
    manyDocuments(path.join(root, 'keploy', 'many', 'mocks.yaml'), 200_000);
    server = await startHttpServer(['--root', root, '--bundle-dir', path.join(root, '.store'), '--toolsets', 'bundles,mocks', '--grep-timeout', '2']);
    a = await connectHttp(server.url, server.key);
    b = await connectHttp(server.url, server.key);
  });
  afterAll(async () => {
    await a?.close().catch(() => undefined);
    await b?.close().catch(() => undefined);
    await stopHard(server?.proc);
    rmSync(root, { recursive: true, force: true });
  });

  it('a catastrophic pattern is stopped at --grep-timeout and answered as such; another client is answered meanwhile', async () => {
    const init = await a.tool('initialize_bundle', { source: 'five.tar.gz' });
    expect(init.isError, init.text).toBe(false);
    // With a lookahead (the built-in search, line by line) and without one (rg proposes the line, JavaScript checks it).
    for (const pattern of ['(?=a)(a+)+$', '(a+)+b']) {
      const grep = track(a.tool('grep_files', { pattern }));
      for (let i = 0; i < 3; i++) {
        await b.client.ping();
        expect(grep.done()).toBe(false);
      }
      const r = await grep.promise;
      expect(r.isError).toBe(true);
      expect(r.text).toMatch(/^InvalidPatternError: The pattern '.*' took longer than 2 s on one line \(or one piece of text\) and was stopped: simplify it\./);
    }
    // The search threads were replaced: normal patterns answer as before.
    const ok = await a.tool('grep_files', { pattern: 'a+!', case_sensitive: true });
    expect(ok.isError).toBe(false);
    expect(ok.structured.matches.map((m: { line_number: number }) => m.line_number)).toEqual([2, 4]);
  });

  it('keploy_list_mocks counts huge sets without parsing them, says so, and another client is answered meanwhile', async () => {
    const listing = track(a.tool('keploy_list_mocks', {}));
    await b.client.ping();
    expect(listing.done()).toBe(false);
    const r = await listing.promise;
    expect(r.isError).toBe(false);
    expect([...r.structured.mockSets].sort()).toEqual(['broken', 'huge', 'many', 'normal']);
    expect(r.structured.count).toBe(4);
    const message: string = r.structured.message;
    expect(message).toMatch(/Could not read 1 of them: 'broken' \(Invalid Keploy mock set \.\/keploy\/broken\/mocks\.yaml: document 1, line 3: not valid YAML/);
    expect(message).toMatch(/Listed without parsing 2 of them: /);
    expect(message).toContain("'huge' (counted by a scan of its lines, not parsed (100 MiB, over the 32 MiB a listed set is parsed to); its mocks were not checked)");
    expect(message).toContain("'many' (counted by a scan of its lines, not parsed (200000 documents, over the 20000 a listed set is parsed to); its mocks were not checked)");
    // No absolute path of the server's leaks into the answer.
    expect(message).not.toContain(root);
  });
});

/** A raw HTTP request whose body of `length` bytes is sent one byte every `everyMs`; resolves when the server closes the connection. */
function drip(url: string, key: string, length: number, everyMs: number): { closed: Promise<{ sent: number; answer: string }>; started: Promise<void>; stop(): void } {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  let sent = 0;
  let answer = '';
  let timer: NodeJS.Timeout | undefined;
  const started = new Promise<void>((resolve) =>
    socket.once('connect', () => {
      socket.write(
        `POST /mcp HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${length}\r\n\r\n`,
      );
      timer = setInterval(() => {
        if (sent < length && !socket.destroyed) {
          socket.write(' ');
          sent++;
        }
      }, everyMs);
      resolve();
    }),
  );
  socket.on('data', (d) => (answer += d.toString()));
  socket.on('error', () => undefined);
  const closed = new Promise<{ sent: number; answer: string }>((resolve) =>
    socket.once('close', () => {
      clearInterval(timer);
      resolve({ sent, answer });
    }),
  );
  return { closed, started, stop: () => socket.destroy() };
}

describe('a body that drips is dropped at --body-deadline; bodies still arriving are bounded per key', () => {
  let node: Node;
  let data: { dir: string; cleanup(): Promise<void> };
  let keyA: string;
  let keyB: string;

  beforeAll(async () => {
    data = await tempDataDir();
    // No rate limit: the probes below ask until they are refused, and only the body bound may refuse them.
    keyA = (await createKey(['--data-dir', data.dir], 'a', 'gdb:read', ['--rate', 'unlimited'])).key;
    keyB = (await createKey(['--data-dir', data.dir], 'b', 'gdb:read', ['--rate', 'unlimited'])).key;
    node = await startNode(['--data-dir', data.dir, '--toolsets', 'gdb', '--body-deadline', '4', '--body-timeout', '60', '--max-pending-bodies-per-key', '3']);
  });
  afterAll(async () => {
    await stopHard(node?.proc);
    await data?.cleanup();
  });

  const ping = (key: string) => rpc(node.url, key, { jsonrpc: '2.0', id: 1, method: 'ping' });

  it('one byte at a time (well within --body-timeout) is dropped at the deadline, unanswered; other requests are answered meanwhile', async () => {
    const d = drip(node.url, keyA, 10_000, 50);
    await d.started;
    const closed = track(d.closed);
    expect((await ping(keyB)).status).toBe(200);
    expect(closed.done()).toBe(false);
    const { sent, answer } = await closed.promise;
    // Dropped mid-body: the server closed the connection long before the body could finish.
    expect(sent).toBeGreaterThan(0);
    expect(sent).toBeLessThan(10_000);
    expect(answer).toBe('');
  });

  it("past --max-pending-bodies-per-key, a key's next body is refused (429, connection closed); another key is not affected", async () => {
    const drips = [0, 1, 2].map(() => drip(node.url, keyA, 10_000, 100));
    try {
      await Promise.all(drips.map((d) => d.started));
      // Until the server has begun reading all three, a probe may still get through: ask until it is refused.
      let refused: Awaited<ReturnType<typeof rpc>> | undefined;
      while (!refused) {
        const probe = await ping(keyA);
        if (probe.status === 429) refused = probe;
        else expect(probe.status).toBe(200);
      }
      expect(refused.headers.get('connection')).toBe('close');
      expect(refused.body.error).toMatchObject({
        code: -32000,
        message: expect.stringMatching(/^Too many request bodies still arriving for this key: 3 of the 3 one key may send at once \(--max-pending-bodies-per-key\)/),
      });
      expect((await ping(keyB)).status).toBe(200);
    } finally {
      for (const d of drips) d.stop();
    }
    // Once they are gone, the key sends again.
    await Promise.all(drips.map((d) => d.closed));
    let again = await ping(keyA);
    while (again.status === 429) again = await ping(keyA);
    expect(again.status).toBe(200);
  });
});
