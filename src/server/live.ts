import { readFileSync } from 'node:fs';
import { linesAround, type LinesAround } from '../core/source-lines.js';
import { fileURLToPath } from 'node:url';
import type { ServerResponse } from 'node:http';
import type { LiveSession } from '../mcp/toolset.js';
import { findStop, type AnswerStop } from '../ui/answer.js';

/**
 * The live view: what the agents a server serves are doing, for the people beside them. Every
 * tool call's end is recorded here (its tool, session, outcome, where the program stopped, the
 * start of its answer as the agent got it, redacted), beside the toolsets' live sessions; `/ui`
 * on `debugkit serve` shows it, polling `/ui/state` with the viewer's API key. A key sees its own
 * sessions and calls; a key holding every scope (`*`, the operator's) sees every key's.
 */

/** Where a call's answer says the program stopped. */
export type LiveStop = AnswerStop;

export interface LiveCall {
  at: string;
  key: string;
  tool: string;
  toolset?: string;
  session?: string;
  ok: boolean;
  ms: number;
  stop?: LiveStop;
  /** The start of the answer's structured content, as JSON (already redacted as the agent got it). */
  answer: string;
}

export interface LiveState {
  you: { key: string; seesAll: boolean };
  now: string;
  /** Each session with its last call, where its program last stopped (the last call whose answer said), and the source around it. */
  sessions: Array<{ toolset: string; id: string; key: string; created: string; lastUsed: string; last?: LiveCall; stop?: LiveStop; source?: SourceLines; trail?: LiveStop[] }>;
  calls: LiveCall[];
}

/** Lines of a source file around a stop: the first line's number, and the lines (each cut to 200 characters). */
export type SourceLines = Pick<LinesAround, 'first' | 'lines'>;

/** Lines shown before and after the stop's line. */
const SOURCE_CONTEXT = 3;

/** Stops of a session shown in its trail (the newest). */
const TRAIL = 10;
/** Calls kept for the view per key (the newest). */
const KEPT_CALLS = 200;
/** Keys whose calls are kept (the most recently active). */
const KEPT_KEYS = 1000;
/** Calls one answer shows (the newest). */
const SHOWN_CALLS = 100;
/** Characters of an answer kept. */
const ANSWER_CHARS = 400;

export class LiveView {
  /** Each key's recent calls (its own ring: one key's calls never push another's out), the most recently active keys last. */
  private readonly calls = new Map<string, LiveCall[]>();
  /** Source excerpts kept, by file, line and the file's size and change time. */
  private readonly sources = new Map<string, LinesAround | null>();

  /**
   * The lines around `stop` in its file, when the file is inside `root` (core/source-lines: opened
   * as every file a client names is, read asynchronously, only the lines shown decoded), each
   * redacted as answers are (18an a2-2: a password in the source was shown in clear) and cut to
   * 200 characters.
   */
  async sourceAround(root: string, stop: LiveStop, redact: (line: string) => string = (line) => line): Promise<SourceLines | undefined> {
    const excerpt = await linesAround(root, stop.file, stop.line, { context: SOURCE_CONTEXT, maxLineChars: 800, cache: this.sources });
    return excerpt && { first: excerpt.first, lines: excerpt.lines.map((line) => redact(line).slice(0, 200)) };
  }

  record(call: Omit<LiveCall, 'stop' | 'answer' | 'at'> & { result: unknown }): void {
    const { result, ...rest } = call;
    const stop = findStop(result);
    let answer: string;
    try {
      answer = JSON.stringify(result ?? null).slice(0, ANSWER_CHARS);
    } catch {
      answer = '(not JSON)';
    }
    const mine = this.calls.get(rest.key) ?? [];
    this.calls.delete(rest.key);
    this.calls.set(rest.key, mine);
    mine.push({ at: new Date().toISOString(), ...rest, ...(stop ? { stop } : {}), answer });
    if (mine.length > KEPT_CALLS) mine.splice(0, mine.length - KEPT_CALLS);
    if (this.calls.size > KEPT_KEYS) this.calls.delete(this.calls.keys().next().value!);
  }

  /** What `viewer` may see: its own key's sessions and calls, or every key's when it sees all. */
  state(viewer: { key: string; seesAll: boolean }, sessions: Array<LiveSession & { toolset: string }>): LiveState {
    const visible = (key: string) => viewer.seesAll || key === viewer.key;
    const calls = (viewer.seesAll ? [...this.calls.values()].flat() : [...(this.calls.get(viewer.key) ?? [])]).sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    const lastOf = new Map<string, LiveCall>();
    // Each session's stops in the order they came (a step back in time travel shows as an earlier line): the last TRAIL.
    const trailOf = new Map<string, LiveStop[]>();
    // A session is named by its key too: a debugger session's name is the client's choice ("default"), the same for many keys.
    for (const c of calls) {
      if (c.session === undefined || c.toolset === undefined) continue;
      const slot = `${c.key}\0${c.toolset}\0${c.session}`;
      lastOf.set(slot, c);
      if (!c.stop) continue;
      const trail = trailOf.get(slot) ?? [];
      trail.push(c.stop);
      if (trail.length > TRAIL) trail.shift();
      trailOf.set(slot, trail);
    }
    return {
      you: viewer,
      now: new Date().toISOString(),
      sessions: sessions
        .filter((s) => visible(s.key))
        .map((s) => {
          const last = lastOf.get(`${s.key}\0${s.toolset}\0${s.id}`);
          const trail = trailOf.get(`${s.key}\0${s.toolset}\0${s.id}`);
          const stop = trail?.at(-1);
          return {
            toolset: s.toolset,
            id: s.id,
            key: s.key,
            created: s.created.toISOString(),
            lastUsed: s.lastUsed.toISOString(),
            ...(last ? { last } : {}),
            ...(stop ? { stop, trail } : {}),
          };
        }),
      calls: calls.slice(-SHOWN_CALLS).reverse(),
    };
  }
}

const UI_DIR = fileURLToPath(new URL('../ui/', import.meta.url));

/** The page's files, read once: the page holds no data (that comes from /ui/state, with a key). */
const ASSETS: Record<string, { file: string; type: string }> = {
  '/ui': { file: 'live.html', type: 'text/html; charset=utf-8' },
  '/ui/live.mjs': { file: 'live.mjs', type: 'text/javascript; charset=utf-8' },
  '/ui/live.css': { file: 'live.css', type: 'text/css; charset=utf-8' },
  '/ui/icon.svg': { file: 'icon.svg', type: 'image/svg+xml' },
};
const loaded = new Map<string, Buffer>();

/**
 * What every answer under /ui carries: nothing but the server's own script, style and requests;
 * never framed; no referrer; nothing cached.
 */
export const UI_HEADERS: Record<string, string> = {
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
};

/** Serves a file of the page when `path` names one; false otherwise. */
export function serveUiAsset(res: ServerResponse, path: string): boolean {
  const asset = ASSETS[path === '/ui/' ? '/ui' : path];
  if (!asset) return false;
  let body = loaded.get(asset.file);
  if (!body) loaded.set(asset.file, (body = readFileSync(`${UI_DIR}${asset.file}`)));
  res.writeHead(200, { ...UI_HEADERS, 'Content-Type': asset.type, 'Content-Length': body.length });
  res.end(body);
  return true;
}
