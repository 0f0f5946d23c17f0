// Attack round 18ac, e1-2: every entry point that parses a client's JSON judges its shape first.
// Over stdio a line was given to JSON.parse whatever it held (10 MiB of empty arrays included).
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LineTransport } from './stdio.js';

afterEach(() => vi.restoreAllMocks());

describe('LineTransport: a line is judged by its shape before JSON.parse (attack e1-2)', () => {
  it('a line of 1.37 M empty arrays is answered -32600 with the bound, its id kept, and never parsed', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const transport = new LineTransport(input, output);
    const messages: unknown[] = [];
    transport.onmessage = (m) => void messages.push(m);
    await transport.start();
    const parse = JSON.parse.bind(JSON);
    let big = 0;
    vi.spyOn(JSON, 'parse').mockImplementation((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
      if (typeof text === 'string' && text.length > 1_000_000) big++;
      return parse(text, reviver);
    });
    const row = `[${Array(9999).fill('[]').join(',')}]`;
    const answers: string[] = [];
    output.on('data', (d: Buffer) => answers.push(d.toString('utf8')));
    input.write(`{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"x":[${Array(137).fill(row).join(',')}]}}}\n`);
    // Before: parsed and passed on as a ping; now answered without being parsed.
    await vi.waitFor(() => expect(answers.length + messages.length).toBeGreaterThan(0), { timeout: 30_000 });
    expect(messages).toEqual([]);
    expect(JSON.parse(answers.join(''))).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: -32600,
        message:
          'Invalid Request: message refused: JSON with more than 200,000 values (arrays, objects, strings, numbers and literals, object keys counted); a body may hold at most 200,000: send fewer, or split a batch into several requests',
      },
    });
    expect(big).toBe(0);
    // The next line is served as before.
    input.write('{"jsonrpc":"2.0","id":8,"method":"ping"}\n');
    await vi.waitFor(() => expect(messages).toEqual([{ jsonrpc: '2.0', id: 8, method: 'ping' }]));
  }, 60_000);
});
