import { describe, expect, it } from 'vitest';
import { killedBy, uncaughtFromStderr } from './ends.js';

describe('uncaughtFromStderr', () => {
  it('reads the last traceback: type, message and frames', () => {
    const stderr = 'noise\nTraceback (most recent call last):\n  File "a.py", line 1, in <module>\n    f()\nValueError: bad: value\n';
    expect(uncaughtFromStderr(stderr)).toEqual({
      type: 'ValueError',
      message: 'bad: value',
      traceback: 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n    f()\nValueError: bad: value',
    });
  });

  it('keeps the innermost end of a long traceback, and handles a bare exception name', () => {
    const frames = Array.from({ length: 500 }, (_, i) => `  File "r.py", line ${i}, in depth\n    return depth(n + 1)`).join('\n');
    const error = uncaughtFromStderr(`Traceback (most recent call last):\n${frames}\nKeyboardInterrupt\n`)!;
    expect(error.type).toBe('KeyboardInterrupt');
    expect(error.message).toBe('');
    expect(error.traceback!.length).toBeLessThan(4200);
    expect(error.traceback).toMatch(/^Traceback \(most recent call last\):\n {2}\[\.\.\. \d+ characters cut/);
    expect(error.traceback).toMatch(/line 499, in depth\n {4}return depth\(n \+ 1\)\nKeyboardInterrupt$/);
  });

  it('reads a traceback whose header was not kept from its end (mutual recursion: Python cannot fold the frames, 145 KB of traceback)', () => {
    const frames = Array.from({ length: 400 }, (_, i) => `  File "m.py", line ${i % 2 ? 9 : 5}, in ${i % 2 ? 'pong' : 'ping'}\n    return x(n + 1) + 1\n           ^^^^^^^^^^`).join('\n');
    const error = uncaughtFromStderr(`${frames}\nRecursionError: maximum recursion depth exceeded\n`)!;
    expect(error.type).toBe('RecursionError');
    expect(error.message).toBe('maximum recursion depth exceeded');
    expect(error.traceback).toMatch(/^Traceback \(most recent call last\):\n {2}\[\.\.\. its start was not kept; the innermost frames follow \.\.\.\]\n/);
    expect(error.traceback).toMatch(/in pong\n {4}return x\(n \+ 1\) \+ 1\n {11}\^+\nRecursionError: maximum recursion depth exceeded$/);
    expect(error.traceback!.length).toBeLessThan(4200);
  });

  it('is null without a traceback', () => {
    // Output that merely ends in an indented line and a word is no traceback.
    expect(uncaughtFromStderr('results:\n  a = 1\nDone\n')).toBeNull();
    expect(uncaughtFromStderr('  File "m.py", line 3, in f\n    g()\nprinted after: the end\nmore output\n')).toBeNull();
    expect(uncaughtFromStderr('just output\n')).toBeNull();
    expect(uncaughtFromStderr('Traceback (most recent call last):\n  File "x"\n')).toBeNull();
  });
});

describe('killedBy', () => {
  it("reads debugpy's 256 - N and Python's -N as signal N", () => {
    expect(killedBy(247)?.message).toMatch(/^the program was killed by SIGKILL/);
    expect(killedBy(-15)?.message).toMatch(/^the program was killed by SIGTERM/);
    expect(killedBy(0)).toBeNull();
    expect(killedBy(1)).toBeNull();
    expect(killedBy(3)).toBeNull();
  });
});
