import { describe, expect, it } from 'vitest';
import { distance, explain, makeSignature, normalizeFrames, patternOf } from './signature.js';
import { parseReports } from './reports.js';

describe('crash signatures', () => {
  it('skips allocator, abort, libc string and sanitizer frames', () => {
    expect(
      normalizeFrames(['__pthread_kill_implementation', 'raise', 'abort', '__libc_message', 'malloc_printerr', '_int_free', 'free', 'destroy_node', 'main', '__libc_start_call_main', '_start']),
    ).toEqual(['destroy_node', 'main']);
    expect(normalizeFrames(['__memcpy_avx_unaligned_erms', 'copy_header', 'parse', 'main'])).toEqual(['copy_header', 'parse', 'main']);
    expect(normalizeFrames(['__asan_memcpy', '__interceptor_strcpy', 'f', '??', 'g'])).toEqual(['f', 'g']);
  });

  it('classes failures by pattern', () => {
    expect(patternOf('SIGSEGV')).toBe('crash');
    expect(patternOf('heap-buffer-overflow')).toBe('memory');
    expect(patternOf('AssertionError')).toBe('logic');
    expect(patternOf('SIGABRT')).toBe('logic');
  });

  it('ranks the same frames first, then shared top frames, then other failures', () => {
    const ref = makeSignature('SIGSEGV', ['walk', 'main'], 'ref');
    const same = makeSignature('SIGSEGV', ['walk', 'main'], 'a');
    const sharedTop = makeSignature('SIGSEGV', ['walk', 'helper', 'main'], 'b');
    const otherSignal = makeSignature('SIGBUS', ['walk', 'main'], 'c');
    const unrelated = makeSignature('SIGSEGV', ['parse', 'read', 'main'], 'd');
    const d = [same, sharedTop, otherSignal, unrelated].map((s) => distance(ref, s));
    expect(d[0]).toBe(0);
    expect(d[0]! < d[1]! && d[1]! < d[3]!).toBe(true);
    expect(d[2]).toBeGreaterThan(d[0]!);
    expect(explain(ref, same)).toMatch(/same failure SIGSEGV; same top frame walk; 2\/2 frames shared/);
  });
});

describe('artefact reports', () => {
  it('reads ASan, UBSan, valgrind reports and Python tracebacks', async () => {
    const text = [
      '==12==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602 at pc 0x4 bp 0x5 sp 0x6',
      'WRITE of size 4 at 0x602 thread T0',
      '    #0 0x4c in __interceptor_memcpy (/a.out+0x4c)',
      '    #1 0x4d in copy_header /src/h.c:10',
      '    #2 0x4e in main /src/m.c:3',
      '',
      "h.c:7:5: runtime error: signed integer overflow: 2147483647 + 1 cannot be represented in type 'int'",
      '    #0 0x1 in add /src/h.c:7',
      '',
      '==99== Invalid read of size 4',
      '==99==    at 0x10916D: walk (l.c:8)',
      '==99==    by 0x1091A0: main (l.c:15)',
      '',
      'Traceback (most recent call last):',
      '  File "app.py", line 9, in <module>',
      '    main()',
      '  File "app.py", line 5, in main',
      '    check(x)',
      '  File "app.py", line 2, in check',
      '    assert x > 0',
      'AssertionError',
      '',
    ].join('\n');
    const sigs = await parseReports(text, 'r.log', { over: () => false, pause: () => Promise.resolve() });
    expect(sigs.map((s) => s.signature)).toEqual([
      'heap-buffer-overflow | copy_header | main',
      "ubsan: signed integer overflow: 2147483647 + 1 cannot be represented in type 'int' | add",
      'Invalid read | walk | main',
      'AssertionError | check | main | <module>',
    ]);
    expect(sigs.map((s) => s.pattern)).toEqual(['memory', 'memory', 'memory', 'logic']);
  });
});
