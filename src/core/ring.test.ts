import { describe, expect, it } from 'vitest';
import { OutputRing } from './ring.js';

describe('OutputRing basics', () => {
  it('reads nothing from an empty ring', () => {
    const ring = new OutputRing();
    expect(ring.end).toBe(0);
    expect(ring.read()).toEqual({ text: '', cursor: 0, dropped: false });
    expect(ring.read(0, 10)).toEqual({ text: '', cursor: 0, dropped: false });
  });

  it('ignores empty appends', () => {
    const ring = new OutputRing(4);
    ring.append('');
    expect(ring.end).toBe(0);
    ring.append('ab');
    ring.append('');
    expect(ring.end).toBe(2);
    expect(ring.read()).toEqual({ text: 'ab', cursor: 2, dropped: false });
  });

  it('reads everything from 0 by default and returns the end as the cursor', () => {
    const ring = new OutputRing();
    ring.append('hello ');
    ring.append('world\n');
    expect(ring.end).toBe(12);
    expect(ring.read()).toEqual({ text: 'hello world\n', cursor: 12, dropped: false });
  });

  it('reads only what came after a cursor', () => {
    const ring = new OutputRing();
    ring.append('abc');
    const first = ring.read(0);
    expect(first).toEqual({ text: 'abc', cursor: 3, dropped: false });
    ring.append('def');
    ring.append('gh');
    expect(ring.read(first.cursor)).toEqual({ text: 'defgh', cursor: 8, dropped: false });
    expect(ring.read(5)).toEqual({ text: 'fgh', cursor: 8, dropped: false });
  });

  it('reads across chunk boundaries from the middle of a chunk', () => {
    const ring = new OutputRing();
    for (const chunk of ['ab', 'cd', 'ef']) ring.append(chunk);
    expect(ring.read(1)).toEqual({ text: 'bcdef', cursor: 6, dropped: false });
    expect(ring.read(3, 2)).toEqual({ text: 'de', cursor: 5, dropped: false });
  });

  it('reading does not consume: the same cursor reads the same text again', () => {
    const ring = new OutputRing();
    ring.append('xyz');
    expect(ring.read(1)).toEqual({ text: 'yz', cursor: 3, dropped: false });
    expect(ring.read(1)).toEqual({ text: 'yz', cursor: 3, dropped: false });
    expect(ring.end).toBe(3);
  });

  it('keeps working after a read merged the chunks', () => {
    const ring = new OutputRing(6);
    ring.append('ab');
    ring.append('cd');
    expect(ring.read().text).toBe('abcd');
    ring.append('efgh');
    expect(ring.read()).toEqual({ text: 'cdefgh', cursor: 8, dropped: true });
    expect(ring.read(4)).toEqual({ text: 'efgh', cursor: 8, dropped: false });
  });

  it('keeps unicode text intact (positions count UTF-16 code units)', () => {
    const ring = new OutputRing();
    ring.append('héllo ');
    ring.append('wörld');
    expect(ring.end).toBe(11);
    expect(ring.read(6)).toEqual({ text: 'wörld', cursor: 11, dropped: false });
  });
});

describe('OutputRing cursor at or past the end', () => {
  it('returns empty text and the same cursor when the cursor is at the end', () => {
    const ring = new OutputRing();
    ring.append('abc');
    expect(ring.read(3)).toEqual({ text: '', cursor: 3, dropped: false });
  });

  it('returns empty text and keeps a cursor that is past the end', () => {
    const ring = new OutputRing();
    ring.append('abc');
    expect(ring.read(100)).toEqual({ text: '', cursor: 100, dropped: false });
    expect(ring.read(100, 5)).toEqual({ text: '', cursor: 100, dropped: false });
  });

  it('a cursor past the end of an empty ring is not "dropped"', () => {
    expect(new OutputRing().read(42)).toEqual({ text: '', cursor: 42, dropped: false });
  });
});

describe('OutputRing maxChars paging', () => {
  it('returns at most maxChars, oldest first, and a cursor to continue from', () => {
    const ring = new OutputRing();
    ring.append('0123456789');
    const p1 = ring.read(0, 4);
    expect(p1).toEqual({ text: '0123', cursor: 4, dropped: false });
    const p2 = ring.read(p1.cursor, 4);
    expect(p2).toEqual({ text: '4567', cursor: 8, dropped: false });
    const p3 = ring.read(p2.cursor, 4);
    expect(p3).toEqual({ text: '89', cursor: 10, dropped: false });
    expect(ring.read(p3.cursor, 4)).toEqual({ text: '', cursor: 10, dropped: false });
  });

  it('pages through many chunks and reassembles the whole text', () => {
    const ring = new OutputRing();
    const parts = Array.from({ length: 50 }, (_, i) => `line ${i}\n`);
    for (const part of parts) ring.append(part);
    let cursor = 0;
    let text = '';
    let pages = 0;
    for (;;) {
      const page = ring.read(cursor, 7);
      if (!page.text) break;
      expect(page.text.length).toBeLessThanOrEqual(7);
      expect(page.dropped).toBe(false);
      text += page.text;
      cursor = page.cursor;
      pages++;
    }
    expect(text).toBe(parts.join(''));
    expect(cursor).toBe(ring.end);
    expect(pages).toBe(Math.ceil(parts.join('').length / 7));
  });

  it('maxChars 0 returns nothing and does not advance', () => {
    const ring = new OutputRing();
    ring.append('abc');
    expect(ring.read(1, 0)).toEqual({ text: '', cursor: 1, dropped: false });
  });

  it('maxChars larger than what is kept returns everything', () => {
    const ring = new OutputRing();
    ring.append('abc');
    expect(ring.read(0, 1000)).toEqual({ text: 'abc', cursor: 3, dropped: false });
  });
});

describe('OutputRing capacity', () => {
  it('keeps exactly `capacity` characters when full, without dropping', () => {
    const ring = new OutputRing(5);
    ring.append('abcde');
    expect(ring.read()).toEqual({ text: 'abcde', cursor: 5, dropped: false });
  });

  it('drops the oldest text beyond capacity and says so to a reader behind it', () => {
    const ring = new OutputRing(5);
    ring.append('abcde');
    ring.append('fg');
    expect(ring.end).toBe(7);
    expect(ring.read(0)).toEqual({ text: 'cdefg', cursor: 7, dropped: true });
    expect(ring.read(1)).toEqual({ text: 'cdefg', cursor: 7, dropped: true });
  });

  it('does not report dropped for a reader at or after the oldest kept text', () => {
    const ring = new OutputRing(5);
    ring.append('abcdefg');
    expect(ring.read(2)).toEqual({ text: 'cdefg', cursor: 7, dropped: false });
    expect(ring.read(4)).toEqual({ text: 'efg', cursor: 7, dropped: false });
  });

  it('trims part of a chunk when only part of it is over capacity', () => {
    const ring = new OutputRing(4);
    ring.append('abc');
    ring.append('de');
    expect(ring.read(0)).toEqual({ text: 'bcde', cursor: 5, dropped: true });
  });

  it('keeps only the tail of a single append larger than capacity', () => {
    const ring = new OutputRing(3);
    ring.append('0123456789');
    expect(ring.end).toBe(10);
    expect(ring.read(0)).toEqual({ text: '789', cursor: 10, dropped: true });
    expect(ring.read(7)).toEqual({ text: '789', cursor: 10, dropped: false });
  });

  it('combines dropping with maxChars: pages start at the oldest kept text', () => {
    const ring = new OutputRing(6);
    ring.append('abcdefghij');
    const p1 = ring.read(0, 4);
    expect(p1).toEqual({ text: 'efgh', cursor: 8, dropped: true });
    expect(ring.read(p1.cursor, 4)).toEqual({ text: 'ij', cursor: 10, dropped: false });
  });

  it('reports dropped with empty text when the cursor is behind and nothing new is kept after it', () => {
    const ring = new OutputRing(2);
    ring.append('abcd');
    expect(ring.read(0, 0)).toEqual({ text: '', cursor: 2, dropped: true });
  });

  it('handles many small appends over capacity', () => {
    const ring = new OutputRing(10);
    let all = '';
    for (let i = 0; i < 1000; i++) {
      const piece = String.fromCharCode(97 + (i % 26));
      ring.append(piece);
      all += piece;
    }
    expect(ring.end).toBe(1000);
    expect(ring.read(0)).toEqual({ text: all.slice(-10), cursor: 1000, dropped: true });
    expect(ring.read(990)).toEqual({ text: all.slice(990), cursor: 1000, dropped: false });
    expect(ring.read(995, 3)).toEqual({ text: all.slice(995, 998), cursor: 998, dropped: false });
    expect(ring.read(989)).toEqual({ text: all.slice(990), cursor: 1000, dropped: true });
  });

  it('stays bounded and correct with interleaved appends and reads over capacity', () => {
    const ring = new OutputRing(16);
    let all = '';
    let cursor = 0;
    let droppedReads = 0;
    for (let i = 0; i < 200; i++) {
      const piece = `<${i}>`;
      ring.append(piece);
      all += piece;
      if (i % 4 === 0) {
        const r = ring.read(cursor);
        const oldest = Math.max(0, all.length - 16);
        expect(r).toEqual({ text: all.slice(Math.max(cursor, oldest)), cursor: all.length, dropped: cursor < oldest });
        if (r.dropped) droppedReads++;
        cursor = r.cursor;
      }
    }
    // Four pieces between reads: from "<10>" on they overflow 16 characters, so some reads see drops.
    expect(droppedReads).toBeGreaterThan(0);
    expect(ring.read(0).text).toBe(all.slice(-16));
    expect(ring.read(0).text.length).toBe(16);
  });

  it('appending exactly enough to drop whole chunks keeps positions exact', () => {
    const ring = new OutputRing(4);
    ring.append('ab');
    ring.append('cd');
    ring.append('ef'); // drops "ab" exactly
    expect(ring.read(0)).toEqual({ text: 'cdef', cursor: 6, dropped: true });
    expect(ring.read(2)).toEqual({ text: 'cdef', cursor: 6, dropped: false });
    ring.append('ghij'); // drops "cdef" exactly
    expect(ring.read(2)).toEqual({ text: 'ghij', cursor: 10, dropped: true });
    expect(ring.read(6)).toEqual({ text: 'ghij', cursor: 10, dropped: false });
  });

  it('uses a 1 MiB capacity by default', () => {
    const ring = new OutputRing();
    ring.append('x'.repeat(1 << 20));
    expect(ring.read(0, 0).dropped).toBe(false);
    ring.append('y');
    const r = ring.read(0, 2);
    expect(r).toEqual({ text: 'xx', cursor: 3, dropped: true });
    expect(ring.end).toBe((1 << 20) + 1);
  });
});

describe('readPage and readTail', () => {
  it('reads from the end with a negative cursor and never echoes a cursor past the end', async () => {
    const { OutputRing: Ring, readPage } = await import('./ring.js');
    const ring = new Ring(100);
    ring.append('0123456789'.repeat(3));
    expect(readPage(ring, -5, 100)).toEqual({ text: '56789', cursor: 30, dropped: false, end: 30, more: false });
    expect(readPage(ring, 500, 100)).toEqual({ text: '', cursor: 30, dropped: false, end: 30, more: false });
    expect(readPage(ring, 0, 4)).toEqual({ text: '0123', cursor: 4, dropped: false, end: 30, more: true });
    expect(readPage(ring, -500, 4)).toEqual({ text: '0123', cursor: 4, dropped: false, end: 30, more: true });
  });

  it('readTail keeps the end and counts what it skipped', async () => {
    const { OutputRing: Ring, readTail } = await import('./ring.js');
    const ring = new Ring(100);
    ring.append('a'.repeat(20) + 'END');
    expect(readTail(ring, 0, 5)).toEqual({ text: 'aaEND', cursor: 23, dropped: true, end: 23, more: false, skipped: 18 });
    expect(readTail(ring, 20, 5)).toEqual({ text: 'END', cursor: 23, dropped: false, end: 23, more: false, skipped: 0 });
  });
});
