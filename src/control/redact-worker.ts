import { serveJobs } from '../core/workers-side.js';
import { redact } from './audit.js';

/**
 * The audit's redaction thread (audit.ts redactForAudit): a record's arguments with much text are
 * read from their JSON and redacted here, never on the event loop.
 */
serveJobs((job: { json: string; max?: number; code?: boolean }) =>
  Promise.resolve({ value: redact(JSON.parse(job.json), { inputLength: job.json.length, code: job.code === true, ...(job.max !== undefined ? { max: job.max } : {}) }) }),
);
