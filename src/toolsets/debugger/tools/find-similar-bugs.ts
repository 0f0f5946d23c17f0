import { z } from 'zod';
import { resolveContained } from '../../../core/paths.js';
import { withText } from '../../../mcp/tools.js';
import type { CrashSignature } from '../control.js';
import { DebuggerRpcError } from '../errors.js';
import { distance, explain, makeSignature } from '../similar/signature.js';
import { findSession, sessionId, type DebuggerTool, defineTool } from './common.js';
import { clientKey } from '../../../core/sessions.js';
import { oneAtATime } from '../../../core/wait.js';

const MAX_MATCHES = 10;
const SCAN_BUDGET_MS = 20_000;

export const findSimilarBugsTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_find_similar_bugs',
    contractName: 'debugger/find_similar_bugs',
    title: 'Find similar bugs',
    description:
      'Rank earlier crashes (all debugkit saw) and artefacts under search_path (core dumps, sanitizer/valgrind reports, Python tracebacks) by signature closeness to this crash. pattern_type: crash (signals), memory (sanitizer, heap), logic (asserts, aborts, exceptions).',
    input: {
      pattern_type: z.enum(['crash', 'memory', 'logic']).default('crash'),
      search_path: z.string().max(4096).optional().describe('a directory under the workspace root to search for artefacts'),
      session_id: sessionId,
    },
    output: {
      reference: z.object({ signature: z.string(), source: z.string() }),
      matches: z.array(z.object({ signature: z.string(), source: z.string(), time: z.string(), distance: z.number(), why: z.string(), program: z.string().optional() })),
      considered: z.number(),
      truncated: z.string().optional(),
    },
    annotations: { readOnlyHint: true },
    async run({ pattern_type, search_path, session_id }, call) {
      const stored = await ctx.control.signatures.list(clientKey(call.client));
      const session = findSession(ctx, call, session_id);
      let reference: CrashSignature | undefined;
      if (session?.lastCrash)
        reference = makeSignature(
          session.lastCrash.signal,
          session.lastCrash.frames.map((f) => f.function),
          `session ${session_id}`,
          session.program,
        );
      const dir = search_path === undefined ? undefined : resolveContained(ctx.config.root, search_path, { what: 'search_path' });
      // A session that has not crashed has nothing to compare, whatever lies under search_path:
      // refused before any file is read (the scan ran first, then the call was refused: attack 18an Z6).
      // Without a session the artefacts found may be all there is to compare, so they are read.
      if (!reference && session) {
        throw new DebuggerRpcError('HISTORY_UNAVAILABLE', `session "${session_id}" has not crashed: continue to the crash first, then ask for similar bugs`, { session_id });
      }
      const candidates = [...stored];
      let truncated: string | undefined;
      if (dir !== undefined) {
        // The artefact scanner (core files, gdb batch runs) loads on the first search of a path.
        const { scanArtefacts, notReadMessage } = await import('../similar/artefacts.js');
        // One scan per key at a time (the next waits for it), and a scan ends with its call.
        const scan = await oneScanPerKey(clientKey(call.client), () => scanArtefacts(dir, ctx.config.root, ctx.config.gdb.path, Date.now() + SCAN_BUDGET_MS, call.signal));
        for (const sig of scan.signatures) candidates.push(sig);
        const cut = scan.cut ? `stopped after ${scan.scanned} files, ${scan.signatures.length} signatures or ${SCAN_BUDGET_MS / 1000} s: give a narrower search_path` : undefined;
        truncated = [cut, notReadMessage(scan)].filter(Boolean).join('; ') || undefined;
      }
      // With no session, the earlier crashes and the artefacts found are compared with the last of them.
      reference ??= candidates.at(-1);
      if (!reference) throw new DebuggerRpcError('NOT_ATTACHED', 'no crash to compare: attach or launch a program and run it to a crash', { session_id });
      const ref = reference;
      const ranked = candidates
        .filter((c) => c !== ref && c.id !== ref.id && c.id !== session?.lastCrashSignatureId && c.pattern === pattern_type && !(c.source === ref.source && c.time === ref.time))
        .map((c) => ({ c, d: distance(ref, c) }))
        .sort((a, b) => a.d - b.d);
      const matches = ranked.slice(0, MAX_MATCHES).map(({ c, d }) => {
        const m: { signature: string; source: string; time: string; distance: number; why: string; program?: string } = {
          signature: c.signature,
          source: c.source,
          time: c.time,
          distance: Math.round(d * 1000) / 1000,
          why: explain(ref, c),
        };
        if (c.program) m.program = c.program;
        return m;
      });
      if (ranked.length > MAX_MATCHES) truncated = [truncated, `${ranked.length - MAX_MATCHES} weaker matches not shown`].filter(Boolean).join('; ');
      const out: { reference: { signature: string; source: string }; matches: typeof matches; considered: number; truncated?: string } = {
        reference: { signature: ref.signature, source: ref.source },
        matches,
        considered: candidates.length,
      };
      if (truncated) out.truncated = truncated;
      const text = [`reference: ${ref.signature}`, ...matches.map((m, i) => `${i + 1}. d=${m.distance} ${m.signature} (${m.source}): ${m.why}`)].join('\n');
      return withText(out, matches.length ? text : `${text}\nno earlier ${pattern_type} bug to compare with`);
    },
  });

/** The scans of each key, chained: a key's scans run one after the other (its calls at once would each hold the server's time and gdb). */
const scansByKey = new Map<string, Promise<unknown>>();

function oneScanPerKey<T>(key: string, scan: () => Promise<T>): Promise<T> {
  return oneAtATime(scansByKey, key, scan);
}
