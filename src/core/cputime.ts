/**
 * For the linearity tests (the audit redactor, the mocks' index builds: attacks 18b and 18c): the least CPU time (user + system,
 * ms) of `runs` runs of each of `small` and `big`, taken in turn. CPU time, not wall time: on a
 * loaded machine a long run is stretched by other processes' turns and a short one is not, which
 * would make a linear build look quadratic. A build at 4n characters takes ~4x a linear one's time
 * at n, a quadratic one's ~16x (tests bound the ratio accordingly).
 */
export function cpuTimes(small: () => unknown, big: () => unknown, runs = 5): { small: number; big: number } {
  const best = { small: Infinity, big: Infinity };
  for (let i = 0; i < runs; i++) {
    for (const which of ['small', 'big'] as const) {
      const before = process.cpuUsage();
      (which === 'small' ? small : big)();
      const used = process.cpuUsage(before);
      best[which] = Math.min(best[which], (used.user + used.system) / 1000);
    }
  }
  return best;
}

/** The failure message of a linearity test: both CPU times (the big run `times` the small one's size). */
export function linearMessage(name: string, t: { small: number; big: number }, times = 4): string {
  return `${name}: ${t.small.toFixed(2)} ms CPU at n, ${t.big.toFixed(2)} ms at ${times}n`;
}

/**
 * For the audit reader's linearity tests: the least CPU times (cpuTimes, 7 runs each) of `run` on
 * `make(16,000)` and `make(128,000)` characters, the bound the big one must stay under (24 times
 * the small one, or 10 ms: a linear reading takes ~8x, a quadratic one ~64x), and the message that
 * names both.
 */
export function eightfold(name: string, make: (n: number) => string, run: (text: string) => unknown): { big: number; bound: number; message: string } {
  const [small, big] = [make(16_000), make(128_000)];
  const t = cpuTimes(
    () => run(small),
    () => run(big),
    7,
  );
  return { big: t.big, bound: Math.max(24 * t.small, 10), message: linearMessage(name, t, 8) };
}
