// The replay attacks of attack 18e (test/attack-18e.test.ts, test/attack-18e-found.test.ts): a
// set written into a mocks workspace, a program `keploy_mock_test` runs against it as a `mocks:run`
// key, and another key's pings (and the server's memory) meanwhile.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerText, dropped, idleBaseline, plainCall, slowestPingWhile, startKeyedServer, stopAttackServer, type KeyedServer } from './attack.js';
import { mocksWorkspace } from './programs.js';
import { track } from './stall.js';

/** A Keploy mock of `kind` whose request is `request` and response `response` (YAML double-quoted escapes). */
export const mockYaml = (kind: 'Redis' | 'Generic', i: number, request: string, response: string): string => {
  const field = kind === 'Redis' ? 'redis' : 'generic';
  return (
    `version: api.keploy.io/v1beta1\nkind: ${kind}\nname: mock-${i}\nspec:\n    metadata:\n        type: config\n` +
    `    ${field}requests:\n        - origin: client\n          message:\n            - type: string\n              data: "${request}"\n` +
    `    ${field}responses:\n        - origin: server\n          message:\n            - type: string\n              data: "${response}"\n` +
    `    reqtimestampmock: 2024-08-02T22:15:10.6084523Z\n    restimestampmock: 2024-08-02T22:15:10.608930466Z\n---\n`
  );
};

/** One replay attack: a set, a Python program run by `keploy_mock_test`, and what its report must say. */
export interface ReplayAttack {
  what: string;
  set: string;
  program: string;
  args?: string;
  counted: RegExp;
  /** Also: the server's resident memory may grow by at most this many MiB during the call. */
  rssGrowthMiB?: number;
}

/** The server's resident memory, in MiB (VmRSS); 0 once it has exited. */
export function rssMiB(s: KeyedServer): number {
  let status: string;
  try {
    status = readFileSync(`/proc/${s.node.proc.pid}/status`, 'utf8');
  } catch {
    return 0;
  }
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
}

/** Runs each attack as a `mocks:run` key while a `mocks:read` key pings; the slowest ping must stay under 500 ms (or 20x idle). */
export function replayAttacks(title: string, prefix: string, sets: Record<string, (file: string) => void>, attacks: ReplayAttack[]): void {
  describe(title, () => {
    let s: KeyedServer;
    let root: string;

    beforeAll(async () => {
      root = mocksWorkspace(prefix);
      for (const [name, write] of Object.entries(sets)) {
        mkdirSync(path.join(root, 'keploy', name), { recursive: true });
        write(path.join(root, 'keploy', name, 'mocks.yaml'));
      }
      for (const [i, a] of attacks.entries()) writeFileSync(path.join(root, `attack${i}.py`), a.program);
      s = await startKeyedServer(root, { attacker: 'mocks,mocks:run', other: 'mocks:read' }, ['--toolsets', 'mocks']);
    }, 120_000);
    afterAll(() => stopAttackServer(s, root));

    for (const [i, a] of attacks.entries()) {
      it(`${a.what}: another key's ping is not held`, async () => {
        const baseline = await idleBaseline(s, s.keys.other!.key);
        const t = performance.now();
        const replay = track(plainCall(s, s.keys.attacker!.key, 'keploy_mock_test', { command: `/usr/bin/python3 attack${i}.py ${a.args ?? ''}`.trim(), mockName: a.set, timeout: 600 }));
        const rssBefore = rssMiB(s);
        let rssMax = rssBefore;
        const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMiB(s))), 20);
        let slowest: number, count: number, answer: Awaited<typeof replay.promise>;
        try {
          ({ slowest, count } = await slowestPingWhile(s, s.keys.other!.key, replay));
          answer = await replay.promise;
        } finally {
          // Never left sampling a server that is gone (a failed call stops it).
          clearInterval(sampler);
        }
        const took = performance.now() - t;
        const text = answerText(answer, { structured: true });
        expect(a.counted.test(text), `the program ran as meant: ${text.slice(0, 600)} ... ${text.slice(-1200)}`).toBe(true);
        expect(slowest, `slowest of ${count} pings ${slowest.toFixed(0)} ms, idle ${baseline.toFixed(1)} ms, call ${took.toFixed(0)} ms; answer: ${text.slice(0, 400)}`).toBeLessThan(
          Math.max(500, 20 * baseline),
        );
        expect(dropped.splice(0), 'pings the server dropped meanwhile').toEqual([]);
        if (a.rssGrowthMiB !== undefined) expect(rssMax - rssBefore, `the server's RSS grew from ${rssBefore} MiB to ${rssMax} MiB`).toBeLessThan(a.rssGrowthMiB);
      }, 900_000);
    }
  });
}

export const bulk = (s: string) => `$${s.length}\\r\\n${s}\\r\\n`;
export const redisCommand = (...words: string[]) => `*${words.length}\\r\\n${words.map(bulk).join('')}`;

/** A Keploy gRPC mock whose request and response messages are `decoded` (protoscope text, one line). */
export const grpcYaml = (i: number, decoded: string) => {
  const body = ['        body:', '            compression_flag: 0', '            message_length: 0', '            decoded_data: |', `                ${decoded}`];
  return [
    'version: api.keploy.io/v1beta1',
    'kind: gRPC',
    `name: mock-${i}`,
    'spec:',
    '    metadata: {}',
    '    grpcReq:',
    '        headers:',
    '            pseudo_headers:',
    '                :authority: localhost:50051',
    '                :method: POST',
    `                :path: /shop.Greeter/M${i}`,
    '                :scheme: http',
    '            ordinary_headers:',
    '                content-type: application/grpc',
    ...body,
    '        timestamp: 0001-01-01T00:00:00Z',
    '    grpcResp:',
    '        headers:',
    '            pseudo_headers:',
    '                :status: "200"',
    '            ordinary_headers:',
    '                content-type: application/grpc',
    ...body,
    '        trailers:',
    '            pseudo_headers: {}',
    '            ordinary_headers:',
    '                grpc-status: "0"',
    '        timestamp: 0001-01-01T00:00:00Z',
    '    created: 0',
    '---',
    '',
  ].join('\n');
};

export const MB = 1 << 20;
