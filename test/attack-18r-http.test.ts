// Attack 18r K2, through the real server: an Http set whose answer is a gzip-of-gzip bomb, and one whose
// answer is stored decoded under `Content-Encoding: br`, replayed to a program that accepts gzip and br
// (held the loop 18.7 s and reached 4 GB; 6.2 s per answer of 4 MiB). K1 (recording) is src/toolsets/mocks/http/encoding.test.ts.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import zlib from 'node:zlib';
import { MB, replayAttacks } from './helpers/replay-attack.js';

/** One Http mock for GET /x whose response is `body` (a YAML scalar) under `Content-Encoding: encoding`. */
const httpYaml = (encoding: string, body: string) =>
  [
    'version: api.keploy.io/v1beta1',
    'kind: Http',
    'name: mock-0',
    'spec:',
    '    metadata: {host: "127.0.0.1:18080", name: Http, operation: GET, type: HTTP_CLIENT}',
    '    req: {method: GET, proto_major: 1, proto_minor: 1, url: "http://127.0.0.1:18080/x", header: {}, body: ""}',
    '    resp:',
    '        status_code: 200',
    `        header: {Content-Encoding: "${encoding}", Content-Type: text/plain}`,
    `        body: ${body}`,
    '    created: 0',
    '',
  ].join('\n');

/** A gzip of concatenated gzip members: a few KB that inflate to 1.1 GiB. */
const bomb = () => zlib.gzipSync(Buffer.concat(Array<Buffer>(1100).fill(zlib.gzipSync(Buffer.alloc(MB, 'a')))), { level: 9 });
const letters = (n: number) =>
  randomBytes(n)
    .map((b) => 97 + (b % 26))
    .toString();

/** A program that GETs /x `n` times, one connection each, accepting gzip and br, and reads every answer whole. */
const GETS = `import socket, sys
n = int(sys.argv[1]); ok = 0
for i in range(n):
    s = socket.create_connection(("127.0.0.1", 18080), timeout=600)
    s.sendall(b"GET /x HTTP/1.1\\r\\nHost: 127.0.0.1:18080\\r\\nAccept-Encoding: gzip, br\\r\\nConnection: close\\r\\n\\r\\n")
    ok += s.makefile("rb").read().startswith(b"HTTP/1.1 200")
print("answers", ok)
sys.exit(0 if ok == n else 3)
`;

replayAttacks(
  'attack 18r: Http replay of compressed answers (a bomb inflated to check it, brotli quality 11 on the loop)',
  'debugkit-attack18r-http-',
  {
    small: (f) => writeFileSync(f, httpYaml('br', JSON.stringify(letters(1024)))),
    bomb: (f) => writeFileSync(f, httpYaml('gzip, gzip', `!!binary ${bomb().toString('base64')}`)),
    br: (f) => writeFileSync(f, httpYaml('br', JSON.stringify(letters(4 * MB)))),
  },
  [
    { what: 'control: a 1 KB answer compressed with br, 3 times', set: 'small', program: GETS, args: '3', counted: /"mocksReplayed":3,"mocksMissed":0,"appExitCode":0/ },
    { what: 'a gzip-of-gzip bomb answered twice', set: 'bomb', program: GETS, args: '2', counted: /"mocksReplayed":2,"mocksMissed":0,"appExitCode":0/, rssGrowthMiB: 200 },
    { what: 'a 4 MiB answer compressed with br, 3 times', set: 'br', program: GETS, args: '3', counted: /"mocksReplayed":3,"mocksMissed":0,"appExitCode":0/ },
  ],
);
