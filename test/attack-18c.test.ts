// Attack 18c on issue 18 (nothing one key sends stalls the server for others, outlives its call,
// races a path check or blinds the audit), after 37fd217. New inputs and code paths only. Found,
// and fixed since: the audit redactor hid code that ran (a Python f-string, or a callee followed by
// a blank, under a secret-looking keyword) and kept secrets that read as code (a shell word with
// `:`, `[`, `,` or `(` after a word); a Redis set's misses and a Generic set's matches each scanned
// every recorded command on the main thread, a pipelined burst answered in one synchronous loop
// (20,000 against 19,000 mocks held another key's ping 28-38 s and 75-95 s): the recorded commands
// are now indexed, and a burst is answered in 10 ms slices. Held (regression tests): the code spellings the redactor
// keeps, huge python_evaluate values, and an Http mock with a 30 MB JSON body a request misses.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerText, plainCall, startKeyedServer, stopAttackServer, type KeyedServer, dropped, idleBaseline, slowestPingWhile } from './helpers/attack.js';
import { runCli } from './helpers/control.js';
import { waitFor } from './helpers/procs.js';
import { mocksWorkspace, tempDir } from './helpers/programs.js';
import { mockYaml } from './helpers/replay-attack.js';
import { track, writeDocuments } from './helpers/stall.js';

async function exported(s: KeyedServer): Promise<string> {
  const r = await runCli(['audit', 'export', ...s.store]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

describe('attack 18c: code hidden from the audit, and secrets kept, by the redactor (python_evaluate, gdb call)', () => {
  let s: KeyedServer;
  let root: string;
  let host: string;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18c-audit-');
    host = tempDir('debugkit-attack18c-host-');
    writeFileSync(path.join(root, 'prog.py'), 'x = 1\ny = 2\nprint(x + y)\n');
    s = await startKeyedServer(root, { gdb: 'gdb', python: 'python' }, ['--toolsets', 'gdb,python']);
  }, 60_000);
  afterAll(async () => {
    await stopAttackServer(s, root);
    rmSync(host, { recursive: true, force: true });
  });

  /** A python session of the python key stopped at prog.py:3. */
  async function stoppedSession(): Promise<string> {
    const r = await plainCall(s, s.keys.python!.key, 'python_start_session', { entry: 'prog.py' });
    const id = r.result?.structuredContent?.sessionId;
    expect(typeof id, JSON.stringify(r).slice(0, 400)).toBe('string');
    const stop = await plainCall(s, s.keys.python!.key, 'python_run_to_breakpoint', { sessionId: id, file: 'prog.py', line: 3 });
    expect(answerText(stop, { structured: true }), 'stopped at line 3').toMatch(/prog\.py/);
    return id;
  }

  // Each runs os.system('touch MARKER') in the program; the entry must show that code ran.
  const hidden: Array<{ what: string; expr: (marker: string) => string; shows: string[] }> = [
    { what: 'an f-string under a secret-looking keyword: dict(password=f"{...}")', expr: (m) => `str(dict(password=f"{__import__('os').system('touch ${m}')}"))`, shows: ['system', 'touch'] },
    { what: "an f-string in single quotes: dict(token=f'{...}')", expr: (m) => `str(dict(token=f'{__import__("os").system("touch ${m}")}'))`, shows: ['system', 'touch'] },
    {
      what: 'a call with a blank before its parenthesis: dict(token=getattr (...)(...))',
      expr: (m) => `str(dict(token=getattr (__import__("os"), "system")("touch ${m}")))`,
      shows: ['getattr', 'system', 'touch'],
    },
  ];
  for (const [i, h] of hidden.entries()) {
    it(`${h.what}: the code that ran is in the audit entry`, async () => {
      const id = await stoppedSession();
      const marker = path.join(host, `marker-${i}`);
      const tag = `m18c${i}`;
      const expression = `[${JSON.stringify(tag)}, ${h.expr(marker)}]`;
      const r = await plainCall(s, s.keys.python!.key, 'python_evaluate', { sessionId: id, expression });
      await plainCall(s, s.keys.python!.key, 'python_end_session', { sessionId: id });
      // The code ran: the marker outside the root is there.
      expect(await waitFor(() => existsSync(marker), 10_000), `the expression did not run: ${answerText(r).slice(0, 300)}`).toBe(true);
      const line = (await exported(s)).split('\n').find((l) => l.includes(tag)) ?? '';
      expect(line, "the call's entry").not.toBe('');
      // ... and the audit says what ran: os.system / touch of the marker.
      expect(
        h.shows.filter((w) => !line.includes(w)),
        `stored: ${line.slice(0, 600)}`,
      ).toEqual([]);
    }, 60_000);
  }

  // Passwords with punctuation after a word: the code-name rule reads them as code and keeps them.
  const kept: Array<{ what: string; text: (secret: string) => string }> = [
    { what: 'PGPASSWORD=WORD:rest psql', text: (x) => `shell PGPASSWORD=${x}:9q psql -h db` },
    { what: 'MYSQL_PWD=WORD[rest] mysql', text: (x) => `shell MYSQL_PWD=${x}[9q] mysql -h db` },
    { what: 'export API_TOKEN=WORD,rest', text: (x) => `shell export API_TOKEN=${x},9q; ./deploy` },
    { what: 'DB_PASSWORD=WORD(rest)', text: (x) => `shell DB_PASSWORD=${x}(9q) ./migrate` },
  ];
  for (const [i, k] of kept.entries()) {
    it(`a secret in ${k.what} (gdb call) is stored without its secret`, async () => {
      const secret = `Tr0ub4dor${i}Zk`;
      const tag = `k18c${i}`;
      await plainCall(s, s.keys.gdb!.key, 'call', { id: 'no-such-session', command: `${k.text(secret)} # ${tag}` });
      const line = (await exported(s)).split('\n').find((l) => l.includes(tag)) ?? '';
      expect(line, "the call's entry").not.toBe('');
      expect(line.includes(secret), `stored: ${line.slice(0, 400)}`).toBe(false);
    }, 60_000);
  }

  it('held (regression): the spellings of code the redactor keeps (a call, a dotted path after " = ", a constant)', async () => {
    const texts = ['str(dict(token=os.getcwd()))', 'password = os.getcwd', 'password = None'];
    for (const [i, t] of texts.entries()) await plainCall(s, s.keys.python!.key, 'python_evaluate', { sessionId: 'no-such-session', expression: `"h18c${i}"; ${t}` });
    const audit = await exported(s);
    for (const [i, t] of texts.entries()) expect(audit.split('\n').find((l) => l.includes(`h18c${i}`)) ?? '', t).toContain(t.replace(/"/g, '\\"'));
  }, 60_000);
});

describe("attack 18c: a python_evaluate whose value is huge (debugpy's answer parsed on the main thread)", () => {
  let s: KeyedServer;
  let root: string;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18c-pyhuge-');
    writeFileSync(path.join(root, 'prog.py'), 'x = 1\ny = 2\nprint(x + y)\n');
    s = await startKeyedServer(root, { python: 'python', other: 'python:read' }, ['--toolsets', 'python']);
  }, 60_000);
  afterAll(() => stopAttackServer(s, root));

  for (const [expression, what] of [
    ["'a' * 1000", 'control: a 1 KB string'],
    ["'a' * (200 * 10**6)", 'a 200 MB string'],
    ['list(range(3 * 10**6))', 'a list of 3,000,000 ints'],
  ] as const) {
    it(`${what} evaluated does not hold another key's ping`, async () => {
      const r = await plainCall(s, s.keys.python!.key, 'python_start_session', { entry: 'prog.py' });
      const id = r.result?.structuredContent?.sessionId;
      expect(typeof id, JSON.stringify(r).slice(0, 400)).toBe('string');
      await plainCall(s, s.keys.python!.key, 'python_run_to_breakpoint', { sessionId: id, file: 'prog.py', line: 3 });
      const baseline = await idleBaseline(s, s.keys.other!.key);
      const t = performance.now();
      const call = track(plainCall(s, s.keys.python!.key, 'python_evaluate', { sessionId: id, expression, maxReprLength: 100_000, depth: 1 }));
      const { slowest, count } = await slowestPingWhile(s, s.keys.other!.key, call);
      const answer = await call.promise;
      const took = performance.now() - t;
      await plainCall(s, s.keys.python!.key, 'python_end_session', { sessionId: id });
      expect(slowest, `slowest of ${count} pings ${slowest.toFixed(0)} ms, idle ${baseline.toFixed(1)} ms, call ${took.toFixed(0)} ms; answer: ${answerText(answer).slice(0, 300)}`).toBeLessThan(
        Math.max(500, 20 * baseline),
      );
      expect(dropped.splice(0), 'pings the server dropped meanwhile').toEqual([]);
    }, 300_000);
  }
});

/** A Keploy set of one Http mock, POST http://127.0.0.1:9/x with `body` (its JSON body is parsed only when a request misses). */
function httpPostSet(file: string, body: string): void {
  writeFileSync(
    file,
    'version: api.keploy.io/v1beta1\nkind: Http\nname: mock-0\nspec:\n    metadata:\n        name: Http\n        operation: POST\n        type: HTTP_CLIENT\n' +
      '    req:\n        method: POST\n        proto_major: 1\n        proto_minor: 1\n        url: http://127.0.0.1:9/x\n        header:\n            Content-Type: application/json\n' +
      `        body: '${body}'\n        timestamp: 0001-01-01T00:00:00Z\n` +
      '    resp:\n        status_code: 200\n        header:\n            Content-Type: text/plain\n        body: "ok"\n        status_message: ""\n        proto_major: 0\n        proto_minor: 0\n        timestamp: 0001-01-01T00:00:00Z\n' +
      '    objects: []\n    created: 1722941810\n',
  );
}

const POST_PY = `import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", 9, timeout=300)
c.request("POST", "/x", body=b'{"a":[1]}', headers={"Content-Type": "application/json"})
r = c.getresponse(); print("status", r.status); r.read()
`;

describe("attack 18c: an Http mock whose 30 MB JSON body is parsed on the main thread when a request misses (HttpMatcher's closest)", () => {
  let s: KeyedServer;
  let root: string;

  beforeAll(async () => {
    root = mocksWorkspace('debugkit-attack18c-httpjson-');
    const n = 14_000_000; // "0," x 14M: a 28 MB body
    for (const [name, body] of [
      ['json-big', `{"a":[${'0,'.repeat(n)}0]}`],
      ['text-big', `x${'0,'.repeat(n)}0`],
    ] as const) {
      mkdirSync(path.join(root, 'keploy', name), { recursive: true });
      httpPostSet(path.join(root, 'keploy', name, 'mocks.yaml'), body);
    }
    writeFileSync(path.join(root, 'post.py'), POST_PY);
    s = await startKeyedServer(root, { attacker: 'mocks,mocks:run', other: 'mocks:read' }, ['--toolsets', 'mocks']);
  }, 60_000);
  afterAll(() => stopAttackServer(s, root));

  /** A request that misses `mockName`'s one mock, replayed while the other key pings: its slowest ping. */
  async function missWhilePinging(mockName: string): Promise<{ slowest: number; count: number; took: number; text: string; dropped: string[] }> {
    dropped.length = 0;
    const t = performance.now();
    const replay = track(plainCall(s, s.keys.attacker!.key, 'keploy_mock_test', { command: '/usr/bin/python3 post.py', mockName }));
    const { slowest, count } = await slowestPingWhile(s, s.keys.other!.key, replay);
    const answer = await replay.promise;
    const took = performance.now() - t;
    const text = answerText(answer, { structured: true });
    expect(text, `${mockName}: the request missed`).toMatch(/"mocksMissed":1/);
    return { slowest, count, took, text, dropped: dropped.splice(0) };
  }

  // Relative, under the load of the moment: the control (a 28 MB text body, never parsed as JSON)
  // goes through the same load, miss and report. It held the loop 0.3-1.2 s on a quiet host and
  // 1-2.5 s when the host's cores were busy (the pings, the server and the mock-set thread share
  // them), until its body came from the mock-set thread as bytes (load.ts LONG_BODY): bench
  // liveness, p99 184 ms before, 25 ms after. It is measured before and after the JSON body; the slower of the two is the
  // baseline. JSON.parse of the 28 MB body on the main thread is one step of about 4 s on a quiet
  // host, more under load (a scratch build that parsed it: 4.4 s against controls of 0.9 and
  // 1.2 s quiet, 11.8 s against 2.0 and 2.4 s under load). Twice the baseline (the load's
  // scaling) plus 1 s (jitter) stays below that, and above what the same path costs without it.
  it("a 28 MB JSON body, a request that misses it holds another key's ping no longer than a 28 MB text body does", async () => {
    const idle = await idleBaseline(s, s.keys.other!.key);
    const before = await missWhilePinging('text-big');
    const json = await missWhilePinging('json-big');
    const after = await missWhilePinging('text-big');
    const baseline = Math.max(before.slowest, after.slowest);
    const shown = (what: string, r: { slowest: number; count: number; took: number }) => `${what}: slowest of ${r.count} pings ${r.slowest.toFixed(0)} ms, call ${r.took.toFixed(0)} ms`;
    expect(json.slowest, `${shown('JSON', json)}; ${shown('text before', before)}; ${shown('text after', after)}; idle ${idle.toFixed(1)} ms; answer: ${json.text.slice(0, 400)}`).toBeLessThan(
      2 * baseline + 1000,
    );
    // A ping sent on a kept-alive connection as the server closes it after a long stall is dropped
    // (ECONNRESET; its round trip still counts until then): the JSON body may cause no more of that than the control.
    expect(json.dropped.length, `pings the server dropped meanwhile: ${[...json.dropped, '| text:', ...before.dropped, ...after.dropped].join(', ')}`).toBeLessThanOrEqual(
      Math.max(before.dropped.length, after.dropped.length),
    );
  }, 600_000);
});

/**
 * One describe: a set of 19,000 mocks and a control set of one, and a program that sends N
 * requests pipelined in one write on one connection and reads the N answers; a `keploy_mock_test`
 * of it (a `mocks:run` key) must not hold another key's ping.
 */
function pipelinedBurst(o: {
  title: string;
  kind: 'Redis' | 'Generic';
  request: (i: number) => string;
  response: string;
  what: string;
  /** What the report must count. */
  counted: RegExp;
  /** What the program sends N times to 127.0.0.1:`port` (a Python bytes literal's text), and what it counts in the answers. */
  send: { port: number; request: string; counted: string };
}): void {
  const program = `import socket, sys
n = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", ${o.send.port}), timeout=300)
s.sendall(b"${o.send.request}" * n)
got = 0
while got < n:
    b = s.recv(1 << 20)
    if not b:
        break
    got += b.count(b"${o.send.counted}")
print("answers", got)
`;
  describe(o.title, () => {
    let s: KeyedServer;
    let root: string;

    beforeAll(async () => {
      root = mocksWorkspace(`debugkit-attack18c-${o.kind.toLowerCase()}-`);
      for (const [name, count] of [
        ['big', 19_000],
        ['one', 1],
      ] as const) {
        mkdirSync(path.join(root, 'keploy', name), { recursive: true });
        writeDocuments(path.join(root, 'keploy', name, 'mocks.yaml'), count, (i) => mockYaml(o.kind, i, o.request(i), o.response));
      }
      writeFileSync(path.join(root, 'burst.py'), program);
      s = await startKeyedServer(root, { attacker: 'mocks,mocks:run', other: 'mocks:read' }, ['--toolsets', 'mocks']);
    }, 60_000);
    afterAll(() => stopAttackServer(s, root));

    for (const [mockName, what] of [
      ['one', `control: 20,000 pipelined ${o.what} against a set of one`],
      ['big', `20,000 pipelined ${o.what} against a set of 19,000`],
    ] as const) {
      it(`${what} do not hold another key's ping`, async () => {
        const baseline = await idleBaseline(s, s.keys.other!.key);
        const t = performance.now();
        const replay = track(plainCall(s, s.keys.attacker!.key, 'keploy_mock_test', { command: '/usr/bin/python3 burst.py 20000', mockName, timeout: 600 }));
        const { slowest, count } = await slowestPingWhile(s, s.keys.other!.key, replay);
        const answer = await replay.promise;
        const took = performance.now() - t;
        const text = answerText(answer, { structured: true });
        expect(text, 'the report counts each request, and the program read every answer').toMatch(o.counted);
        expect(slowest, `slowest of ${count} pings ${slowest.toFixed(0)} ms, idle ${baseline.toFixed(1)} ms, call ${took.toFixed(0)} ms; answer: ${text.slice(0, 400)}`).toBeLessThan(
          Math.max(500, 20 * baseline),
        );
        expect(dropped.splice(0), 'pings the server dropped meanwhile').toEqual([]);
      }, 900_000);
    }
  });
}

// Redis: each mock `SET k<i> v` answered +OK (as redis-py records them); the program's `SET x v` is
// recorded in neither set, so each is a miss whose closest is looked for.
pipelinedBurst({
  title: "attack 18c: a Redis set's misses, each scanning every recorded command of its name on the main thread (RedisIndex.closest)",
  kind: 'Redis',
  request: (i) => `*3\\r\\n$3\\r\\nSET\\r\\n$${`k${i}`.length}\\r\\nk${i}\\r\\n$1\\r\\nv\\r\\n`,
  response: '+OK\\r\\n',
  what: 'misses',
  counted: /"mocksReplayed":0,"mocksMissed":20000,"appExitCode":0,[^]*answers 20000/,
  send: { port: 6379, request: '*3\\r\\n$3\\r\\nSET\\r\\n$1\\r\\nx\\r\\n$1\\r\\nv\\r\\n', counted: '\\r\\n' },
});

// Generic: mocks with no host (they answer any target), each request `Q<i, 6 digits>\n` answered
// `A\n`; the program sends the first recorded request N times (each a hit).
pipelinedBurst({
  title: 'attack 18c: a Generic set whose every match scans every recorded request on the main thread (TargetView.match)',
  kind: 'Generic',
  request: (i) => `Q${String(i).padStart(6, '0')}\\n`,
  response: 'A\\n',
  what: 'hits',
  counted: /"mocksReplayed":20000,"mocksMissed":0,"appExitCode":0,/,
  send: { port: 7777, request: 'Q000000\\n', counted: 'A' },
});
