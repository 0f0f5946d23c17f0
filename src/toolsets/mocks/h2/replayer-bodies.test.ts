// Round 18af (attacker l1): the HTTP/2 replayer kept up to 16 MiB of every stream's request body,
// with no budget across streams (40 unfinished streams held 1.4 GB, and their close 5 s of the
// loop: l1-4), and matched the first 16 MiB of a longer body as if it were all of it, `exact`
// (l1-5). It now reads a body as HTTP/1 does: 1 MiB kept, the rest counted and hashed, all of it
// charged to the replay's budget.
import http2 from 'node:http2';
import { describe, expect, it } from 'vitest';
import { HttpMatcher } from '../http/matcher.js';
import { postMock } from '../http/test-support.js';
import { Watched } from '../kept-testing.js';
import { replaying } from './test-support.js';

function post(client: http2.ClientHttp2Session, body: Buffer, end = true) {
  const req = client.request({ ':method': 'POST', ':path': '/q', ':authority': 'h', 'content-type': 'application/json' });
  req.on('error', () => {});
  const answer = new Promise<{ status: number; body: string }>((resolve) => {
    let status = 0;
    let text = '';
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (d) => (text += d));
    req.on('close', () => resolve({ status, body: text }));
  });
  if (end) req.end(body);
  else req.write(body);
  return { req, answer };
}

describe('attack 18af l1-5: a body longer than what is kept is compared whole', () => {
  it('16 MiB recorded, 16 MiB + more sent: a miss, not an exact match; the same 16 MiB: replayed', async () => {
    const recorded = Buffer.alloc(16 * 1024 * 1024, 'a');
    const { client, counts, misses } = await replaying({ http: new HttpMatcher([postMock('/q', recorded)]) });
    // The extra bytes come in a frame of their own, once the 16 MiB are read: the old reader dropped that frame whole.
    const longerPost = post(client, recorded, false);
    await new Promise<void>((r) => longerPost.req.write(Buffer.alloc(0), () => r()));
    await new Promise<void>((r) => client.ping(() => r()));
    longerPost.req.end(Buffer.from('EVIL-EXTRA-BYTES'));
    const longer = await longerPost.answer;
    expect(longer.status).toBe(502);
    expect(counts).toMatchObject({ replayed: 0, missed: 1 });
    expect(misses[0]).toMatch(/^POST \/q \(HTTP\/2\)/);
    const same = await post(client, recorded).answer;
    expect(same.status).toBe(200);
    expect(counts).toMatchObject({ replayed: 1, missed: 1 });
  });
});

describe('attack 18af l1-4: what streams hold of their bodies is charged to one budget', () => {
  it('40 unfinished streams of 2 MiB each keep no more than the budget; each keeps at most 1 MiB', async () => {
    const kept = new Watched(8 * 1024 * 1024);
    const { client } = await replaying({ kept });
    const open = Array.from({ length: 40 }, () => post(client, Buffer.alloc(2 * 1024 * 1024, 'b'), false));
    // Wait until the server has read every byte sent (the budget lends no more once full, the bytes are still counted).
    await Promise.all(open.map(({ req }) => new Promise<void>((r) => (req.writableNeedDrain ? req.once('drain', () => r()) : r()))));
    await new Promise<void>((r) => client.ping(() => r()));
    expect(kept.most).toBeGreaterThan(0);
    expect(kept.most).toBeLessThanOrEqual(8 * 1024 * 1024);
    for (const { req } of open) req.end();
    const answers = await Promise.all(open.map((o) => o.answer));
    expect(answers.every((a) => a.status === 502)).toBe(true);
    // Every stream gave its share back.
    expect(kept.lent).toBe(0);
  });

  it('a stream reset mid-body gives its share back and is not answered: a miss (attack f2-2)', async () => {
    const kept = new Watched(8 * 1024 * 1024);
    const { client, counts, misses } = await replaying({ kept });
    const { req } = post(client, Buffer.alloc(512 * 1024, 'c'), false);
    await new Promise<void>((r) => client.ping(() => r()));
    await new Promise<void>((r) => {
      req.once('close', () => r());
      req.close(http2.constants.NGHTTP2_CANCEL);
    });
    await new Promise<void>((r) => client.ping(() => r()));
    await expect.poll(() => kept.lent).toBe(0);
    // A request sent and never answered (it passed a run with no miss before f2-2).
    expect(misses).toHaveLength(1);
    expect(misses[0]).toMatch(/^POST \/q \(HTTP\/2\): the request (was reset|closed) after \d+ bytes of its body/);
    expect(counts).toMatchObject({ replayed: 0, missed: 1 });
  });
});
