import { describe, it, expect } from 'vitest';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { DebugkitError } from '../errors.js';
import { DapDecoder, DapProtocolError, DEFAULT_MAX_BODY_BYTES, MAX_HEADER_BYTES, encodeMessage } from './codec.js';

const event = (seq: number, output: string): DebugProtocol.OutputEvent => ({
  seq,
  type: 'event',
  event: 'output',
  body: { category: 'stdout', output },
});

/** A frame built by hand, to control the header exactly. */
function frame(body: string, headers = ''): Buffer {
  const bytes = Buffer.from(body, 'utf8');
  return Buffer.concat([Buffer.from(`${headers}Content-Length: ${bytes.length}\r\n\r\n`, 'latin1'), bytes]);
}

/** Feeds `data` in pieces whose sizes come from `sizes` (cycled) and collects all messages. */
function decodeInPieces(data: Buffer, sizes: (i: number) => number, decoder = new DapDecoder()): unknown[] {
  const out: unknown[] = [];
  for (let pos = 0, i = 0; pos < data.length; i++) {
    const end = Math.min(data.length, pos + Math.max(1, sizes(i)));
    out.push(...decoder.push(data.subarray(pos, end)));
    pos = end;
  }
  return out;
}

/** Small deterministic PRNG (mulberry32), so a failing random split can be reproduced. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pushError(decoder: DapDecoder, data: Buffer): DapProtocolError {
  try {
    decoder.push(data);
  } catch (err) {
    expect(err).toBeInstanceOf(DapProtocolError);
    return err as DapProtocolError;
  }
  throw new Error('expected push to throw');
}

describe('encodeMessage', () => {
  it('writes a Content-Length header, a blank line and the JSON body', () => {
    const msg: DebugProtocol.Request = { seq: 1, type: 'request', command: 'threads' };
    const json = JSON.stringify(msg);
    expect(encodeMessage(msg).toString('utf8')).toBe(`Content-Length: ${json.length}\r\n\r\n${json}`);
  });

  it('counts the body length in UTF-8 bytes, not characters', () => {
    const msg = event(7, 'é€😀');
    const encoded = encodeMessage(msg);
    const header = encoded.toString('latin1', 0, encoded.indexOf('\r\n\r\n'));
    const bodyBytes = Buffer.byteLength(JSON.stringify(msg), 'utf8');
    expect(header).toBe(`Content-Length: ${bodyBytes}`);
    expect(bodyBytes).toBe(JSON.stringify(msg).length + 1 + 2 + 2); // é: 2 bytes, €: 3, 😀: 4 (2 UTF-16 units)
    expect(new DapDecoder().push(encoded)).toEqual([msg]);
  });
});

describe('DapDecoder', () => {
  it('decodes one message per chunk', () => {
    const decoder = new DapDecoder();
    expect(decoder.push(encodeMessage(event(1, 'a')))).toEqual([event(1, 'a')]);
    expect(decoder.push(encodeMessage(event(2, 'b')))).toEqual([event(2, 'b')]);
    expect(decoder.hasPartialMessage).toBe(false);
  });

  it('decodes several messages from one chunk, in order', () => {
    const msgs = [event(1, 'a'), event(2, 'bb'), event(3, 'ccc')];
    expect(new DapDecoder().push(Buffer.concat(msgs.map(encodeMessage)))).toEqual(msgs);
  });

  it('returns nothing until a message is complete', () => {
    const decoder = new DapDecoder();
    const data = encodeMessage(event(1, 'hello'));
    expect(decoder.push(data.subarray(0, 10))).toEqual([]);
    expect(decoder.hasPartialMessage).toBe(true);
    expect(decoder.push(data.subarray(10, data.length - 1))).toEqual([]);
    expect(decoder.push(data.subarray(data.length - 1))).toEqual([event(1, 'hello')]);
    expect(decoder.hasPartialMessage).toBe(false);
  });

  it('survives a split at every byte position of a two-message stream', () => {
    const msgs = [event(1, 'first'), event(2, 'sécond €')];
    const data = Buffer.concat(msgs.map(encodeMessage));
    for (let cut = 1; cut < data.length; cut++) {
      const decoder = new DapDecoder();
      const out = [...decoder.push(data.subarray(0, cut)), ...decoder.push(data.subarray(cut))];
      expect(out, `cut at ${cut}`).toEqual(msgs);
    }
  });

  it('decodes a stream fed one byte at a time, including the header terminator split 3 ways', () => {
    const msgs = [event(1, 'x'), { seq: 2, type: 'response', request_seq: 1, success: true, command: 'threads' }];
    expect(decodeInPieces(Buffer.concat(msgs.map((m) => encodeMessage(m as never))), () => 1)).toEqual(msgs);
  });

  it('keeps multi-byte UTF-8 characters intact when chunks split them', () => {
    const text = 'né € 😀 日本語 ✓';
    const data = encodeMessage(event(1, text));
    const bodyStart = data.indexOf('\r\n\r\n') + 4;
    const euro = data.indexOf(Buffer.from('€'), bodyStart);
    const emoji = data.indexOf(Buffer.from('😀'), bodyStart);
    for (const cut of [euro + 1, euro + 2, emoji + 1, emoji + 2, emoji + 3]) {
      const decoder = new DapDecoder();
      const out = [...decoder.push(data.subarray(0, cut)), ...decoder.push(data.subarray(cut))];
      expect((out[0] as DebugProtocol.OutputEvent).body.output, `cut at ${cut}`).toBe(text);
    }
  });

  it('ignores extra header fields and matches Content-Length case-insensitively', () => {
    const body = JSON.stringify(event(1, 'typed'));
    const data = Buffer.concat([
      frame(body, 'Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n'),
      Buffer.from(`content-length: ${body.length}\r\nX-Other: 1\r\n\r\n${body}`, 'latin1'),
      frame(body, 'Content-Length: ' + body.length + '\r\n'), // repeated with the same value
    ]);
    expect(new DapDecoder().push(data)).toEqual([event(1, 'typed'), event(1, 'typed'), event(1, 'typed')]);
  });

  it('accepts a header section of exactly the maximum size and refuses one byte more', () => {
    const body = JSON.stringify(event(1, 'x'));
    const fixed = `Content-Length: ${body.length}\r\nX-Pad: \r\n\r\n`.length;
    const atLimit = frame(body, `X-Pad: ${'p'.repeat(MAX_HEADER_BYTES - fixed)}\r\n`);
    expect(atLimit.indexOf('\r\n\r\n') + 4).toBe(MAX_HEADER_BYTES);
    expect(new DapDecoder().push(atLimit)).toEqual([event(1, 'x')]);
    const overLimit = frame(body, `X-Pad: ${'p'.repeat(MAX_HEADER_BYTES - fixed + 1)}\r\n`);
    expect(pushError(new DapDecoder(), overLimit).message).toMatch(/header section exceeds 8192 bytes/);
  });

  it('refuses a header section that never ends, however it is chunked', () => {
    const garbage = Buffer.from('this is a log line, not DAP\n'.repeat(400), 'latin1');
    const err = pushError(new DapDecoder(), garbage);
    expect(err.message).toMatch(/header section exceeds 8192 bytes.*something other than DAP.*"this is a log line/s);
    expect(() => decodeInPieces(garbage, () => 7)).toThrow(DapProtocolError);
  });

  it('refuses a body over the limit as soon as the header announces it', () => {
    const decoder = new DapDecoder({ maxBodyBytes: 1000 });
    const err = pushError(decoder, Buffer.from('Content-Length: 1001\r\n\r\n', 'latin1'));
    expect(err.message).toBe('DAP message body of 1001 bytes exceeds the limit of 1000 bytes');
    expect(new DapDecoder({ maxBodyBytes: 1000 }).push(frame(JSON.stringify({ type: 'event', event: 'x', seq: 1, body: 'a'.repeat(900) })))).toHaveLength(1);
  });

  it('has a 64 MiB default body limit', () => {
    expect(DEFAULT_MAX_BODY_BYTES).toBe(64 * 1024 * 1024);
    const err = pushError(new DapDecoder(), Buffer.from(`Content-Length: ${DEFAULT_MAX_BODY_BYTES + 1}\r\n\r\n`, 'latin1'));
    expect(err.message).toMatch(/exceeds the limit of 67108864 bytes/);
  });

  it('refuses a body that is not JSON, with an excerpt', () => {
    const err = pushError(new DapDecoder(), frame('{"seq":1,"type":"event",'));
    expect(err.message).toMatch(/^DAP message body is not valid JSON \(.+\); it starts with "\{\\"seq\\":1/);
    expect(err).toBeInstanceOf(DebugkitError);
    expect(err.code).toBe('ENGINE_FAILED');
    expect(err.name).toBe('DapProtocolError');
  });

  it('refuses an empty body as invalid JSON', () => {
    expect(pushError(new DapDecoder(), frame('')).message).toMatch(/not valid JSON/);
  });

  it.each([
    ['[1,2]', /is not a JSON object/],
    ['42', /is not a JSON object/],
    ['null', /is not a JSON object/],
    ['{"seq":1}', /has no "type"/],
    ['{"seq":1,"type":"response","success":true,"command":"x"}', /response without a numeric "request_seq"/],
    ['{"seq":1,"type":"response","request_seq":1,"command":"x"}', /boolean "success"/],
    ['{"type":"request","command":"runInTerminal"}', /request without a numeric "seq"/],
    ['{"seq":1,"type":"event"}', /event without a string "event"/],
  ])('refuses JSON that is not a usable DAP message: %s', (body, pattern) => {
    expect(pushError(new DapDecoder(), frame(body)).message).toMatch(pattern);
  });

  it('passes through message types it does not know', () => {
    expect(new DapDecoder().push(frame('{"seq":1,"type":"future"}'))).toEqual([{ seq: 1, type: 'future' }]);
  });

  it.each([
    ['X-Only: 1\r\n\r\n', /has no Content-Length/],
    ['Content-Length: abc\r\n\r\n', /invalid DAP Content-Length "abc"/],
    ['Content-Length: -5\r\n\r\n', /invalid DAP Content-Length "-5"/],
    ['Content-Length: 2\r\nContent-Length: 3\r\n\r\n', /conflicting DAP Content-Length headers \(2 and 3\)/],
    ['Content-Length 2\r\n\r\n', /malformed DAP header line "Content-Length 2"/],
    ['\r\n\r\n', /malformed DAP header line ""/],
  ])('refuses a bad header %j', (header, pattern) => {
    expect(pushError(new DapDecoder(), Buffer.from(header, 'latin1')).message).toMatch(pattern);
  });

  it('stays failed after an error: the framing cannot be recovered', () => {
    const decoder = new DapDecoder();
    const first = pushError(decoder, frame('not json'));
    expect(pushError(decoder, encodeMessage(event(1, 'fine')))).toBe(first);
  });
});

describe('DapDecoder with a ~10 MB message', () => {
  // Multi-byte text makes byte and character counts differ, and chunk edges split characters.
  const big = 'DAP ✓ 日本 😀 '.repeat(500_000);
  const msgs = [event(1, 'before'), event(2, big), event(3, 'after')];
  const data = Buffer.concat(msgs.map(encodeMessage));

  it('is really about 10 MB', () => {
    expect(data.length).toBeGreaterThan(10_000_000);
  });

  // Ten million pushes: a decoder that re-concatenated its buffer per chunk would copy ~50 TB
  // and hit the test timeout, so finishing at all shows the cost is linear.
  it('decodes it from 1-byte chunks', () => {
    const out = decodeInPieces(data, () => 1);
    expect(out).toHaveLength(3);
    expect((out[1] as DebugProtocol.OutputEvent).body.output === big).toBe(true);
    expect(out[2]).toEqual(msgs[2]);
  });

  it('decodes it from random-size chunks (several seeds)', () => {
    for (const seed of [1, 2, 3]) {
      const next = random(seed);
      const out = decodeInPieces(data, () => Math.floor(next() * 70_000) + 1);
      expect(out, `seed ${seed}`).toHaveLength(3);
      expect((out[1] as DebugProtocol.OutputEvent).body.output === big, `seed ${seed}`).toBe(true);
    }
  });
});
