import { serveJobs } from '../../../core/workers-side.js';
import { appendSetText, loadSetFile, type AppendJob, type LoadJob } from './load.js';
import { describeSetFile } from './scan.js';

/** The worker thread of describe.ts: one mock set per job, described for a listing (scan.ts), or loaded or extended for replay (load.ts). */
serveJobs(async (job: { op: 'describe'; file: string; shown?: string; maxBytes: number } | LoadJob | AppendJob, ctx) => {
  if (job.op === 'load') return { value: await loadSetFile(job, ctx) };
  if (job.op === 'append') return { value: await appendSetText(job, ctx) };
  return { value: await describeSetFile(job.file, job.maxBytes, ctx.progress, undefined, job.shown ?? job.file) };
});
