// Attack a1 A4: the audit kept secrets in clear in argv and call text of shapes the rules did not
// know: openssl's `-pass pass:X`, `aws configure set aws_secret_access_key X`, gdb's
// `call setenv("DB_PASSWORD", "X", 1)`, a URL's bare token as its user (`https://TOKEN@host`),
// `htpasswd -b FILE USER PW`, Python's `auth=("u", "PW")` and `HTTPBasicAuth("u", "PW")`, and an
// object's key `pwd`. Each is now hidden, its neighbours kept; what only names these stays.
import { describe, expect, it } from 'vitest';
import { redact, redactWords } from './audit.js';
import { REDACTED, argvSecretWords, redactText } from '../core/secrets.js';

const R = REDACTED;
/** Text the audit must keep as it is. */
const keptAsIs = (texts: readonly string[]) => {
  for (const text of texts) expect(redactText(text)).toBe(text);
};

describe('attack a1 A4: secrets in argv and call text', () => {
  it("openssl's pass:PASSWORD after -pass, -passin, -passout and -password is hidden; env:, file:, fd: and stdin are kept", () => {
    expect(redactWords(['enc', '-pass', 'pass:hunter2', '-passin', 'pass:hunter3'])).toEqual(['enc', '-pass', `pass:${R}`, '-passin', `pass:${R}`]);
    expect(redact({ program: 'openssl', args: ['pkcs12', '-export', '-passout', 'pass:hunter4', '-in', 'c.pem'] })).toEqual({
      program: 'openssl',
      args: ['pkcs12', '-export', '-passout', `pass:${R}`, '-in', 'c.pem'],
    });
    expect(redactText('openssl rsa -in k.pem -passin pass:hunter5 -out x.pem')).toBe(`openssl rsa -in k.pem -passin pass:${R} -out x.pem`);
    expect(redactText("openssl pkcs12 -password 'pass:hunter 6' -in c.p12")).toBe(`openssl pkcs12 -password 'pass:${R}' -in c.p12`);
    expect(redactText('openssl enc -aes256 -passin=pass:hunter7 -in f')).toBe(`openssl enc -aes256 -passin=pass:${R} -in f`);
    // Where the password is, not the password: kept.
    const where = ['enc', '-pass', 'env:DB_PASS', '-passin', 'file:/run/pw.txt', '-passout', 'fd:3', '-pass', 'stdin'];
    expect(redactWords(where)).toEqual(where);
    expect(redactText('openssl req -passin env:KEY_PW -passout file:pw.txt')).toBe('openssl req -passin env:KEY_PW -passout file:pw.txt');
    // A word `pass:` with no option before it (a test's tally) is not a password.
    expect(redactText('tests pass:12 fail:0')).toBe('tests pass:12 fail:0');
  });

  it('aws configure set (and npm config set) of a secret-looking setting hides its value; other settings and credential_process are kept', () => {
    expect(redactText('aws configure set aws_secret_access_key hunter4')).toBe(`aws configure set aws_secret_access_key ${R}`);
    expect(redactText('aws configure set profile.dev.aws_secret_access_key "hunter6" && aws s3 ls')).toBe(`aws configure set profile.dev.aws_secret_access_key "${R}" && aws s3 ls`);
    expect(redactText("sh -c 'aws configure set aws_session_token hunter5 --profile dev'")).toBe(`sh -c 'aws configure set aws_session_token ${R} --profile dev'`);
    expect(redactText('npm config set //registry.npmjs.org/:_authToken hunter7')).toBe(`npm config set //registry.npmjs.org/:_authToken ${R}`);
    // argv: the words that are secrets by their place (the audit's redactWords hides them whole).
    expect([...argvSecretWords(['aws', 'configure', 'set', 'aws_secret_access_key', 'hunter4'])]).toEqual([4]);
    expect([...argvSecretWords(['configure', 'set', 'aws_session_token', 'hunter 5', '--profile', 'dev'])]).toEqual([3]);
    for (const kept of [
      ['aws', 'configure', 'set', 'region', 'eu-west-1'],
      // A program that is run, not a secret: the audit must show it.
      ['aws', 'configure', 'set', 'credential_process', '/usr/local/bin/creds'],
      ['git', 'config', 'set', 'credential.helper', 'store'],
    ]) {
      expect(redactWords(kept)).toEqual(kept);
      expect(redactText(kept.join(' '))).toBe(kept.join(' '));
      expect(argvSecretWords(kept).size).toBe(0);
    }
  });

  it("a call that sets a secret-looking name (setenv, putenv, setItem, ...) hides the value's string, the call kept", () => {
    expect(redactText('call (int)setenv("DB_PASSWORD", "hunter5", 1)')).toBe(`call (int)setenv("DB_PASSWORD", "${R}", 1)`);
    expect(redactText('call setenv("DB_PASSWORD","hunter5",1)')).toBe(`call setenv("DB_PASSWORD","${R}",1)`);
    expect(redactText('call putenv("DB_PASSWORD=hunter5")')).toBe(`call putenv("DB_PASSWORD=${R}")`);
    expect(redactText('call (int)_wputenv_s(L"API_KEY", L"hunter8") + g_setenv("GH_TOKEN", "hunter9", 1)')).toBe(`call (int)_wputenv_s(L"API_KEY", L"${R}") + g_setenv("GH_TOKEN", "${R}", 1)`);
    expect(redactText("os.putenv('API_TOKEN', 'hunter6'); localStorage.setItem('token', 'hunter7')")).toBe(`os.putenv('API_TOKEN', '${R}'); localStorage.setItem('token', '${R}')`);
    expect(redact({ command: 'call (int)setenv("DB_PASSWORD", "hunter5", 1)', id: 's1' })).toEqual({
      command: `call (int)setenv("DB_PASSWORD", "${R}", 1)`,
      id: 's1',
    });
    // The value is code (a call), a name that is no secret, or a call that only reads: kept.
    keptAsIs([
      'call setenv("DB_PASSWORD", getenv("OTHER"), 1)',
      'call setenv("DB_HOST", "db.internal", 1)',
      'print getenv("DB_PASSWORD")',
      'call setenv("DB_PASSWORD", p, 1)',
      'print("password", "is wrong")',
      'pw = input("password", "Enter it"); output("token", "expired"); reset("secret", "all")',
    ]);
  });

  it("a URL's user that is a token (long, or letters and digits mixed) is hidden; a plain user name is kept", () => {
    expect(redactWords(['git', 'clone', 'https://a1b2c3d4e5f6a7b8c9d0e1f2@github.com/org/repo.git'])).toEqual(['git', 'clone', `https://${R}@github.com/org/repo.git`]);
    expect(redactText('git clone https://Zk8qT3mV9xLp2NwR@git.example.com/r.git x')).toBe(`git clone https://${R}@git.example.com/r.git x`);
    expect(redactText('curl https://abcdefghijklmnopqrstuvwxyz@host/x?y=1')).toBe(`curl https://${R}@host/x?y=1`);
    keptAsIs([
      'git clone ssh://git@github.com/org/repo.git',
      'git clone https://oauth2@gitlab.com/g/r.git',
      'git clone https://x-access-token@github.com/o/r',
      'curl https://user@example.com/a',
      'curl https://user1@example.com/a',
      'curl https://john.doe%40example.com@example.com/a',
      'see https://example.com/a@b and mailto:someone@example.com',
      'scp git@github.com:org/repo.git .',
    ]);
  });

  it('htpasswd -b (and -bc, -nb, -Bb) hides the password, its last word; without -b nothing is hidden', () => {
    expect(redactText('htpasswd -b /etc/nginx/.htpasswd admin hunter2')).toBe(`htpasswd -b /etc/nginx/.htpasswd admin ${R}`);
    expect(redactText('/usr/bin/htpasswd -bB htpasswd admin hunter2; cat htpasswd')).toBe(`/usr/bin/htpasswd -bB htpasswd admin ${R}; cat htpasswd`);
    // Joined argv: a word of blanks reads as several; all from the password's place on are hidden.
    expect(redactText('htpasswd -b f admin hunter two')).toBe(`htpasswd -b f admin ${R}`);
    expect([...argvSecretWords(['htpasswd', '-b', '/etc/nginx/.htpasswd', 'admin', 'hunter 2'])]).toEqual([4]);
    expect([...argvSecretWords(['sudo', '/usr/sbin/htpasswd', '-nbB', '-C', '10', 'admin', 'hunter2'])]).toEqual([6]);
    expect(argvSecretWords(['htpasswd', '-c', '.htpasswd', 'admin']).size).toBe(0);
    expect(redactText('htpasswd -bc .htpasswd admin hunter2 && nginx -s reload')).toBe(`htpasswd -bc .htpasswd admin ${R} && nginx -s reload`);
    expect(redactText("htpasswd -nb admin 'hunter 2' > out")).toBe(`htpasswd -nb admin '${R}' > out`);
    expect(redactText('sudo htpasswd -B -C 12 -b f admin hunter2')).toBe(`sudo htpasswd -B -C 12 -b f admin ${R}`);
    keptAsIs(['htpasswd -c .htpasswd admin', 'htpasswd -n admin', 'htpasswd -b', 'htpasswd -D .htpasswd admin']);
  });

  it("requests' auth=(user, PASSWORD) and HTTPBasicAuth(user, PASSWORD) hide the password, the user kept", () => {
    expect(redactText('requests.get(url, auth=("admin","hunter2"))')).toBe(`requests.get(url, auth=("admin","${R}"))`);
    expect(redactText("r = requests.post(u, auth = ('admin', 'hunter2'), timeout=3)")).toBe(`r = requests.post(u, auth = ('admin', '${R}'), timeout=3)`);
    expect(redactText('s.auth = HTTPBasicAuth("admin", "hunter2")')).toBe(`s.auth = HTTPBasicAuth("admin", "${R}")`);
    expect(redactText('requests.get(u, auth=HTTPDigestAuth("admin", "hunter2"))')).toBe(`requests.get(u, auth=HTTPDigestAuth("admin", "${R}"))`);
    expect(redactText('Elasticsearch(h, basic_auth=["elastic", "hunter2"])')).toBe(`Elasticsearch(h, basic_auth=["elastic", "${R}"])`);
    keptAsIs(['requests.get(url, auth=("admin", os.environ["PW"]))', 'requests.get(url, auth=auth)', 'auth=(a, b)']);
  });

  it('a key named pwd is a secret; the pwd command is not', () => {
    expect(redact({ pwd: 'hunter2', user: 'admin' })).toEqual({ pwd: R, user: 'admin' });
    expect(redactText('{"user": "admin", "pwd": "hunter2"}')).toBe(`{"user": "admin", "pwd": "${R}"}`);
    expect(redactText("login({'pwd': 'hunter2'})")).toBe(`login({'pwd': '${R}'})`);
    expect(redactText('curl "https://h/login?user=a&pwd=hunter2"')).toBe(`curl "https://h/login?user=a&pwd=${R}"`);
    expect(redactText('pyodbc.connect("DRIVER={ODBC Driver 18};SERVER=db;UID=sa;PWD=hunter2")')).toBe(`pyodbc.connect("DRIVER={ODBC Driver 18};SERVER=db;UID=sa;PWD=${R}")`);
    expect(redactText("const c = {user: 'admin', pwd: 'hunter2'}")).toBe(`const c = {user: 'admin', pwd: '${R}'}`);
    keptAsIs(['cd /tmp && pwd', 'pwd; ls -l', 'echo $(pwd)/x', 'PWD=/home/u make', 'pwd: /home/u/build']);
    expect(redactWords(['sh', '-c', 'pwd'])).toEqual(['sh', '-c', 'pwd']);
    // Whole keys pass and passwd were already secrets; kept so.
    expect(redact({ pass: 'x', passwd: 'y' })).toEqual({ pass: R, passwd: R });
  });
});
