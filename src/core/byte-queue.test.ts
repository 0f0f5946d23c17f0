import { describe, expect, it } from 'vitest';
import { ByteQueue } from './byte-queue.js';

describe('ByteQueue', () => {
  it('holds what was pushed, in order, across chunks and partial consumes', () => {
    const q = new ByteQueue();
    const sent: number[] = [];
    let taken = 0;
    for (let i = 0; i < 500; i++) {
      const chunk = Buffer.from(Array.from({ length: (i * 37) % 101 }, (_, k) => (i + k) & 0xff));
      sent.push(...chunk);
      q.push(chunk);
      const n = Math.floor(q.length / 3);
      expect([...q.view().subarray(0, n)]).toEqual(sent.slice(taken, taken + n));
      q.consume(n);
      taken += n;
      expect(q.length).toBe(sent.length - taken);
    }
    expect([...q.view()]).toEqual(sent.slice(taken));
  });

  it('never writes into a chunk it was given, nor into a view it handed out', () => {
    const q = new ByteQueue();
    const first = Buffer.from('abc');
    q.push(first);
    const view = q.view();
    q.push(Buffer.from('def'));
    q.consume(4);
    q.push(Buffer.from('ghi'));
    expect(first.toString()).toBe('abc');
    expect(view.toString()).toBe('abc');
    expect(q.view().toString()).toBe('efghi');
  });

  it('refuses to consume more than it holds', () => {
    const q = new ByteQueue();
    q.push(Buffer.from('ab'));
    expect(() => q.consume(3)).toThrow(/cannot consume 3 of 2 bytes/);
  });
});
