import type { MiTuple } from '../../core/mi/parser.js';

/** Stream text beyond this is cut from one call's `output`: about 6k tokens, sent twice (text and structured content), well below the 25k ceiling. */
export const MAX_OUTPUT_CHARS = 24_000;

/** The most of each of the program's streams one answer carries (its end). */
export const PROGRAM_OUTPUT_PER_CALL = 4096;

/** What gdb said during one call (or between two calls): stream text and the last stop. */
export class CallCollector {
  private chunks: string[] = [];
  private size = 0;
  private cut = false;
  private stopped: MiTuple | undefined;

  addOutput(text: string): void {
    if (this.size >= MAX_OUTPUT_CHARS) {
      this.cut = true;
      return;
    }
    const room = MAX_OUTPUT_CHARS - this.size;
    const kept = text.length > room ? text.slice(0, room) : text;
    if (kept.length < text.length) this.cut = true;
    this.chunks.push(kept);
    this.size += kept.length;
  }

  setStopped(results: MiTuple): void {
    this.stopped = results;
  }

  /** The last stop so far (the call is not over). */
  get lastStop(): MiTuple | undefined {
    return this.stopped;
  }

  /** What was said; `command` (the call's own) picks the hint for narrowing a cut listing. */
  take(command = ''): { output: string; truncated: boolean; stopped?: MiTuple } {
    let output = this.chunks.join('');
    if (this.cut) output += `\n[debugkit: output truncated at ${MAX_OUTPUT_CHARS} characters; ${narrowingHint(command)}]\n`;
    return { output, truncated: this.cut, stopped: this.stopped };
  }
}

/** How to ask for less: symbol listings take a regular expression, values a member or a count. */
export function narrowingHint(command: string): string {
  const listing = /^\s*(?:-interpreter-exec\s+console\s+")?i(?:n|nf|nfo)?\s+(fu\w*|va\w*|ty\w*|mo\w*|sh\w*|sources?|sym\w*)/.exec(command);
  if (listing) {
    const what = listing[1]!.startsWith('fu') ? 'functions' : listing[1]!.startsWith('va') ? 'variables' : listing[1]!.startsWith('ty') ? 'types' : listing[1]!;
    return `narrow the listing with a regular expression, e.g. "info ${what} REGEX" ("info ${what} ^parse_" lists names that start with parse_)`;
  }
  return 'narrow the command, e.g. print a member or use x/N with a smaller N';
}
