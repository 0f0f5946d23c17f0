import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { parseMockSet } from '../keploy/parse.js';
import { PARSE_MAX_BYTES } from '../keploy/scan.js';
import { serializeMockSet } from '../keploy/serialize.js';
import { MockStore } from '../keploy/store.js';
import type { GenericMock, GenericPayload, Mock, RedisMock } from '../keploy/types.js';
import { toRedisMock } from '../redis/keploy.js';
import { encodeCommand } from '../redis/wire.js';
import { QUOTED_STRING_MAX } from '../keploy/emit.js';
import { BINARY_TYPE, buildGenericMock, payloadBytes, STRING_TYPE } from './keploy.js';

/**
 * Attack 18r J2: a recording of about 31 MiB of Redis commands (and HTTP/1 recorded as Generic)
 * was written as `type: string`, double-quoted YAML scalars full of `\r\n`. Reading it back (the
 * write job's check, on the mock-set thread capped at 768 MB) took the `yaml` package about 34
 * bytes of heap per byte (it decodes double quotes one character at a time): 1 GB and 13 s, so
 * the set was "not written". Such data past QUOTED_STRING_MAX is written as `!!binary` base64 now
 * (emit.ts): the set reads back at the cost of its all-base64 form, and replays the same bytes.
 */

const started = new Date('2026-01-02T03:04:05.000Z');

/** HTTP/1 as a client sends it: `\r\n` everywhere, a body of `size` bytes. */
function http1Request(i: number, size: number): Buffer {
  const body = `{"id":${i},"text":"${'x'.repeat(size)}"}`;
  return Buffer.from(`POST /items/${i} HTTP/1.1\r\nHost: api.local\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
}

function http1Response(i: number, size: number): Buffer {
  const body = `{"ok":true,"id":${i},"echo":"${'y'.repeat(size)}"}\r\n`;
  return Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
}

/** About 21 MiB of bytes, about 29 MiB of YAML: Redis SETs of 1 MB (each under the 1 MiB an exchange may have) and 5,000 HTTP/1 exchanges as Generic. */
function crlfMocks(): { mocks: Mock[]; bytes: Array<{ request: Buffer; response: Buffer }> } {
  const mocks: Mock[] = [];
  const bytes: Array<{ request: Buffer; response: Buffer }> = [];
  for (let i = 0; i < 10; i++) {
    const value = Buffer.from(`line ${i}\r\n`.repeat(100_000).slice(0, 1_000_000));
    const request = encodeCommand([Buffer.from('SET'), Buffer.from(`key:${i}`), value]);
    const response = Buffer.from('+OK\r\n');
    mocks.push(toRedisMock(request, response, started, started, '127.0.0.1:6379', `conn-r${i}`));
    bytes.push({ request, response });
  }
  for (let i = 0; i < 5000; i++) {
    const request = http1Request(i, 600);
    const response = http1Response(i, 1500);
    mocks.push(buildGenericMock({ request, response, startedAt: started, endedAt: started, host: 'api.local:80', connectionId: `conn-g${i}` }));
    bytes.push({ request, response });
  }
  return { mocks, bytes };
}

const requestsOf = (m: Mock): GenericPayload[] => (m.kind === 'Redis' ? (m as RedisMock).spec.redisrequests : (m as GenericMock).spec.genericrequests) ?? [];
const responsesOf = (m: Mock): GenericPayload[] => (m.kind === 'Redis' ? (m as RedisMock).spec.redisresponses : (m as GenericMock).spec.genericresponses) ?? [];

/** The same mocks with every message as base64: the form known to read back cheaply. */
function allBinary(mocks: readonly Mock[]): Mock[] {
  const binary = (payloads: GenericPayload[]) => payloads.map((p) => ({ ...p, message: [{ type: BINARY_TYPE, data: payloadBytes([p]).toString('base64') }] }));
  return mocks.map((m) =>
    m.kind === 'Redis'
      ? { ...m, spec: { ...(m as RedisMock).spec, redisrequests: binary(requestsOf(m)), redisresponses: binary(responsesOf(m)) } }
      : { ...m, spec: { ...(m as GenericMock).spec, genericrequests: binary(requestsOf(m)), genericresponses: binary(responsesOf(m)) } },
  ) as Mock[];
}

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** Heap held by the parsed set (kept alive until measured, collected around it) and the time parsing took. */
function parseCost(text: string): { heapMb: number; ms: number; mocks: Mock[] } {
  gc();
  const before = process.memoryUsage().heapUsed;
  const t = performance.now();
  const mocks = parseMockSet(text, 'set');
  const ms = performance.now() - t;
  gc();
  return { heapMb: (process.memoryUsage().heapUsed - before) / 1048576, ms, mocks };
}

describe('a set of ~30 MiB of \\r\\n-rich Redis and Generic mocks (attack 18r J2)', () => {
  it('is written, reads back within the mock-set thread, at about the cost of its all-base64 form, and replays the same bytes', async () => {
    const { mocks, bytes } = crlfMocks();
    const text = serializeMockSet(mocks);
    const reference = serializeMockSet(allBinary(mocks));
    expect(Buffer.byteLength(text)).toBeGreaterThan(20 * 1048576);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(PARSE_MAX_BYTES);

    const binary = parseCost(reference);
    const written = parseCost(text);
    console.log(
      `parse: as written ${(Buffer.byteLength(text) / 1048576).toFixed(1)} MiB, ${written.heapMb.toFixed(0)} MB, ${written.ms.toFixed(0)} ms; ` +
        `all base64 ${(Buffer.byteLength(reference) / 1048576).toFixed(1)} MiB, ${binary.heapMb.toFixed(0)} MB, ${binary.ms.toFixed(0)} ms`,
    );
    // Written as double-quoted strings this was about 11 times the heap and 7 times the time of the base64 form.
    expect(written.heapMb).toBeLessThan(binary.heapMb * 1.5 + 32);
    expect(written.ms).toBeLessThan(binary.ms * 3 + 500);
    expect(written.mocks).toHaveLength(mocks.length);
    binary.mocks.length = 0;

    // The real write job: serialized and checked on the mock-set thread (768 MB), then loaded there for replay.
    const store = new MockStore(mkdtempSync(path.join(os.tmpdir(), 'debugkit-crlf-')), { cacheDir: mkdtempSync(path.join(os.tmpdir(), 'debugkit-crlf-cache-')) });
    const file = await store.write('crlf', mocks);
    expect(readFileSync(file, 'utf8')).toBe(text);
    const loaded = await store.load('crlf');
    expect(loaded).toHaveLength(mocks.length);
    loaded.forEach((m, i) => {
      expect(m.kind).toBe(i < 10 ? 'Redis' : 'Generic');
      expect(payloadBytes(requestsOf(m)).equals(bytes[i]!.request)).toBe(true);
      expect(payloadBytes(responsesOf(m)).equals(bytes[i]!.response)).toBe(true);
    });
    // The short answers stay readable, as Keploy writes them.
    expect(responsesOf(loaded[0]!)[0]!.message[0]).toEqual({ type: STRING_TYPE, data: '+OK\r\n' });
  }, 300_000);

  it('keeps data `type: string`, long data YAML would double-quote written as `!!binary`', () => {
    const short = Buffer.from('*1\r\n$4\r\nPING\r\n');
    // Counted as written: `\r\n` is 4 characters between the quotes.
    const atLimit = Buffer.from(`${'a'.repeat(QUOTED_STRING_MAX - 4)}\r\n`);
    const over = Buffer.from(`${'a'.repeat(QUOTED_STRING_MAX - 3)}\r\n`);
    const lines = Buffer.from('VALUE 1\n'.repeat(1000));
    const plain = Buffer.from('k'.repeat(10_000));
    const tabs = Buffer.from('a\tb'.repeat(100));
    for (const [b, binary] of [
      [short, false],
      [atLimit, false],
      [over, true],
      [lines, false],
      [plain, false],
      [tabs, true],
    ] as const) {
      const g = buildGenericMock({ request: b, response: Buffer.alloc(0), startedAt: started, endedAt: started });
      expect(g.spec.genericrequests).toEqual([{ origin: 'client', message: [{ type: STRING_TYPE, data: b.toString('latin1') }] }]);
      const text = serializeMockSet([g]);
      expect(text.includes('data: !!binary'), b.toString('latin1').slice(0, 20)).toBe(binary);
      const back = parseMockSet(text, 'set')[0] as GenericMock;
      expect(back.spec.genericrequests).toEqual(g.spec.genericrequests);
      expect(payloadBytes(back.spec.genericrequests!).equals(b)).toBe(true);
    }
    // Text with line breaks only is a block literal, which reads back in linear time.
    expect(serializeMockSet([buildGenericMock({ request: lines, response: Buffer.alloc(0), startedAt: started, endedAt: started })])).toContain('data: |');
  });
});
