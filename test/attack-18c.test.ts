// Attack 18c on issue 18 (nothing one key sends stalls the server for others, outlives its call,
// races a path check or blinds the audit), after 37fd217. New inputs and code paths only. Found,
// and fixed since: the audit redactor hid code that ran (a Python f-string, or a callee followed by
// a blank, under a secret-looking keyword) and kept secrets that read as code (a shell word with
// `:`, `[`, `,` or `(` after a word). Found and still open (failing tests parked in
// test/pending/attack-18c.unit.ts): a Redis set's misses and a Generic set's matches each scan every
// recorded command on the main thread. Held (regression tests): the code spellings the redactor
// keeps, huge python_evaluate values, and an Http mock with a 30 MB JSON body a request misses.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerText, plainCall, startKeyedServer, stopKeyedServers, type KeyedServer, dropped, idleBaseline, slowestPingWhile } from './helpers/attack.js';
import { runCli } from './helpers/control.js';
import { waitFor } from './helpers/procs.js';
import { mocksWorkspace, tempDir } from './helpers/programs.js';
import { stopHard, track } from './helpers/stall.js';

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
    await stopHard(s?.node.proc);
    await stopKeyedServers([s]);
    rmSync(root, { recursive: true, force: true });
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
  afterAll(async () => {
    await stopHard(s?.node.proc);
    await stopKeyedServers([s]);
    rmSync(root, { recursive: true, force: true });
  });

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
  afterAll(async () => {
    await stopHard(s?.node.proc);
    await stopKeyedServers([s]);
    rmSync(root, { recursive: true, force: true });
  });

  for (const [mockName, what] of [
    ['text-big', 'control: a 28 MB text body'],
    ['json-big', 'a 28 MB JSON body'],
  ] as const) {
    it(`${what}, a request that misses it does not hold another key's ping`, async () => {
      const baseline = await idleBaseline(s, s.keys.other!.key);
      const t = performance.now();
      const replay = track(plainCall(s, s.keys.attacker!.key, 'keploy_mock_test', { command: '/usr/bin/python3 post.py', mockName }));
      const { slowest, count } = await slowestPingWhile(s, s.keys.other!.key, replay);
      const answer = await replay.promise;
      const took = performance.now() - t;
      const text = answerText(answer, { structured: true });
      expect(text, 'the request missed').toMatch(/"mocksMissed":1/);
      expect(slowest, `slowest of ${count} pings ${slowest.toFixed(0)} ms, idle ${baseline.toFixed(1)} ms, call ${took.toFixed(0)} ms; answer: ${text.slice(0, 400)}`).toBeLessThan(
        Math.max(500, 20 * baseline),
      );
      expect(dropped.splice(0), 'pings the server dropped meanwhile').toEqual([]);
    }, 300_000);
  }
});
