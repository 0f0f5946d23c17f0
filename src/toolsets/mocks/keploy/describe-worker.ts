import { serveJobs } from '../../../core/workers-side.js';
import { appendSetText, loadSetFile, newSetText, type AppendJob, type LoadJob, type WriteJob } from './load.js';
import { describeSetFile } from './scan.js';

/** The worker thread of describe.ts: one mock set per job, described for a listing (scan.ts), loaded or extended for replay, or written new (load.ts). */
serveJobs(async (job: { op: 'describe'; file: string; shown?: string; maxBytes: number } | LoadJob | AppendJob | WriteJob, ctx) => {
  if (job.op === 'load') return { value: await loadSetFile(job, ctx) };
  if (job.op === 'append') return { value: await appendSetText(job, ctx) };
  if (job.op === 'write') return { value: await newSetText(job, ctx) };
  return { value: await describeSetFile(job.file, job.maxBytes, ctx.progress, undefined, job.shown ?? job.file) };
});
