import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { BundlesContext } from '../context.js';
import type { grepFiles } from '../files/grep.js';
import { bundlePath, split } from './common.js';

const grepInput = {
  pattern: z.string().min(1).describe('A JavaScript regex, matched line by line; a leading (?i) is taken'),
  path: bundlePath.default('/'),
  recursive: z.boolean().default(true),
  glob_pattern: z.string().nullable().default(null).describe('Only files whose name matches, e.g. "*.log" or "**/*.json"'),
  case_sensitive: z.boolean().default(false),
  max_results: z.number().int().min(1).max(100_000).default(200).describe('Most matching lines (default 200)'),
  max_results_per_file: z.number().int().min(1).nullable().default(null),
};
const grepOutput = {
  matches: z.array(z.object({ path: z.string(), line_number: z.number(), line: z.string() })),
  metadata: z.object({
    pattern: z.string(),
    path: z.string(),
    glob_pattern: z.string().nullable(),
    total_matches: z.number(),
    files_searched: z.number(),
    recursive: z.boolean(),
    case_sensitive: z.boolean(),
    truncated: z.boolean(),
  }),
  files_truncated: z.array(z.string()),
  binary_files_skipped: z.number(),
};

export function grepFilesTool({ workspace, config }: BundlesContext): ToolSpec<typeof grepInput, typeof grepOutput> {
  const stallMs = config?.bundles.grepTimeoutMs;
  return {
    name: 'grep_files',
    title: 'Search the bundle',
    description:
      "Finds lines matching a pattern in the bundle's files (like grep -rn), optionally only in files matching a glob. Binary files are skipped. " +
      "Lines are 1-based, as read_file's start_line. Results are capped (truncated: true).",
    input: grepInput,
    output: grepOutput,
    annotations: { readOnlyHint: true, openWorldHint: false },
    // Off the event loop, within a time bound (grep.ts): a pattern that runs too long is answered as such.
    run: async (args, call) => {
      const { grepFiles } = await import('../files/grep.js');
      return split(
        fitGrep(
          await grepFiles(workspace.current(call.client.owner).root, args, {
            ...(stallMs ? { stallMs } : {}),
            signal: call.signal,
            owner: call.client.principal?.id ?? call.client.owner,
          }),
        ),
      );
    },
  };
}

/** Characters of matches one grep_files answer holds (about 8k tokens). */
export const GREP_MAX_TEXT = 32_000;

type GrepAnswer = Awaited<ReturnType<typeof grepFiles>>;

/**
 * Keeps a grep answer within budget: whole files' matches while they fit (a file's block cut at a
 * line), the contract's metadata with truncated: true, and how to narrow. The search itself is
 * grep.ts's; this only cuts what it found.
 */
export function fitGrep(result: GrepAnswer, budget = GREP_MAX_TEXT): GrepAnswer {
  if (result.text.length <= budget) return result;
  const header = result.text.slice(0, result.text.indexOf('\n\n'));
  const blocks: string[] = [];
  let used = header.length;
  let shown = 0;
  let i = 0;
  const matches = result.matches;
  while (i < matches.length) {
    const file = matches[i]!.path;
    const lines: string[] = [];
    let size = file.length + 20;
    for (; i < matches.length && matches[i]!.path === file; i++) {
      const line = `${String(matches[i]!.line_number).padStart(4)} | ${matches[i]!.line}`;
      if (used + size + line.length + 1 > budget) break;
      lines.push(line);
      size += line.length + 1;
    }
    if (lines.length === 0) break;
    blocks.push(`**File: ${file}**\n\`\`\`\n${lines.join('\n')}\n\`\`\``);
    used += size;
    shown += lines.length;
    if (i < matches.length && matches[i]!.path === file) break; // this file was cut
  }
  const metadata = { ...result.metadata, truncated: true };
  const note =
    `Showing ${shown} of ${matches.length} matches (one answer holds ~${budget} characters of them; truncated). ` +
    `Narrow with path (a directory), glob_pattern (e.g. "*.log"), a more specific pattern, or max_results_per_file: 5 for a few per file.`;
  const text = [header, ...blocks, `Search metadata:\n\`\`\`json\n${JSON.stringify(metadata, null, 2)}\n\`\`\``, note].join('\n\n');
  return { ...result, matches: matches.slice(0, shown), metadata, text };
}
