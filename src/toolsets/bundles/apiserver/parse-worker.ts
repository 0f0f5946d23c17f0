import { serveJobs } from '../../../core/workers-side.js';
import { parseJob, type ParseJob } from './parse.js';

/** The bundle API server's parse thread (loader.ts): one big resource file per job, parsed here so the server's event loop keeps answering (parse.ts parseJob). */
serveJobs(async (job: ParseJob, ctx) => ({ value: await parseJob(job, ctx) }));
