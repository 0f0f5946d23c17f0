/**
 * How a debugkit answer is read for the people watching: where the program stopped, the source
 * around it, the variables that changed, the stack, what replay did, a bundle's findings, a time
 * travel timeline. One home for both views: the live page's server side (src/server/live.ts) calls
 * these functions, and the MCP Apps view (src/mcp/app-view.ts) carries their source text inside
 * its page. So each function here is whole in itself: it uses no import, no module-level value,
 * and no function but the others declared here.
 */

/** Where an answer says the program stopped. */
export interface AnswerStop {
  file: string;
  line: number;
  function?: string;
}

/** What the views show of one answer; every part is there only when the answer holds it. */
export interface AnswerView {
  failed: boolean;
  /** The answer's text, its first 4,000 characters. */
  text: string;
  stop?: AnswerStop & { reason?: string; position?: string; state?: string };
  /** Lines around the stop as the answer gives them, `current` the index of the stop's line when it is marked. */
  source?: { lines: string[]; current?: number };
  /** Variables whose value changed since the previous stop (the debugger's `changed`). */
  changed?: Array<{ name: string; value: string }>;
  /** The frame's variables (Python's `locals`). */
  variables?: Array<{ name: string; value: string; type?: string }>;
  stack?: Array<{ function: string; file?: string; line?: number }>;
  /** What replaying a mock set did: at a stop (since the previous one) or over a whole run. */
  replay?: { set?: string; replayed: number; missed: number; misses: string[]; unused?: number; unusedNames?: string[]; reused?: number; fellBack?: number; success?: boolean };
  /** A support bundle's findings, worst first. */
  bundle?: { healthy: boolean; findings: Array<{ kind: string; text: string }>; next: string[] };
  /** A recorded session's positions (time travel), oldest first. */
  timeline?: Array<{ id: string; where: string; insn?: number; checkpoint?: number; bookmark?: string; changed: number }>;
}

/**
 * The first place in an answer that says where a program is stopped: an object with a line and a
 * file (the debugger's and Python's stops, gdb's MI frames parsed to JSON), or a gdb MI frame in
 * text (`frame={...,func="main",...,file="prog.c",...,line="12"}`). Bounded: the walk looks at no
 * more than 2,000 values, 8 deep, and at the first 4,000 characters of a frame in text.
 */
export function findStop(value: unknown): AnswerStop | undefined {
  let budget = 2000;
  const fromText = (text: string): AnswerStop | undefined => {
    const at = text.indexOf('frame={');
    if (at < 0) return undefined;
    const frame = text.slice(at, at + 4000);
    const file = /\bfile="([^"]+)"/.exec(frame)?.[1];
    const line = /\bline="(\d+)"/.exec(frame)?.[1];
    const fn = /\bfunc="([^"]*)"/.exec(frame)?.[1];
    return file && line ? { file: file.slice(0, 500), line: Number(line), ...(fn ? { function: fn.slice(0, 200) } : {}) } : undefined;
  };
  const walk = (v: unknown, depth: number): AnswerStop | undefined => {
    if (budget-- <= 0 || depth > 8) return undefined;
    if (typeof v === 'string') return fromText(v);
    if (!v || typeof v !== 'object') return undefined;
    if (!Array.isArray(v)) {
      const o = v as Record<string, unknown>;
      const line = typeof o.line === 'number' ? o.line : typeof o.line === 'string' && /^\d+$/.test(o.line) ? Number(o.line) : undefined;
      const source = o.source as { path?: unknown } | undefined;
      const file = [o.file, o.fullname, o.path, source?.path].find((f): f is string => typeof f === 'string' && f.length > 0);
      if (line !== undefined && file !== undefined) {
        const fn = [o.function, o.func, o.name].find((f): f is string => typeof f === 'string' && f.length > 0);
        return { file: file.slice(0, 500), line, ...(fn ? { function: fn.slice(0, 200) } : {}) };
      }
    }
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      const found = walk(child, depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  return walk(value, 0);
}

/**
 * What the views show of a tool's result (`{content, structuredContent, isError}` as the agent got
 * it): each part read from the shapes debugkit's tools answer with, bounded (30 frames, 50
 * variables, 20 misses, 15 findings, 200 positions, 200 characters a value).
 */
export function readAnswer(result: unknown): AnswerView {
  const cut = (v: unknown, max = 200): string => {
    const s = typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v);
    return s.length > max ? `${s.slice(0, max)}…` : s;
  };
  const obj = (v: unknown): Record<string, unknown> | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
  const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const strings = (v: unknown, max: number): string[] =>
    Array.isArray(v)
      ? v
          .filter((s): s is string => typeof s === 'string')
          .slice(0, max)
          .map((s) => cut(s, 400))
      : [];

  const r = obj(result) ?? {};
  const view: AnswerView = {
    failed: r.isError === true,
    text: (Array.isArray(r.content) ? r.content : [])
      .map((c) => obj(c))
      .filter((c) => c?.type === 'text' && typeof c.text === 'string')
      .map((c) => c!.text as string)
      .join('\n')
      .slice(0, 4000),
  };
  const s = obj(r.structuredContent);
  if (!s) return view;
  // gdb's answers hold the stop under content (`{type, content: {stopped: {reason, frame}}}`); the others at the top.
  const inner = obj(s.content) ?? s;

  // A trace's positions are where the program was, not where it is stopped.
  const stop = Array.isArray(s.positions) ? undefined : findStop(s);
  if (stop) {
    const stopped = obj(inner.stopped);
    const reason = [s.reason, stopped?.reason].find((x): x is string => typeof x === 'string' && x.length > 0);
    const fn = stop.function ?? (typeof s.function === 'string' ? s.function : undefined);
    view.stop = {
      ...stop,
      ...(fn ? { function: cut(fn) } : {}),
      ...(reason ? { reason: cut(reason) } : {}),
      ...(typeof s.position === 'string' ? { position: cut(s.position, 40) } : {}),
      ...(typeof s.state === 'string' ? { state: cut(s.state, 40) } : typeof s.status === 'string' ? { state: cut(s.status, 40) } : {}),
    };
  }

  // The debugger gives its source as lines (">12 code"), Python as one text ("-> 12  code").
  const sourceLines = Array.isArray(s.source)
    ? strings(s.source, 40)
    : typeof s.source === 'string'
      ? s.source
          .split('\n')
          .slice(0, 40)
          .map((l) => cut(l, 400))
      : [];
  if (sourceLines.length > 0) {
    const current = sourceLines.findIndex((l) => l.startsWith('>') || l.startsWith('->'));
    view.source = { lines: sourceLines, ...(current >= 0 ? { current } : {}) };
  }

  const changed = obj(s.changed);
  if (changed)
    view.changed = Object.entries(changed)
      .slice(0, 50)
      .map(([name, value]) => ({ name: cut(name, 80), value: cut(value) }));
  const locals = obj(s.locals);
  if (locals) {
    view.variables = Object.entries(locals)
      .slice(0, 50)
      .map(([name, v]) => {
        const o = obj(v);
        const type = typeof o?.type === 'string' ? cut(o.type, 80) : undefined;
        return { name: cut(name, 80), value: cut(o && 'repr' in o ? o.repr : v), ...(type ? { type } : {}) };
      });
  }

  // The frames: the debugger's `frames`, Python's `stack`, else the first list of frames in an MI result (objects with a `func`).
  let looked = 0;
  const findFrames = (v: unknown, depth: number): unknown[] | undefined => {
    if (looked++ > 2000 || depth > 8 || !v || typeof v !== 'object') return undefined;
    if (Array.isArray(v) && v.length > 0 && v.every((f) => obj(f) && ('func' in f || 'function' in f))) return v;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      const found = findFrames(child, depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  const frames = Array.isArray(s.frames) ? s.frames : Array.isArray(s.stack) ? s.stack : Array.isArray(s.positions) ? undefined : findFrames(s, 0);
  if (frames) {
    view.stack = frames.slice(0, 30).map((f) => {
      const o = obj(f) ?? {};
      const fn = [o.function, o.func, o.name].find((x): x is string => typeof x === 'string') ?? '??';
      const file = [o.file, o.fullname, obj(o.source)?.path].find((x): x is string => typeof x === 'string');
      const line = num(o.line) ?? (typeof o.line === 'string' && /^\d+$/.test(o.line) ? Number(o.line) : undefined);
      return { function: cut(fn), ...(file ? { file: cut(file, 500) } : {}), ...(line !== undefined ? { line } : {}) };
    });
  }

  // Replay at a stop ({set, replayed, missed, misses}), or over a run (keploy_mock_test's and keploy_mock_record's answers).
  const atStop = obj(s.mocks);
  if (atStop && num(atStop.replayed) !== undefined) {
    view.replay = {
      ...(typeof atStop.set === 'string' ? { set: cut(atStop.set, 120) } : {}),
      replayed: num(atStop.replayed)!,
      missed: num(atStop.missed) ?? 0,
      misses: strings(atStop.misses, 20),
      ...(num(atStop.fellBack) ? { fellBack: num(atStop.fellBack) } : {}),
    };
  } else if (num(s.mocksReplayed) !== undefined || num(s.mocksMissed) !== undefined) {
    view.replay = {
      replayed: num(s.mocksReplayed) ?? 0,
      missed: num(s.mocksMissed) ?? 0,
      misses: strings(s.misses, 20),
      ...(num(s.mocksUnused) ? { unused: num(s.mocksUnused), unusedNames: strings(s.unusedMocks, 20) } : {}),
      ...(num(s.mocksReused) ? { reused: num(s.mocksReused) } : {}),
      ...(num(s.mocksFellBack) ? { fellBack: num(s.mocksFellBack) } : {}),
      ...(typeof s.success === 'boolean' ? { success: s.success } : {}),
    };
  }

  // bundle_summary: each section's items, worst first.
  if (typeof s.healthy === 'boolean' && obj(s.pods)) {
    const findings: Array<{ kind: string; text: string }> = [];
    const items = (section: unknown): Array<Record<string, unknown>> => {
      const list = obj(section)?.items;
      return Array.isArray(list) ? list.map((i) => obj(i) ?? {}) : [];
    };
    for (const p of items(s.pods))
      findings.push({
        kind: 'pod',
        text: `${cut(p.pod, 120)}: ${cut(p.phase, 40)}${p.ready === false ? ', not ready' : ''}, ${num(p.restarts) ?? 0} restarts${Array.isArray(p.reasons) && p.reasons.length ? ` (${strings(p.reasons, 5).join(', ')})` : ''}`,
      });
    for (const w of items(s.workloads)) findings.push({ kind: 'workload', text: `${cut(w.kind, 40)} ${cut(w.name, 120)}: ${cut(w.problem)}` });
    for (const n of items(s.nodes)) findings.push({ kind: 'node', text: `${cut(n.node, 120)}: ${strings(n.problems, 5).join(', ')}` });
    for (const e of items(s.warning_events)) findings.push({ kind: 'warning', text: `${cut(e.reason, 80)} x${num(e.count) ?? 1}: ${cut(e.message)}` });
    for (const l of items(s.log_errors)) findings.push({ kind: 'log', text: `${cut(l.file, 160)}: ${cut(l.line)}` });
    view.bundle = { healthy: s.healthy, findings: findings.slice(0, 15), next: strings(s.next, 10) };
  }

  // debugger_export_trace as JSON: the positions of a recorded session.
  if (Array.isArray(s.positions)) {
    view.timeline = s.positions.slice(-200).map((p) => {
      const o = obj(p) ?? {};
      const file = typeof o.file === 'string' ? o.file : undefined;
      const where = `${typeof o.function === 'string' ? o.function : '??'}${file ? ` ${file}:${num(o.line) ?? '?'}` : ''}`;
      return {
        id: cut(o.id, 40),
        where: cut(where),
        ...(num(o.insn) !== undefined ? { insn: num(o.insn) } : {}),
        ...(num(o.checkpoint) !== undefined ? { checkpoint: num(o.checkpoint) } : {}),
        ...(typeof o.bookmark === 'string' ? { bookmark: cut(o.bookmark, 80) } : {}),
        changed: Object.keys(obj(o.changed) ?? {}).length,
      };
    });
  }
  return view;
}

/**
 * The functions above as the text of a script, for a page that cannot import them (the MCP Apps
 * view is one self-contained HTML resource): `findStop` and `readAnswer` defined at its top level.
 * `__name` is what a bundler keeping function names (tsx, in tests) may call in their text.
 */
export function answerReaderSource(): string {
  return ['const __name = (f) => f;', findStop.toString(), readAnswer.toString()].join('\n').replace(/<\/(script)/gi, '<\\/$1');
}
