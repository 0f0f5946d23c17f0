import { serveJobs } from '../../../core/workers-side.js';
import type { GrepJob, RipgrepRequest } from './grep.js';
import { reportProgressTo } from './grep-scan.js';
import { searchBundle } from './grep-search.js';
import { parseScan, type RipgrepScan } from './ripgrep.js';

/**
 * grep_files' worker thread (see grepFiles): runs searchBundle with the client's regex off the
 * server's event loop, reporting progress per regex run so a pattern stuck on one line is seen and
 * ended. rg is run by the main thread (it owns every child process); its output is moved here and
 * read here.
 */
serveJobs(async (job: GrepJob, ctx) => {
  reportProgressTo(ctx.progress);
  const scan = async (request: RipgrepRequest): Promise<RipgrepScan | null> => {
    const data = (await ctx.request(request)) as Uint8Array | null;
    return data ? parseScan(Buffer.from(data.buffer, data.byteOffset, data.byteLength)) : null;
  };
  return { value: await searchBundle(job.root, job.options, job.engine, scan) };
});
