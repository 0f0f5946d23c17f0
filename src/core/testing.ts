import { serveJobs } from './workers-side.js';

/** A worker module for core/workers.test.ts: a job that burns CPU for `ms`, or one that waits `ms` without using any. */
serveJobs(async (job: { op: 'spin' | 'sleep'; ms: number }, ctx) => {
  if (job.op === 'sleep') {
    await new Promise((resolve) => setTimeout(resolve, job.ms));
    return { value: 'slept' };
  }
  const end = performance.now() + job.ms;
  while (performance.now() < end) ctx.progress();
  return { value: 'spun' };
});
