import { serveJobs } from '../core/workers-side.js';
import { redact } from './audit.js';

/** The audit's redaction thread (audit.ts redactForAudit): a record's arguments with much text are redacted here, never on the event loop. */
serveJobs((job: { value: unknown }) => Promise.resolve({ value: redact(job.value) }));
