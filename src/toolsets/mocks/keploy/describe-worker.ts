import { serveJobs } from '../../../core/workers-side.js';
import { describeSetFile } from './scan.js';

/** The worker thread of describe.ts: one mock set described per job (scan.ts). */
serveJobs(async (job: { file: string; maxBytes: number }, ctx) => ({ value: await describeSetFile(job.file, job.maxBytes, ctx.progress) }));
