// Attack 18b on issue 18 (nothing one key sends stalls the server for others, outlives its call,
// races a path check or blinds the audit), after 58b6052 (keploy_mock_test loads sets on the
// worker pool) and 5af1ecb (gdb commands naming files). Each test measures the real effect. Found
// by it, and fixed since: F1, one Http mock whose replay index took quadratic time on the main
// thread (a repeated query key, blanks in Content-Type, an AWS4 credential); F2, a 3 GiB program
// copied on the event loop for gdb and the debugger; F3, a mock set's directory swapped for a link
// out of the root while listed or loaded; F4, secrets in common spellings stored in the audit. The
// attacks that held (a python program's forks and daemons, the spellings the redactor knew, the
// program's own pathological requests) stay as regression tests.
import { chmodSync, existsSync, mkdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerText, plainCall, startKeyedServer, stopAttackServer, stopKeyedServers, type Answer, type KeyedServer, dropped, idleBaseline, slowestPingWhile } from './helpers/attack.js';
import { runCli } from './helpers/control.js';
import { race, type Outcome } from './helpers/flipper.js';
import { isRunning, pidFrom, waitFor } from './helpers/procs.js';
import { mocksWorkspace, tempDir } from './helpers/programs.js';
import { track } from './helpers/stall.js';

/** A Keploy set of one Http mock (GET on `url` with `headers`), as keploy writes it. */
function httpMockSet(url: string, headers: Record<string, string>): string {
  const header = Object.entries(headers)
    .map(([k, v]) => `            ${k}: ${JSON.stringify(v)}\n`)
    .join('');
  return (
    'version: api.keploy.io/v1beta1\nkind: Http\nname: mock-0\nspec:\n    metadata:\n        name: Http\n        operation: GET\n        type: HTTP_CLIENT\n' +
    `    req:\n        method: GET\n        proto_major: 1\n        proto_minor: 1\n        url: ${JSON.stringify(url)}\n        header:\n${header || '            Accept: "*/*"\n'}        body: ""\n        timestamp: 0001-01-01T00:00:00Z\n` +
    '    resp:\n        status_code: 200\n        header:\n            Content-Type: text/plain\n        body: "ok"\n        status_message: ""\n        proto_major: 0\n        proto_minor: 0\n        timestamp: 0001-01-01T00:00:00Z\n' +
    '    objects: []\n    created: 1722941810\n'
  );
}

describe("attack 18b: mock sets whose one mock costs the replayer's index build (main thread) quadratic time", () => {
  let s: KeyedServer;
  let root: string;

  beforeAll(async () => {
    root = mocksWorkspace('debugkit-attack18b-mocks-');
    const set = (name: string, text: string) => {
      mkdirSync(path.join(root, 'keploy', name), { recursive: true });
      writeFileSync(path.join(root, 'keploy', name, 'mocks.yaml'), text);
    };
    // 40,000 repetitions of one query key: a 160 KB URL (the set is 160 KB, one document).
    set('query', httpMockSet(`http://127.0.0.1:9/x?${'a=1&'.repeat(40_000)}`, {}));
    // A Content-Type of 60,000 inner spaces: 60 KB.
    set('ctype', httpMockSet('http://127.0.0.1:9/x', { 'Content-Type': `a${' '.repeat(60_000)}b` }));
    // An Authorization header of 'AWS4-' and 20,000 'Credential=': 220 KB.
    set('aws', httpMockSet('http://127.0.0.1:9/x', { Authorization: `AWS4-${'Credential='.repeat(20_000)}` }));
    // A small ordinary set, for a program whose own request carries the repetitions.
    set('small', httpMockSet('http://127.0.0.1:9/x', {}));
    writeFileSync(
      path.join(root, 'ask.py'),
      'import http.client, sys\n' +
        'c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=120)\n' +
        'n = int(sys.argv[2]); how = sys.argv[3] if len(sys.argv) > 3 else "query"\n' +
        'if how == "query": c.request("GET", "/x?" + "a&" * n)\n' +
        'else: c.request("GET", "/x", headers={"Content-Type": "a" + " " * n + "b"})\n' +
        'r = c.getresponse(); print(r.status); r.read()\n',
    );
    // A control: the same size, flat.
    set('flat', httpMockSet(`http://127.0.0.1:9/x?${'a'.repeat(160_000)}=1`, {}));
    s = await startKeyedServer(root, { attacker: 'mocks,mocks:run', other: 'mocks:read' }, ['--toolsets', 'mocks']);
  }, 60_000);
  afterAll(() => stopAttackServer(s, root));

  async function replayWhilePinging(mockName: string): Promise<{ answer: Answer; slowest: number; baseline: number; count: number }> {
    const baseline = await idleBaseline(s, s.keys.other!.key);
    const replay = track(plainCall(s, s.keys.attacker!.key, 'keploy_mock_test', { command: '/usr/bin/python3 -c pass', mockName }));
    try {
      const { slowest, count } = await slowestPingWhile(s, s.keys.other!.key, replay);
      return { answer: await replay.promise, slowest, baseline, count };
    } finally {
      await replay.promise.catch(() => undefined);
    }
  }

  it("control: a flat 160 KB Http mock replays without holding another key's ping", async () => {
    const r = await replayWhilePinging('flat');
    expect(answerText(r.answer)).not.toMatch(/not loaded/);
    expect(r.slowest, `baseline ${r.baseline.toFixed(1)} ms`).toBeLessThan(Math.max(500, 20 * r.baseline));
  }, 120_000);

  for (const name of ['query', 'ctype', 'aws']) {
    it(`keploy_mock_test of set "${name}" (one Http mock) does not hold another key's ping`, async () => {
      const r = await replayWhilePinging(name);
      expect(r.slowest, `slowest ping ${r.slowest.toFixed(0)} ms, idle ${r.baseline.toFixed(1)} ms; answer: ${answerText(r.answer).slice(0, 300)}`).toBeLessThan(Math.max(500, 20 * r.baseline));
      expect(dropped.splice(0), 'pings the server dropped meanwhile').toEqual([]);
    }, 180_000);
  }

  it("control: the program's request with a flat 160 KB URL does not hold another key's ping", async () => {
    const baseline = await idleBaseline(s, s.keys.other!.key);
    const replay = track(plainCall(s, s.keys.attacker!.key, 'keploy_mock_test', { command: '/usr/bin/python3 ask.py 9 1', mockName: 'small' }));
    const { slowest } = await slowestPingWhile(s, s.keys.other!.key, replay);
    const answer = await replay.promise;
    expect(answerText(answer)).toContain('"appOutput":"502"');
    expect(slowest, `idle ${baseline.toFixed(1)} ms; answer: ${answerText(answer).slice(0, 300)}`).toBeLessThan(Math.max(500, 20 * baseline));
    expect(dropped.splice(0)).toEqual([]);
  }, 180_000);

  for (const [how, n, what] of [
    ['query', 30_000, 'GET /x?a&a&... (30,000 times, 60 KB)'],
    ['ctype', 60_000, 'a Content-Type of 60,000 inner spaces'],
  ] as const) {
    it(`the program's own request (${what}) replayed against an ordinary set does not hold another key's ping`, async () => {
      const baseline = await idleBaseline(s, s.keys.other!.key);
      const replay = track(plainCall(s, s.keys.attacker!.key, 'keploy_mock_test', { command: `/usr/bin/python3 ask.py 9 ${n} ${how}`, mockName: 'small' }));
      const { slowest } = await slowestPingWhile(s, s.keys.other!.key, replay);
      const answer = await replay.promise;
      // (Held: a request head this big is not taken as HTTP by the proxy, so the matcher never sees it.)
      expect(slowest, `slowest ping ${slowest.toFixed(0)} ms, idle ${baseline.toFixed(1)} ms; answer: ${answerText(answer).slice(0, 400)}`).toBeLessThan(Math.max(500, 20 * baseline));
      expect(dropped.splice(0)).toEqual([]);
    }, 180_000);
  }
});

describe('attack 18b: secrets in common spellings, sent as tool arguments, read back from the audit', () => {
  let s: KeyedServer;
  let root: string;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18b-audit-');
    s = await startKeyedServer(root, { gdb: 'gdb', python: 'python' }, ['--toolsets', 'gdb,python']);
  }, 60_000);
  afterAll(() => stopAttackServer(s, root));

  async function exported(): Promise<string> {
    const r = await runCli(['audit', 'export', ...s.store]);
    expect(r.code, r.stderr).toBe(0);
    return r.stdout;
  }

  // Each spelling carries a distinct secret; the gdb ones go as commands to a session that is not
  // there, the python ones as an expression to one that is not there: the call is audited either way.
  const spellings: Array<{ tool: 'call' | 'python_evaluate'; text: (secret: string) => string; what: string }> = [
    { tool: 'python_evaluate', what: 'a Python assignment with blanks around "="', text: (x) => `password = "${x}"` },
    { tool: 'python_evaluate', what: 'a keyword argument with blanks', text: (x) => `psycopg2.connect(host="db", password = "${x}")` },
    { tool: 'python_evaluate', what: 'os.environ["PGPASSWORD"] = ...', text: (x) => `os.environ["PGPASSWORD"] = "${x}"` },
    { tool: 'python_evaluate', what: 'an AWS credentials file line', text: (x) => `open("c","w").write("aws_secret_access_key = ${x}")` },
    { tool: 'call', what: 'curl -u user:password', text: (x) => `shell curl -u alice:${x} https://example.invalid/` },
    { tool: 'call', what: 'curl --user user:password', text: (x) => `shell curl --user alice:${x} https://example.invalid/` },
    { tool: 'call', what: 'redis-cli -a password', text: (x) => `shell redis-cli -a ${x} ping` },
    { tool: 'call', what: 'docker login -p password', text: (x) => `shell docker login -u alice -p ${x} registry.invalid` },
  ];

  it("held (regression): the spellings the redaction knows (NAME=value, -pVALUE, --password VALUE, Bearer, a URL's password) are not stored", async () => {
    const held = [
      'PGPASSWORD=held0secret psql',
      'mysql -uroot -pheld1secret db',
      'mysql --password held2secret',
      'curl -H "Authorization: Bearer held3secret0000"',
      'psql postgresql://u:held4secret@h/db',
    ];
    for (const text of held) await plainCall(s, s.keys.gdb!.key, 'call', { id: 'no-such-session', command: `shell ${text}` });
    const audit = await exported();
    for (let i = 0; i < held.length; i++) expect(audit, held[i]).not.toContain(`held${i}secret`);
  }, 60_000);

  for (const [i, sp] of spellings.entries()) {
    // Since round 18ai a debugger's code is kept as sent (SECURITY.md): a Python expression's secret is the documented price;
    // a plain gdb shell line is a command line, its secret hidden.
    const code = sp.tool === 'python_evaluate';
    it(`${sp.what} (${sp.tool}) is stored ${code ? 'as sent: code a debugger runs' : 'without its secret'}`, async () => {
      const secret = `s3cr3t${i}Xq`;
      const tag = `m18b${i}`;
      const text = sp.tool === 'call' ? `${sp.text(secret)} # ${tag}` : `${tag}; ${sp.text(secret)}`;
      const args = sp.tool === 'call' ? { id: 'no-such-session', command: text } : { sessionId: 'no-such-session', expression: text };
      await plainCall(s, s.keys[sp.tool === 'call' ? 'gdb' : 'python']!.key, sp.tool, args);
      const audit = await exported();
      // The call was audited (its entry is there) ...
      const line = audit.split('\n').find((l) => l.includes(tag)) ?? '';
      expect(line, "the call's entry").not.toBe('');
      // ... and the secret is in it only as code a debugger runs.
      expect(line.includes(secret), `stored: ${line.slice(0, 400)}`).toBe(code);
    }, 60_000);
  }
});

// A Python program (a python key's entry) that leaves a process behind in the ways a daemon does.
const DAEMON_PY = `import os, sys, time
pidfile, how = sys.argv[1], sys.argv[2]
def daemon():
    devnull = os.open('/dev/null', os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    with open(pidfile + '.tmp', 'w') as f:
        f.write(str(os.getpid()))
    os.rename(pidfile + '.tmp', pidfile)
    if how == 'exec':
        os.execv('/bin/sleep', ['sleep', '600'])
    time.sleep(600)
    os._exit(0)
if how == 'fork':
    if os.fork() == 0:
        daemon()
else:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            daemon()
        os._exit(0)
while not os.path.exists(pidfile):
    time.sleep(0.01)
print('started')
while True:
    time.sleep(0.05)
`;

describe('attack 18ak s1-1, s1-2: a call whose record could not keep what it runs whole is refused, not run', () => {
  let s: KeyedServer;
  let root: string;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18ak-whole-');
    mkdirSync(path.join(root, 'tools'));
    // evil_prog would leave a mark if it ran.
    writeFileSync(path.join(root, 'evil_prog'), `#!/bin/sh\ntouch ${JSON.stringify(path.join(root, 'ran'))}\n`);
    chmodSync(path.join(root, 'evil_prog'), 0o755);
    s = await startKeyedServer(root, { gdb: 'gdb', debugger: 'debugger' }, ['--toolsets', 'gdb,debugger']);
  }, 60_000);
  afterAll(() => stopAttackServer(s, root));

  it('a 72,009-character program path (tools/../ x 8000, then evil_prog) is refused by gdb open and debugger_launch, the refusal audited', async () => {
    const program = `${'tools/../'.repeat(8000)}evil_prog`;
    for (const [key, tool, args] of [
      ['gdb', 'open', { program }],
      ['debugger', 'debugger_launch', { program, session_id: 'whole' }],
    ] as const) {
      const answer = await plainCall(s, s.keys[key]!.key, tool, args);
      // gdb's and the debugger's calls run code: anything cut refuses them (a program path, in any toolset).
      expect(answerText(answer), tool).toMatch(
        /call refused: its arguments could not be redacted for the audit \(the audit keeps what a call runs whole, and this record could not \(cut: 72009 characters in all\)\); the call was not run: send fewer or shorter arguments$/,
      );
    }
    const r = await runCli(['audit', 'export', ...s.store]);
    const refused = r.stdout.split('\n').filter((l) => l.includes('the audit keeps what a call runs whole'));
    expect(refused.length).toBe(2);
    for (const line of refused) expect(JSON.parse(line)).toMatchObject({ event: 'denied', outcome: 'refused' });
    expect(existsSync(path.join(root, 'ran'))).toBe(false);
  }, 60_000);
});

describe('attack 18al u1-2, u1-3: what decides the code a python session runs is shown whole, over MCP and REST alike', () => {
  let s: KeyedServer;
  let root: string;
  const token = `ghp_${'A'.repeat(36)}`;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18al-');
    mkdirSync(path.join(root, token), { recursive: true });
    writeFileSync(path.join(root, token, 'sitecustomize.py'), `open(${JSON.stringify(path.join(root, 'ran'))}, "w").close()\n`);
    writeFileSync(path.join(root, 'app.py'), 'print("app")\n');
    s = await startKeyedServer(root, { python: 'python', mocks: 'mocks,mocks:run' }, ['--toolsets', 'python,mocks']);
  }, 60_000);
  afterAll(() => stopAttackServer(s, root));

  const rest = (body: object) =>
    fetch(new URL('/sessions', s.node.url), { method: 'POST', headers: { Authorization: `Bearer ${s.keys.python!.key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const exported = async () => (await runCli(['audit', 'export', ...s.store])).stdout;

  it('a PYTHONPATH through a directory named like a token is kept as sent (it ran sitecustomize.py, hidden as [REDACTED])', async () => {
    const pythonPath = path.join(root, token);
    const started = await plainCall(s, s.keys.python!.key, 'python_start_session', { entry: 'app.py', env: { PYTHONPATH: pythonPath, LD_PRELOAD: `${pythonPath}/none.so` } });
    const id = started.result?.structuredContent?.sessionId;
    if (id) await plainCall(s, s.keys.python!.key, 'python_end_session', { sessionId: id });
    const line = (await exported()).split('\n').find((l) => l.includes('python_start_session') && l.includes('PYTHONPATH')) ?? '';
    expect(JSON.parse(line).args.env).toEqual({ PYTHONPATH: pythonPath, LD_PRELOAD: `${pythonPath}/none.so` });
  }, 60_000);

  it('REST POST /sessions is kept whole or refused, as python_start_session is: 1,007 env entries and a 72,000-character value are refused, 400', async () => {
    const many = Object.fromEntries(Array.from({ length: 1007 }, (_, i) => [`V${i}`, 'x']));
    for (const env of [many, { LD_PRELOAD: `${'./'.repeat(36_000)}x2.so` }]) {
      const res = await rest({ entry: 'app.py', env });
      expect(res.status).toBe(400);
      expect(await res.text()).toMatch(/the audit keeps what a call runs whole, and this record could not/);
    }
    const refused = (await exported()).split('\n').filter((l) => l.includes('POST /sessions') && l.includes('the audit keeps what a call runs whole'));
    expect(refused.length).toBe(2);
  }, 60_000);

  it('a mocks command line past what a record keeps is refused: its tail would run unseen', async () => {
    const command = `${'true; '.repeat(12_000)}touch ${path.join(root, 'tail-ran')}`;
    const answer = await plainCall(s, s.keys.mocks!.key, 'keploy_mock_record', { command, timeout: 30 });
    expect(answerText(answer)).toMatch(/the audit keeps what a call runs whole, and this record could not/);
    expect(existsSync(path.join(root, 'tail-ran'))).toBe(false);
  }, 60_000);
});

describe("attack 18b: a python program's forked and daemonized children", () => {
  let s: KeyedServer;
  let root: string;
  const leftovers: number[] = [];

  beforeAll(async () => {
    root = tempDir('debugkit-attack18b-py-');
    writeFileSync(path.join(root, 'daemon.py'), DAEMON_PY);
    s = await startKeyedServer(root, { py: 'python' }, ['--toolsets', 'python']);
  }, 60_000);
  afterAll(async () => {
    for (const pid of leftovers) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await stopAttackServer(s, root);
  });

  let n = 0;
  async function started(how: string, extra: object = {}, server = s, runArgs: object = {}): Promise<{ id: string; pid: number; run: Promise<Answer> }> {
    const pidfile = path.join(root, `pid-${how}-${++n}`);
    const r = await plainCall(server, server.keys.py!.key, 'python_start_session', { entry: 'daemon.py', args: [pidfile, how], ...extra });
    const id = r.result?.structuredContent?.sessionId;
    expect(typeof id, JSON.stringify(r).slice(0, 400)).toBe('string');
    // Let it run (no breakpoints): it forks, then sleeps.
    const run = plainCall(server, server.keys.py!.key, 'python_continue', { sessionId: id, ...runArgs });
    const pid = await pidFrom(pidfile);
    leftovers.push(pid);
    void run.catch(() => undefined);
    return { id, pid, run };
  }

  for (const how of ['fork', 'daemon', 'exec']) {
    it(`${how}: the child is gone once python_end_session returns`, async () => {
      const { id, pid } = await started(how);
      expect(isRunning(pid)).toBe(true);
      await plainCall(s, s.keys.py!.key, 'python_end_session', { sessionId: id });
      expect(await waitFor(() => !isRunning(pid), 10_000), `pid ${pid} (${how}) outlived python_end_session`).toBe(true);
    }, 60_000);
  }

  it("daemon: the child is gone after the session's idle timeout", async () => {
    // The program is paused after 1 s (timeout), so no call of the session is pending: it is idle.
    const { pid, run } = await started('daemon', { idleTimeout: 3 }, s, { timeout: 1 });
    expect(JSON.stringify(await run)).toMatch(/TimeoutError/);
    expect(isRunning(pid)).toBe(true);
    expect(await waitFor(() => !isRunning(pid), 20_000), `pid ${pid} outlived the idle timeout`).toBe(true);
  }, 60_000);

  it('daemon: the child is gone after the server gets SIGTERM', async () => {
    const other = await startKeyedServer(root, { py: 'python' }, ['--toolsets', 'python']);
    const { pid } = await started('daemon', {}, other);
    await stopKeyedServers([other]);
    expect(await waitFor(() => !isRunning(pid), 10_000), `pid ${pid} outlived the server`).toBe(true);
  }, 60_000);
});

describe('attack 18b: a mock set directory swapped for a link out of the root while keploy_list_mocks (mocks:read) describes it', () => {
  let s: KeyedServer;
  let base: string;
  let root: string;
  const SECRET = 'OUTSIDE-SECRET-7f3a';

  beforeAll(async () => {
    base = tempDir('debugkit-attack18b-race-');
    root = path.join(base, 'root');
    mkdirSync(path.join(root, 'keploy', 'race'), { recursive: true });
    writeFileSync(path.join(root, 'keploy', 'race', 'mocks.yaml'), 'version: api.keploy.io/v1beta1\nkind: Generic\nname: mock-0\nspec:\n  metadata: {}\n');
    mkdirSync(path.join(base, 'outside'), { recursive: true });
    // A kind Keploy does not have: the error names it.
    writeFileSync(path.join(base, 'outside', 'mocks.yaml'), `version: api.keploy.io/v1beta1\nkind: ${SECRET}\nname: mock-0\nspec:\n  metadata: {}\n`);
    symlinkSync(path.join(base, 'outside'), path.join(root, 'keploy', 'race.swap'));
    for (const dir of [root, path.join(root, 'keploy'), path.join(root, 'keploy', 'race')]) chmodSync(dir, 0o777);
    s = await startKeyedServer(root, { reader: 'mocks:read', runner: 'mocks,mocks:run' }, ['--toolsets', 'mocks']);
  }, 60_000);
  afterAll(() => stopAttackServer(s, base));

  it('the judge sees a leak: the same file, inside the root, is listed with an error quoting it', async () => {
    mkdirSync(path.join(root, 'probe', 'bad'), { recursive: true });
    writeFileSync(path.join(root, 'probe', 'bad', 'mocks.yaml'), `version: api.keploy.io/v1beta1\nkind: ${SECRET}\nname: mock-0\nspec:\n  metadata: {}\n`);
    const r = await plainCall(s, s.keys.reader!.key, 'keploy_list_mocks', { path: 'probe' });
    expect(JSON.stringify(r)).toContain(SECRET);
  });

  it('400 listings while the directory is swapped: none describes the file outside', async () => {
    let example = '';
    const judge = (text: string): Outcome => (text.includes(SECRET) ? ((example ||= text), 'leak') : /"mockSets":\[[^\]]*"race"/.test(text) && !/'race' \(/.test(text) ? 'inside' : 'refused');
    const counts = await race(path.join(root, 'keploy', 'race'), path.join(root, 'keploy', 'race.swap'), 400, async () =>
      judge(JSON.stringify((await plainCall(s, s.keys.reader!.key, 'keploy_list_mocks', {})).result?.structuredContent ?? {})),
    );
    expect(counts.leak, `${JSON.stringify(counts)}; a leak: ${example.slice(0, 700)}`).toBe(0);
    expect(counts.inside, JSON.stringify(counts)).toBeGreaterThan(0);
  }, 300_000);

  it('100 keploy_mock_test loads of the set while its directory is swapped: none loads the file outside', async () => {
    let example = '';
    const judge = (text: string): Outcome => (text.includes(SECRET) ? ((example ||= text), 'leak') : /"success":true/.test(text) ? 'inside' : 'refused');
    const counts = await race(path.join(root, 'keploy', 'race'), path.join(root, 'keploy', 'race.swap'), 100, async () =>
      judge(JSON.stringify(await plainCall(s, s.keys.runner!.key, 'keploy_mock_test', { command: '/bin/true', mockName: 'race' }))),
    );
    expect(counts.leak, `${JSON.stringify(counts)}; a leak: ${example.slice(0, 700)}`).toBe(0);
    expect(counts.inside, JSON.stringify(counts)).toBeGreaterThan(0);
  }, 300_000);
});

describe('attack 18b: a program file of 3 GiB (sparse) in the root, copied on open (CheckedProgram.open, copyFileSync on the event loop)', () => {
  let s: KeyedServer;
  let root: string;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18b-big-');
    // A sparse file: 3 GiB long, no blocks on disk (a core or data file would do the same).
    writeFileSync(path.join(root, 'big.bin'), '');
    truncateSync(path.join(root, 'big.bin'), 3 * 1024 ** 3);
    // The same where other users can write: gdb is handed a private copy there (refused past 1 GiB).
    mkdirSync(path.join(root, 'shared'));
    chmodSync(path.join(root, 'shared'), 0o777);
    writeFileSync(path.join(root, 'shared', 'big.bin'), '');
    truncateSync(path.join(root, 'shared', 'big.bin'), 3 * 1024 ** 3);
    s = await startKeyedServer(root, { gdb: 'gdb', debugger: 'debugger', other: 'gdb:read' }, ['--toolsets', 'gdb,debugger']);
  }, 60_000);
  afterAll(() => stopAttackServer(s, root));

  for (const [tool, key, args] of [
    ['open', 'gdb', { program: 'big.bin' }],
    ['debugger_launch', 'debugger', { program: 'big.bin' }],
    ['open', 'gdb', { program: 'shared/big.bin' }],
    ['debugger_launch', 'debugger', { program: 'shared/big.bin' }],
  ] as const) {
    it(`${tool} {program: "${args.program}"} (a ${key} key) does not hold another key's ping`, async () => {
      const baseline = await idleBaseline(s, s.keys.other!.key);
      const call = track(plainCall(s, s.keys[key]!.key, tool, args));
      const { slowest } = await slowestPingWhile(s, s.keys.other!.key, call);
      const answer = await call.promise;
      const id = answer.result?.structuredContent?.content?.id ?? answer.result?.structuredContent?.session_id;
      if (typeof id === 'string') await plainCall(s, s.keys[key]!.key, tool === 'open' ? 'close' : 'debugger_detach', tool === 'open' ? { id } : { session_id: id });
      expect(slowest, `slowest ping ${slowest.toFixed(0)} ms, idle ${baseline.toFixed(1)} ms; answer: ${answerText(answer).slice(0, 300)}`).toBeLessThan(Math.max(500, 20 * baseline));
      expect(dropped.splice(0)).toEqual([]);
    }, 180_000);
  }
});
