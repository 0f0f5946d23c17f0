import { describe, expect, it } from 'vitest';
import { redactText } from '../core/secrets.js';
import {
  AuditKey,
  ChainVerifier,
  GENESIS,
  MAX_ITEMS,
  MAX_STRING,
  bodyOf,
  canonicalJson,
  chainHash,
  cleanTraceparent,
  entryKind,
  firstChangedEntry,
  redact,
  sha256Hex,
  storableText,
  storableValue,
  type AuditRecord,
} from './audit.js';

/** A chain of n entries; those from `keyedFrom` on are hashed with `key`. */
function chain(n: number, key?: AuditKey, keyedFrom = 1): AuditRecord[] {
  const out: AuditRecord[] = [];
  let prev = GENESIS;
  for (let seq = 1; seq <= n; seq++) {
    const body = {
      ts: new Date(1_700_000_000_000 + seq).toISOString(),
      event: 'call' as const,
      call_id: `c${seq}`,
      node: 'n',
      key_id: 'k',
      client: 'c',
      transport: 'http',
      session: null,
      debug_session: null,
      tool: 't',
      args: { i: seq },
      outcome: null,
      error: null,
      duration_ms: null,
      traceparent: null,
    };
    const digest = sha256Hex(canonicalJson(body));
    const hash = key && seq >= keyedFrom ? key.chainHash(prev, seq, digest) : chainHash(prev, seq, digest);
    out.push({ ...body, seq, prev_hash: prev, hash });
    prev = hash;
  }
  return out;
}

describe('canonical JSON', () => {
  it('sorts keys at every level and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[1,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
  });
});

describe('audit chain', () => {
  it('verifies an intact chain', () => {
    const v = new ChainVerifier();
    for (const r of chain(5)) v.add(r);
    expect(v.state()).toMatchObject({ ok: true, checked: 5 });
  });

  it('names the first changed entry', () => {
    const records = chain(5);
    records[2] = { ...records[2]!, args: { i: 99 } };
    const v = new ChainVerifier();
    for (const r of records) v.add(r);
    expect(v.state()).toMatchObject({ ok: false, first_broken: { seq: 3, reason: expect.stringMatching(/content was changed/) } });
  });

  it('names a gap and a re-hashed entry', () => {
    const records = chain(5);
    const gap = new ChainVerifier();
    for (const r of [...records.slice(0, 2), ...records.slice(3)]) gap.add(r);
    expect(gap.state().first_broken).toEqual({ seq: 4, reason: expect.stringMatching(/expected entry 3/) });
    // Rewriting entry 2 with a fresh hash breaks the link from entry 3.
    const forged = { ...records[1]!, tool: 'other' };
    forged.hash = chainHash(forged.prev_hash, 2, sha256Hex(canonicalJson(bodyOf(forged))));
    const v = new ChainVerifier();
    for (const r of [records[0]!, forged, ...records.slice(2)]) v.add(r);
    expect(v.state().first_broken?.seq).toBe(3);
  });
});

describe('redaction', () => {
  it('hides secrets by name and in text', () => {
    const out = redact({
      password: 'hunter2',
      apiKey: 'x',
      nested: { token: 't', keep: 'visible' },
      env: { DB_PASSWORD: 'p', HOME: '/root' },
      command: 'API_TOKEN=abc123 npm start --pass',
      header: 'Authorization: Bearer abcdefghijklmnop',
      url: 'postgres://u:secretpw@h/db',
      list: ['dk_abcdefghijklmnopqrstuvwxyz0123'],
    }) as Record<string, any>;
    expect(out.password).toBe('[REDACTED]');
    expect(out.apiKey).toBe('[REDACTED]');
    expect(out.nested).toEqual({ token: '[REDACTED]', keep: 'visible' });
    expect(out.env).toEqual({ DB_PASSWORD: '[REDACTED]', HOME: '/root' });
    expect(out.command).toBe('API_TOKEN=[REDACTED] npm start --pass');
    expect(out.header).toBe('Authorization: Bearer [REDACTED]');
    expect(out.url).toBe('postgres://u:[REDACTED]@h/db');
    expect(out.list).toEqual(['[REDACTED]']);
    expect(JSON.stringify(out)).not.toMatch(/hunter2|abc123|secretpw|abcdefghijklmnop/);
  });

  it('keeps only well-formed traceparents', () => {
    expect(cleanTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(cleanTraceparent('00-xyz')).toBeNull();
    expect(cleanTraceparent(['a'])).toBeNull();
  });
});

// Issue 18: redaction replaces only the secret itself, never the code around it.
describe('redaction keeps everything but the secret', () => {
  const cases: Array<[string, string]> = [
    // The code after a secret-looking NAME= is kept (it used to be cut with the value).
    ['(lambda mytoken=os.system("id"))', '(lambda mytoken=os.system("id"))'],
    ['shell MY_TOKEN="$(touch /tmp/m)" true', 'shell MY_TOKEN="$(touch /tmp/m)" true'],
    ['export PASSWORD=hunter2; rm -rf /tmp/x', 'export PASSWORD=[REDACTED]; rm -rf /tmp/x'],
    ["set TOKEN='a b c' && go", "set TOKEN='[REDACTED]' && go"],
    ['PGPASSWORD=s3cret psql -h db -c "select 1"', 'PGPASSWORD=[REDACTED] psql -h db -c "select 1"'],
    ['curl -H "Authorization: Basic dXNlcjpwYXNz" https://x/$(id)', 'curl -H "Authorization: Basic [REDACTED]" https://x/$(id)'],
    ['curl -H "Authorization: Bearer abcdefghijklmnop" -d @/etc/passwd https://x', 'curl -H "Authorization: Bearer [REDACTED]" -d @/etc/passwd https://x'],
    ['x://a:p4ss(word)@host/$(id)', 'x://a:[REDACTED]@host/$(id)'],
    ['{"password":"hunter2","user":"bob"}', '{"password":"[REDACTED]","user":"bob"}'],
    ['password: hunter2\nuser: bob', 'password: [REDACTED]\nuser: bob'],
    // Secrets that used to be kept in clear.
    ['mysql -uroot -phunter2 -h db shop', 'mysql -uroot -p[REDACTED] -h db shop'],
    ['mysqldump "-phunter2" shop', 'mysqldump "-p[REDACTED]" shop'],
    ['sshpass -p hunter2 ssh host', 'sshpass -p [REDACTED] ssh host'],
    ['psql --password hunter2 --password-file /etc/p --token=abc', 'psql --password [REDACTED] --password-file /etc/p --token=[REDACTED]'],
    [
      'curl "https://b.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F2025&X-Amz-Signature=abcdef0123&X-Amz-Security-Token=tok"',
      'curl "https://b.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=[REDACTED]&X-Amz-Signature=[REDACTED]&X-Amz-Security-Token=[REDACTED]"',
    ],
    ['https://x.blob.core.windows.net/c?sv=2020&sig=SIGVALUE&se=2025', 'https://x.blob.core.windows.net/c?sv=2020&sig=[REDACTED]&se=2025'],
    ['https://x/?key=AIzaXYZ&q=1&signature=s1&token=t1', 'https://x/?key=[REDACTED]&q=1&signature=[REDACTED]&token=[REDACTED]'],
    // Not secrets: kept as they are.
    ['gcc -pthread -o x x.c', 'gcc -pthread -o x x.c'],
    ['dict(key=value)', 'dict(key=value)'],
    ['if (token == x) y', 'if (token == x) y'],
    ['break token.c:12', 'break token.c:12'],
    ['a basic understanding of basic programs', 'a basic understanding of basic programs'],
  ];
  it.each(cases)('%s', (input, stored) => {
    expect(redactText(input)).toBe(stored);
  });

  it('keeps strings whole up to 64 KiB, and past it their length and SHA-256; arrays likewise', () => {
    const command = `shell true audit-pad${' '.repeat(2100)}; touch /tmp/marker`;
    expect(redact(command)).toBe(command); // was cut at 2,000 characters, losing what ran
    const whole = 'y'.repeat(MAX_STRING);
    expect(redact(whole)).toBe(whole);
    const long = `${'z'.repeat(MAX_STRING)}tail`;
    expect(redact(long)).toBe(`${'z'.repeat(MAX_STRING)}[cut: ${long.length} characters in all, sha256 ${sha256Hex(long)}]`);
    const items = Array.from({ length: 250 }, (_, i) => i);
    expect(redact(items)).toEqual(items); // was cut at 200 items
    const many = Array.from({ length: MAX_ITEMS + 5 }, (_, i) => i);
    const kept = redact(many) as unknown[];
    expect(kept.slice(0, MAX_ITEMS)).toEqual(many.slice(0, MAX_ITEMS));
    expect(kept[MAX_ITEMS]).toBe(`[cut: ${many.length} items in all, sha256 ${sha256Hex(JSON.stringify(many))}]`);
    expect(kept).toHaveLength(MAX_ITEMS + 1);
  });

  it('keeps an argument named __proto__ as an argument', () => {
    expect(canonicalJson(redact(JSON.parse('{"__proto__":{"password":"x","n":1}}')))).toBe('{"__proto__":{"n":1,"password":"[REDACTED]"}}');
  });

  it('is linear on adversarial text: 100,000 characters against each pattern in well under a second', () => {
    // The URL-credential pattern took ~14 s on 100,000 word characters (quadratic), holding the event loop.
    const n = 100_000;
    const inputs: Record<string, string> = {
      'word characters': 'a'.repeat(n),
      'scheme-like runs': 'a.'.repeat(n / 2),
      'URL starts': '://a:'.repeat(n / 5),
      'key starts': 'dk_-'.repeat(n / 4),
      'NAME= runs': 'TOKEN='.repeat(n / 6),
      'long NAME before =': `${'TOKEN'.repeat(n / 5)}=x`,
      'unclosed quotes': 'token="'.repeat(n / 7) + "token='".repeat(n / 7),
      'scheme words': 'Bearer '.repeat(n / 7),
      'long credentials': `Bearer ${'a'.repeat(n)}====`,
      flags: '--password '.repeat(n / 11),
      '-p after mysql': `mysql ${' -pa'.repeat(n / 4)}`,
      headers: 'Authorization: Bearer '.repeat(n / 22),
    };
    for (const [what, text] of Object.entries(inputs)) {
      const started = performance.now();
      redact({ a: text, c: { [text.slice(0, 300)]: text } });
      const ms = performance.now() - started;
      expect(ms, `${what}: ${Math.round(ms)} ms`).toBeLessThan(1000);
    }
  });
});

// Attack 18b, finding F4: secrets in common spellings were stored verbatim. Each is hidden now, and
// the code around it is kept.
describe('redaction of secrets in common spellings (attack 18b, finding F4)', () => {
  const cases: Array<[string, string]> = [
    // NAME = value, with blanks (code, config files); := (Go, Python).
    ['m; password = "hunter2"; connect()', 'm; password = "[REDACTED]"; connect()'],
    ['psycopg2.connect(host="db", password = "hunter2", port=5432)', 'psycopg2.connect(host="db", password = "[REDACTED]", port=5432)'],
    ["password = 'hunter2'\nprint(password)", "password = '[REDACTED]'\nprint(password)"],
    ['password = f"hunter2"', 'password = f"[REDACTED]"'],
    ['password := "hunter2"', 'password := "[REDACTED]"'],
    ['PASSWORD = hunter2\nUSER = bob', 'PASSWORD = [REDACTED]\nUSER = bob'],
    ['[default]\naws_access_key_id = AKIAX\naws_secret_access_key = wJalr/K7MDENG+bPxR\n', '[default]\naws_access_key_id = AKIAX\naws_secret_access_key = [REDACTED]\n'],
    ['open("c","w").write("aws_secret_access_key = s3cr3t")', 'open("c","w").write("aws_secret_access_key = [REDACTED]")'],
    // A quoted or bracketed name, then = or :.
    ['os.environ["PGPASSWORD"] = "hunter2"; os.system("psql")', 'os.environ["PGPASSWORD"] = "[REDACTED]"; os.system("psql")'],
    ["config['api_key']='abc123'", "config['api_key']='[REDACTED]'"],
    ['{"password" : "hunter2", "user" : "bob"}', '{"password" : "[REDACTED]", "user" : "bob"}'],
    // curl's -u/--user user:PASSWORD (the user kept).
    ['shell curl -u alice:hunter2 https://x/ -o out', 'shell curl -u alice:[REDACTED] https://x/ -o out'],
    ['shell curl --user alice:hunter2 https://x/', 'shell curl --user alice:[REDACTED] https://x/'],
    ['curl -ualice:hunter2 -U proxy:pw2 https://x/', 'curl -ualice:[REDACTED] -U proxy:[REDACTED] https://x/'],
    ['curl --user-agent "x y" -u "alice:hunter2" https://x/', 'curl --user-agent "x y" -u "alice:[REDACTED]" https://x/'],
    // redis-cli -a, docker/podman login -p.
    ['shell redis-cli -a hunter2 ping; ls -a /tmp', 'shell redis-cli -a [REDACTED] ping; ls -a /tmp'],
    ['shell docker login -u alice -p hunter2 registry.invalid', 'shell docker login -u alice -p [REDACTED] registry.invalid'],
    ['podman.exe login --username alice -phunter2 quay.io', 'podman.exe login --username alice -p[REDACTED] quay.io'],
    // URL userinfo up to the last @ before the host.
    ['psql postgres://u:pa/ss@h/db', 'psql postgres://u:[REDACTED]@h/db'],
    ['redis://:p@ss@cache:6379/0', 'redis://:[REDACTED]@cache:6379/0'],
    ['connect("postgres://u:pw@h/db", email="a@b.c")', 'connect("postgres://u:[REDACTED]@h/db", email="a@b.c")'],
    // Digest's response=.
    ['Authorization: Digest username=u, response=X', 'Authorization: Digest username=u, response=[REDACTED]'],
    [
      'curl -H \'Authorization: Digest username="u", realm="r", nonce="n", uri="/", response="6629fae49393a053", opaque="o"\' https://x/',
      'curl -H \'Authorization: Digest username="u", realm="r", nonce="n", uri="/", response="[REDACTED]", opaque="o"\' https://x/',
    ],
    // Program names in any case, with .exe, with a path.
    ['mysql.exe -pX', 'mysql.exe -p[REDACTED]'],
    ['MySQL -pX', 'MySQL -p[REDACTED]'],
    ['C:\\mysql\\bin\\MYSQLDUMP.EXE -uroot -phunter2 shop', 'C:\\mysql\\bin\\MYSQLDUMP.EXE -uroot -p[REDACTED] shop'],
    ['docker exec db mysql -uroot -phunter2 shop', 'docker exec db mysql -uroot -p[REDACTED] shop'],
    // Kept: code, and what only looks like those spellings.
    ['token = os.system\ntoken("id")', 'token = os.system\ntoken("id")'],
    ['password = getpass.getpass(); token = None', 'password = getpass.getpass(); token = None'],
    ['os.environ["PGPASSWORD"] = os.environ["X"]', 'os.environ["PGPASSWORD"] = os.environ["X"]'],
    ['PASSWORD= ./run --fast', 'PASSWORD= ./run --fast'],
    ['print(f"token = {token}")', 'print(f"token = {token}")'],
    ['if token == "x" or password != y: pass', 'if token == "x" or password != y: pass'],
    ['mysql -pX; gcc -pthread -o x x.c', 'mysql -p[REDACTED]; gcc -pthread -o x x.c'],
    ['docker run -p 8080:80 -u 1000:1000 img', 'docker run -p 8080:80 -u 1000:1000 img'],
    ['curl -u alice https://x/', 'curl -u alice https://x/'],
    ['https://registry.npmjs.org:443/@scope/pkg', 'https://registry.npmjs.org:443/@scope/pkg'],
    ['http://[::1]:8080/x@y', 'http://[::1]:8080/x@y'],
    ['the digest of response=ok', 'the digest of response=ok'],
  ];
  it.each(cases)('%s', (input, stored) => {
    expect(redactText(input)).toBe(stored);
  });
});

// Issue 18: one lone surrogate made verify report BROKEN forever (the store kept U+FFFD, the hash was over the original).
describe('storable text', () => {
  it('writes lone surrogates and NUL as their escapes, keeps pairs and U+FFFD, everywhere in a value', () => {
    expect(storableText('a\ud800b\udc00c\u0000d')).toBe('a\\ud800b\\udc00c\\u0000d');
    expect(storableText('pair \ud83d\ude00 ok \ufffd')).toBe('pair \ud83d\ude00 ok \ufffd');
    expect(storableText('x\ud800')).toBe('x\\ud800');
    expect(storableText('\ude00\ud83d')).toBe('\\ude00\\ud83d');
    expect(canonicalJson(storableValue({ 'k\udfff': ['v\ud800', 1, null] }))).toBe('{"k\\\\udfff":["v\\\\ud800",1,null]}');
  });

  // Attack r2-1: code a debugger ran was stored with NUL and U+FFFD alike, so a test that was false read as one that could only be true.
  it('keeps code that differs only by NUL, a lone surrogate or U+FFFD different when stored', () => {
    const ran = ['["\uFFFD"].includes("\u0000") ? "not run" : run()', '"\u0000" === "\uFFFD" || run()', '({"\udc80": "run()", "\udc81": "true"})'];
    for (const code of ran) {
      const stored = storableText(code);
      expect(stored, code).not.toMatch(/\uFFFD.*\uFFFD|\\udc80.*\\udc80/);
    }
    expect(storableText(ran[0]!)).toBe('["\uFFFD"].includes("\\u0000") ? "not run" : run()');
  });

  // Attack r2-2: two names that read alike once stored kept one value, the other dropped with nothing said.
  it('numbers names that read alike once stored, whichever comes first', () => {
    expect(storableValue({ 'A\udc80': 'first', 'A\udc81': 'second' })).toEqual({ 'A\\udc80': 'first', 'A\\udc81': 'second' });
    expect(storableValue({ 'Y\u0000': 'v', 'Y\\u0000': 'w' })).toEqual({ 'Y\\u0000': 'v', 'Y\\u0000 (2)': 'w' });
    expect(storableValue({ 'Y\\u0000': 'w', 'Y\u0000': 'v' })).toEqual({ 'Y\\u0000': 'w', 'Y\\u0000 (2)': 'v' });
  });
});

// Issue 18: nothing anchored the head; re-hashing after a change verified OK.
describe('the keyed chain and checkpoints', () => {
  const key = AuditKey.generate().key;

  it('verifies keyed entries, and entries written before the key as unkeyed up to where keying starts', () => {
    const v = new ChainVerifier(undefined, { key });
    for (const r of chain(6, key, 4)) v.add(r);
    expect(v.state()).toMatchObject({ ok: true, checked: 6, keyed_from: 4 });
    const all = new ChainVerifier(undefined, { key });
    for (const r of chain(3, key)) all.add(r);
    expect(all.state()).toMatchObject({ ok: true, keyed_from: 1 });
  });

  it('an entry re-hashed without the key after keyed ones is reported', () => {
    const records = chain(5, key);
    // Whoever can write the database but not read the key rewrites entry 3 and re-hashes the rest.
    let prev = records[1]!.hash;
    for (const r of records.slice(2)) {
      if (r.seq === 3) r.tool = 'forged';
      r.prev_hash = prev;
      r.hash = chainHash(prev, r.seq, sha256Hex(canonicalJson(bodyOf(r))));
      prev = r.hash;
    }
    const v = new ChainVerifier(undefined, { key });
    for (const r of records) v.add(r);
    expect(v.state()).toMatchObject({ ok: false, first_broken: { seq: 3, reason: expect.stringMatching(/hashed without the audit key.*re-hashed/) } });
    expect(firstChangedEntry(records, key, 1)).toMatchObject({ seq: 3 });
    // Without the key, a keyed entry cannot be told from a changed one, and says so.
    const blind = new ChainVerifier();
    blind.add(chain(1, key)[0]!);
    expect(blind.state().first_broken?.reason).toMatch(/no audit key was given/);
    expect(entryKind(chain(1, key)[0]!, key)).toBe('keyed');
  });

  it('a checkpoint past the head is truncation; one with another hash is a rewrite', () => {
    const records = chain(5, key);
    const cp = { seq: 5, hash: records[4]!.hash, source: 'the test' };
    const cut = new ChainVerifier(undefined, { key, checkpoints: [cp] });
    for (const r of records.slice(0, 3)) cut.add(r);
    expect(cut.state()).toMatchObject({ ok: false, first_broken: { seq: 4, reason: expect.stringMatching(/ends at entry 3, but the checkpoint in the test names entry 5/) } });
    const empty = new ChainVerifier(undefined, { key, checkpoints: [cp] });
    expect(empty.state()).toMatchObject({ ok: false, first_broken: { seq: 1, reason: expect.stringMatching(/is empty/) } });
    // A whole chain re-made without the key from entry 1 (no keyed entry left to betray it): the checkpoint does.
    const remade = chain(5);
    const rewritten = new ChainVerifier(undefined, { key, checkpoints: [cp] });
    for (const r of remade) rewritten.add(r);
    expect(rewritten.state()).toMatchObject({ ok: false, first_broken: { seq: 5, reason: expect.stringMatching(/another hash/) } });
    const fine = new ChainVerifier(undefined, { key, checkpoints: [cp] });
    for (const r of records) fine.add(r);
    expect(fine.state()).toMatchObject({ ok: true, checkpoints: [{ seq: 5, source: 'the test' }] });
  });
});
