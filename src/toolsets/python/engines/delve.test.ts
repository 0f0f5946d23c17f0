import { describe, expect, it } from 'vitest';
import { DelveEngine } from './delve.js';

// What only Delve's engine reads: the end of a program Delve did not stop (attack 18ap i2-5).
const engine = Object.create(DelveEngine.prototype) as DelveEngine;

describe("DelveEngine's reading of a program's end", () => {
  it('a panic, a fatal error and a signal Go reports are errors; a plain exit is none', () => {
    expect(engine.endError(2, 'out\npanic: boom\n\ngoroutine 1 [running]:\nmain.main()\n')).toMatchObject({ type: 'panic', message: 'boom' });
    expect(engine.endError(2, 'fatal error: all goroutines are asleep - deadlock!\n')).toMatchObject({ type: 'fatal error', message: 'all goroutines are asleep - deadlock!' });
    expect(engine.endError(2, 'SIGSEGV: segmentation violation\nPC=0x45 m=0 sigcode=0\n')).toMatchObject({ type: 'SIGSEGV', message: 'segmentation violation' });
    expect(engine.endError(1, 'usage: prog FILE\n')).toBeNull();
    expect(engine.endError(-1, '')).toMatchObject({ type: 'ProgramKilled' });
  });
});
