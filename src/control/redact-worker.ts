import { serveJobs } from '../core/workers-side.js';
import { AuditRedactionError, redact, type KeepWhole, type RunsCode } from './audit.js';

/**
 * The audit's redaction thread (audit.ts redactForAudit): a record's arguments with much text are
 * read from their JSON and redacted here, never on the event loop. Arguments whose record cannot
 * keep what the call runs whole are answered as `{ notWhole: why }` (others as `{ record }`), for the caller to refuse the call.
 */
serveJobs((job: { json: string; max?: number; code?: RunsCode; whole?: KeepWhole }) => {
  try {
    const value = redact(JSON.parse(job.json), {
      inputLength: job.json.length,
      code: job.code ?? false,
      ...(job.whole ? { whole: job.whole } : {}),
      ...(job.max !== undefined ? { max: job.max } : {}),
    });
    return Promise.resolve({ value: { record: value } });
  } catch (err) {
    if (err instanceof AuditRedactionError) return Promise.resolve({ value: { notWhole: err.message } });
    throw err;
  }
});
