// Issue 22: debug a program while its dependencies are replayed from a mock set. A Python program
// calls an HTTP API, PostgreSQL and Redis; it is recorded once, the services are stopped, and the
// program is then debugged under the set: a breakpoint after the database answer shows the
// recorded row, each stop says what replay answered, and a changed request stops on the miss.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type RunningPostgres } from '../src/toolsets/mocks/postgres/testing.js';
import { startRedis, type RunningRedis } from '../src/toolsets/mocks/redis/testing.js';
import { startKeyedServer, plainCall, stopKeyedServers } from './helpers/attack.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { mocksWorkspace } from './helpers/programs.js';

const APP = `import json, sys, urllib.error, urllib.request
import psycopg2, redis

http_port, pg_port, pg_password, redis_port, redis_password, item = sys.argv[1:]
try:
    price = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{http_port}/price/{item}").read())["price"]
except urllib.error.HTTPError as err:
    price = 0
conn = psycopg2.connect(host="127.0.0.1", port=pg_port, user="postgres", password=pg_password, dbname="postgres", sslmode="disable")
cur = conn.cursor()
cur.execute("SELECT qty FROM stock WHERE name = %s", ("apple",))
row = cur.fetchone()
conn.close()
cache = redis.Redis(host="127.0.0.1", port=int(redis_port), password=redis_password, socket_timeout=10)
seen = cache.incr(f"seen:{item}")
total = price * row[0]
print(f"total={total} seen={seen}")
`;
/** The line after the database's answer (and the cache's). */
const AFTER_ANSWERS = APP.split('\n').findIndex((l) => l.startsWith('total = ')) + 1;
/** The line that makes the HTTP call. */
const REQUEST = APP.split('\n').findIndex((l) => l.includes('urlopen(')) + 1;

let root: string;
let dk: TestClient;
let api: Server;
let db: RunningPostgres | undefined;
let cache: RunningRedis | undefined;
let args: string[];
let set = '';

async function call(name: string, a: Record<string, unknown>): Promise<any> {
  const r = await dk.tool(name, a);
  expect(r.isError, r.text).toBe(false);
  return r.structured;
}

beforeAll(async () => {
  root = mocksWorkspace('debugkit-debug-under-mocks-');
  writeFileSync(path.join(root, 'app.py'), APP);
  api = createServer((req, res) => res.end(JSON.stringify({ price: req.url === '/price/apple' ? 3 : 4 })));
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  [db, cache] = await Promise.all([startPostgres(), startRedis()]);
  const env = { ...process.env, PGPASSWORD: db.password, PGSSLMODE: 'disable' };
  execFileSync(
    'psql',
    ['-X', '-q', '-h', '127.0.0.1', '-p', String(db.port), '-U', 'postgres', '-d', 'postgres', '-c', 'CREATE TABLE stock (name text, qty int); INSERT INTO stock VALUES ($$apple$$, 5)'],
    { env },
  );
  const port = (api.address() as AddressInfo).port;
  args = [String(port), String(db.port), db.password, String(cache.port), cache.password];
  dk = await connectStdio({ root, args: ['--toolsets', 'mocks,python,gdb,debugger'] });
}, 120_000);
afterAll(async () => {
  await dk?.close();
  await Promise.all([db?.stop(), cache?.stop(), new Promise((r) => (api?.listening ? api.close(r) : r(undefined)))]);
});

const PRICE_C = `#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
  int port = atoi(argv[1]);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) return 2;
  char request[256];
  snprintf(request, sizeof request, "GET /price/%s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\nConnection: close\\r\\n\\r\\n", argv[2], port);
  if (write(fd, request, strlen(request)) < 0) return 3;
  char answer[4096];
  int got = 0, n;
  while ((n = read(fd, answer + got, sizeof answer - 1 - got)) > 0) got += n;
  answer[got] = 0;
  close(fd);
  char *body = strstr(answer, "\\r\\n\\r\\n");
  int price = body ? atoi(body + 4) : -1;
  printf("price=%d\\n", price);
  return price > 0 ? 0 : 1;
}
`;
/** The line after the answer was read and parsed. */
const PRICE_PRINTED = PRICE_C.split('\n').findIndex((l) => l.includes('printf("price=')) + 1;

describe('debugging a Python program under a mock set (HTTP, PostgreSQL, Redis)', () => {
  it('records the program, then, with every service stopped, stops after the database answer with the recorded row', async () => {
    const rec = await call('keploy_mock_record', { command: `/usr/bin/python3 app.py ${[...args, 'apple'].join(' ')}`, path: 'keploy-dbg' });
    expect(rec, JSON.stringify(rec)).toMatchObject({ success: true, appExitCode: 0 });
    expect(rec.protocols).toEqual(expect.arrayContaining(['HTTP', 'Postgres', 'Redis']));
    set = rec.mockFilePath.split('/').at(-2);
    await Promise.all([db!.stop(), cache!.stop(), new Promise((r) => api.close(r))]);
    db = cache = undefined;

    const { sessionId } = await call('python_start_session', { entry: 'app.py', args: [...args, 'apple'], pythonPath: '/usr/bin/python3', mocks: { set: `keploy-dbg/${set}` } });
    const stop = await call('python_run_to_breakpoint', { sessionId, file: 'app.py', line: AFTER_ANSWERS });
    expect(stop, JSON.stringify(stop)).toMatchObject({ hit: true, frameInfo: { file: expect.stringMatching(/\/app\.py$/), line: AFTER_ANSWERS } });
    expect(stop.locals.row.repr).toBe('(5,)');
    expect(stop.locals.price.repr).toBe('3');
    expect(stop.locals.seen.repr).toBe('1');
    // What replay answered on the way: the HTTP call, the PostgreSQL session's queries, the Redis commands; nothing missed.
    expect(stop.mocks).toMatchObject({ set, missed: 0 });
    expect(stop.mocks.replayed).toBeGreaterThanOrEqual(3);
    const state = await call('python_get_session', { sessionId });
    expect(state.mocks).toMatchObject({ set, missed: 0, fellBack: 0 });
    const end = await call('python_continue', { sessionId });
    expect(end).toMatchObject({ completed: true, exitCode: 0 });
    const out = await call('python_get_output', { sessionId });
    expect(JSON.stringify(out)).toMatch(/total=15 seen=1/);
    await call('python_end_session', { sessionId });
  }, 120_000);

  it('a changed request, with stopOnMiss, pauses the program where the miss came back, naming the closest mock', async () => {
    const { sessionId } = await call('python_start_session', {
      entry: 'app.py',
      args: [...args, 'pear'],
      pythonPath: '/usr/bin/python3',
      mocks: { set: `keploy-dbg/${set}`, stopOnMiss: true },
    });
    const stop = await call('python_run_to_breakpoint', { sessionId, file: 'app.py', line: AFTER_ANSWERS });
    expect(stop, JSON.stringify(stop)).toMatchObject({ hit: false, reason: 'mock miss', frameInfo: { file: expect.stringMatching(/\/app\.py$/) } });
    // The miss's answer waited for the pause: the program stops in the frame that made the request, on its line, the 502 not yet raised.
    expect(stop.frameInfo.line).toBe(REQUEST);
    expect(stop.locals).not.toHaveProperty('price');
    expect(stop.mocks).toMatchObject({ set, missed: 1, misses: [expect.stringMatching(/^GET \/price\/pear; closest mock-\d+/)] });
    await call('python_end_session', { sessionId });
  }, 120_000);

  it('an unknown set is a clear error naming the sets there are', async () => {
    const r = await dk.tool('python_start_session', { entry: 'app.py', pythonPath: '/usr/bin/python3', mocks: { set: 'keploy-dbg/no-such-set' } });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/Mock set 'no-such-set' not found .*available: /);
  });

  it("a key needs keploy_mock_test's scope (mocks:run) to debug under a set, through MCP, REST, gdb's open and debugger_launch alike", async () => {
    const s = await startKeyedServer(root, { py: 'python', both: 'python,mocks,mocks:run', gdb: 'gdb', dbg: 'debugger' }, ['--toolsets', 'mocks,python,gdb,debugger']);
    try {
      const start = { entry: 'app.py', pythonPath: '/usr/bin/python3', mocks: { set: `keploy-dbg/${set}` } };
      const denied = await plainCall(s, s.keys.py!.key, 'python_start_session', start);
      expect(denied.error?.message).toMatch(/mocks:run/);
      // gdb's open asks for it whatever the program: one missing at the check (there by the time the session starts, in a race) skipped it (attack 18z Y1).
      for (const program of ['no-such-program', 'app.py']) {
        const gdbDenied = await plainCall(s, s.keys.gdb!.key, 'open', { program, mocks: { set: `keploy-dbg/${set}` } });
        expect(gdbDenied.error?.message, program).toMatch(/mocks:run/);
        const launchDenied = await plainCall(s, s.keys.dbg!.key, 'debugger_launch', { program, mocks: { set: `keploy-dbg/${set}` } });
        expect(launchDenied.error?.message, program).toMatch(/mocks:run/);
      }
      const plain = await plainCall(s, s.keys.py!.key, 'python_start_session', { entry: 'app.py' });
      expect(plain.error).toBeUndefined();
      expect(plain.result?.isError ?? false).toBe(false);
      const rest = (key: string) =>
        fetch(new URL('/sessions', s.node.url), { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(start) });
      expect((await rest(s.keys.py!.key)).status).toBe(403);
      const allowed = await rest(s.keys.both!.key);
      expect(allowed.status).toBe(200);
      expect(await allowed.json()).toMatchObject({ sessionId: expect.any(String) });
    } finally {
      await stopKeyedServers([s]);
    }
  }, 60_000);
});

describe('debugging a C program under gdb under a mock set (HTTP)', () => {
  let cSet = '';
  let cPort = 0;

  it('records the C program, then, with the service stopped, gdb stops after the answer with the recorded price', async () => {
    writeFileSync(path.join(root, 'price.c'), PRICE_C);
    execFileSync('gcc', ['-g', '-O0', '-o', path.join(root, 'price'), path.join(root, 'price.c')]);
    const shop = createServer((req, res) => res.end(req.url === '/price/apple' ? '7' : '9'));
    await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
    cPort = (shop.address() as AddressInfo).port;
    const rec = await call('keploy_mock_record', { command: `./price ${cPort} apple`, path: 'keploy-c' });
    expect(rec, JSON.stringify(rec)).toMatchObject({ success: true, mockCount: 1, appExitCode: 0 });
    cSet = rec.mockFilePath.split('/').at(-2);
    await new Promise((r) => shop.close(r));

    const { id } = await dk.ok('open', { program: 'price', args: [String(cPort), 'apple'], mocks: { set: `keploy-c/${cSet}` } });
    await dk.ok('call', { id, command: `break price.c:${PRICE_PRINTED}` });
    const run = await dk.tool('call', { id, command: 'run' });
    expect(run.text, run.text).toMatch(/breakpoint/i);
    expect(run.structured.content.mocks).toMatchObject({ set: cSet, replayed: 1, missed: 0 });
    expect(run.text).toContain(`[mock set '${cSet}': 1 replayed, 0 missed]`);
    const price = await dk.tool('call', { id, command: 'print price' });
    expect(price.text).toMatch(/= 7/);
    // Nothing happened since: no replay line.
    expect(price.structured.content.mocks).toBeUndefined();
    await dk.ok('close', { id });
  }, 120_000);

  it('stopOnMiss: a changed request interrupts the program in its read of the answer, naming the closest mock', async () => {
    const { id } = await dk.ok('open', { program: 'price', args: [String(cPort), 'pear'], mocks: { set: `keploy-c/${cSet}`, stopOnMiss: true } });
    const run = await dk.tool('call', { id, command: 'run', wait: 30 });
    expect(run.structured.content.state, run.text).toBe('stopped');
    expect(run.structured.content.mocks, run.text).toMatchObject({ set: cSet, missed: 1, misses: [expect.stringMatching(/^GET \/price\/pear; closest mock-0/)] });
    const bt = await dk.tool('call', { id, command: 'bt' });
    // The thread that asked, stopped in its request's write or its read of the answer (the answer waited for the stop): main is on the stack.
    expect(bt.text).toMatch(/in main \(.*price\.c:\d+/);
    expect(bt.text.split('\n')[0]).toMatch(/write|read|recv|send/);
    await dk.ok('close', { id });
  }, 120_000);

  it('debugger_launch under the set: recorded from main, a breakpoint after the answer shows the recorded price, and it steps back across the answer', async () => {
    const launch = await dk.structured('debugger_launch', { program: 'price', args: [String(cPort), 'apple'], session_id: 'under', mocks: { set: `keploy-c/${cSet}` } });
    // Through proxychains' preload the program reads the clock: under record full that needs the vDSO hidden (session.ts hideVdso).
    expect(launch.history).toBe('record');
    await dk.structured('debugger_set_breakpoint', { address: `price.c:${PRICE_PRINTED}`, session_id: 'under' });
    const stop = await dk.tool('debugger_continue', { session_id: 'under', wait: 60 });
    expect(stop.structured, stop.text).toMatchObject({ state: 'stopped', reason: 'breakpoint-hit', line: PRICE_PRINTED, mocks: { set: cSet, replayed: 1, missed: 0 } });
    expect(stop.text).toContain(`[mock set '${cSet}': 1 replayed, 0 missed]`);
    const price = await dk.structured('debugger_evaluate', { expression: 'price', session_id: 'under' });
    expect(JSON.stringify(price)).toMatch(/"7"|: ?7\b/);
    // Back before the answer was read, then forward again: the recorded run gives the same answer.
    const back = await dk.tool('debugger_step_backward', { session_id: 'under', count: 3 });
    expect(back.structured.state, back.text).toBe('stopped');
    expect(back.structured.line).toBeLessThan(PRICE_PRINTED);
    const again = await dk.tool('debugger_continue', { session_id: 'under', wait: 60 });
    expect(again.structured, again.text).toMatchObject({ state: 'stopped', line: PRICE_PRINTED });
    expect(JSON.stringify(await dk.structured('debugger_evaluate', { expression: 'price', session_id: 'under' }))).toMatch(/"7"|: ?7\b/);
    await dk.structured('debugger_detach', { session_id: 'under' });
  }, 180_000);

  it('debugger_launch with stopOnMiss: a changed request pauses the program as a mock miss (no crash), naming the closest mock', async () => {
    await dk.structured('debugger_launch', { program: 'price', args: [String(cPort), 'pear'], session_id: 'miss', mocks: { set: `keploy-c/${cSet}`, stopOnMiss: true } });
    const stop = await dk.tool('debugger_continue', { session_id: 'miss', wait: 60 });
    expect(stop.structured, stop.text).toMatchObject({ state: 'stopped', reason: 'mock-miss', mocks: { set: cSet, missed: 1, misses: [expect.stringMatching(/^GET \/price\/pear; closest mock-0/)] } });
    const trace = await dk.structured('debugger_get_stack_trace', { session_id: 'miss' });
    expect(JSON.stringify(trace)).toMatch(/"main"/);
    await dk.structured('debugger_detach', { session_id: 'miss' });
  }, 180_000);
});
