import { describe, expect, it } from 'vitest';
import { findStop } from '../ui/answer.js';
import { LiveView } from './live.js';

describe('findStop', () => {
  it("reads a stop from gdb's MI frame (JSON or text), the debugger's and Python's stops", () => {
    expect(findStop({ type: 'ok', content: { stopped: { frame: { func: 'main', file: 'a.c', fullname: '/x/a.c', line: '12' } } } })).toEqual({ file: 'a.c', line: 12, function: 'main' });
    expect(findStop('*stopped,reason="end-stepping-range",frame={addr="0x1",func="add",args=[],file="b.c",fullname="/x/b.c",line="7"}')).toEqual({ file: 'b.c', line: 7, function: 'add' });
    expect(findStop({ stop: { function: 'f', file: '/p/m.py', line: 3 } })).toEqual({ file: '/p/m.py', line: 3, function: 'f' });
    expect(findStop({ frames: [{ name: 'handler', source: { path: '/srv/app.py' }, line: 40 }] })).toEqual({ file: '/srv/app.py', line: 40, function: 'handler' });
  });

  it('finds nothing where nothing stopped, and gives up on a value too big to walk', () => {
    expect(findStop({ type: 'ok', content: { output: 'Breakpoint 1 at 0x1172: file basic.c, line 12.' } })).toBeUndefined();
    const wide = { items: Array.from({ length: 5000 }, (_, i) => ({ i })), last: { file: 'z.c', line: 1 } };
    expect(findStop(wide)).toBeUndefined();
  });
});

describe('LiveView', () => {
  it("shows a key its own sessions and calls only; a key that sees all sees every key's; the stop stays with the session", () => {
    const view = new LiveView();
    view.record({ key: 'a', tool: 'call', toolset: 'gdb', session: 's1', ok: true, ms: 5, result: { stopped: { frame: { file: 'a.c', line: '3' } } } });
    view.record({ key: 'a', tool: 'call', toolset: 'gdb', session: 's1', ok: true, ms: 2, result: { output: 'locals' } });
    view.record({ key: 'b', tool: 'call', toolset: 'gdb', session: 's2', ok: false, ms: 1, result: { error: 'x' } });
    const at = new Date();
    const sessions = [
      { toolset: 'gdb', id: 's1', owner: 'http:1', key: 'a', created: at, lastUsed: at },
      { toolset: 'gdb', id: 's2', owner: 'http:2', key: 'b', created: at, lastUsed: at },
    ];
    const mine = view.state({ key: 'a', seesAll: false }, sessions);
    expect(mine.sessions.map((s) => [s.id, s.stop, s.last?.answer])).toEqual([['s1', { file: 'a.c', line: 3 }, '{"output":"locals"}']]);
    view.record({ key: 'a', tool: 'step_backward', toolset: 'gdb', session: 's1', ok: true, ms: 1, result: { stop: { file: 'a.c', line: 2 } } });
    expect(view.state({ key: 'a', seesAll: false }, sessions).sessions[0]!.trail).toEqual([
      { file: 'a.c', line: 3 },
      { file: 'a.c', line: 2 },
    ]);
    expect(mine.calls.map((c) => c.key)).toEqual(['a', 'a']);
    expect(view.state({ key: 'op', seesAll: true }, sessions).sessions.map((s) => s.id)).toEqual(['s1', 's2']);
  });
});

describe('LiveView.sourceAround', () => {
  it('shows the lines around a stop in a file inside the root, and nothing for a file outside it or a link leading out', async () => {
    const { mkdtempSync, writeFileSync, symlinkSync, rmSync } = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const root = mkdtempSync(path.join(os.tmpdir(), 'debugkit-live-src-'));
    try {
      writeFileSync(path.join(root, 'prog.c'), Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join('\n'));
      symlinkSync('/etc/passwd', path.join(root, 'leak.c'));
      const view = new LiveView();
      expect(await view.sourceAround(root, { file: path.join(root, 'prog.c'), line: 10 })).toEqual({ first: 7, lines: ['line 7', 'line 8', 'line 9', 'line 10', 'line 11', 'line 12', 'line 13'] });
      expect(await view.sourceAround(root, { file: 'prog.c', line: 1 })).toEqual({ first: 1, lines: ['line 1', 'line 2', 'line 3', 'line 4'] });
      expect(await view.sourceAround(root, { file: '/etc/passwd', line: 1 })).toBeUndefined();
      expect(await view.sourceAround(root, { file: path.join(root, 'leak.c'), line: 1 })).toBeUndefined();
      expect(await view.sourceAround(root, { file: path.join(root, '../../etc/passwd'), line: 1 })).toBeUndefined();
      expect(await view.sourceAround(root, { file: path.join(root, 'prog.c'), line: 500 })).toBeUndefined();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('Debugkit.liveState', () => {
  it('works a key’s answer out at most once per half second however often it is asked, and each key its own', async () => {
    const { mkdtempSync } = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const { defaultConfig } = await import('../config.js');
    const { createLogger } = await import('../mcp/log.js');
    const { toolsetFactories } = await import('../toolsets/index.js');
    const { createDebugkit } = await import('./createServer.js');
    const asked: string[] = [];
    const config = defaultConfig({ toolsets: ['gdb'], root: mkdtempSync(path.join(os.tmpdir(), 'debugkit-live-state-')), logLevel: 'error' });
    const dk = createDebugkit(config, {
      toolsets: toolsetFactories,
      log: createLogger('error'),
      hooks: {
        liveControl: (principal) => {
          asked.push(principal.id);
          return Promise.resolve({ keys: [] });
        },
      },
    });
    try {
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => dk.liveState({ id: i % 2 ? 'a' : 'b' })));
      expect(answers.every((a) => a.control !== undefined)).toBe(true);
      expect(asked.sort()).toEqual(['a', 'b']);
    } finally {
      await dk.close();
    }
  });
});

describe('the live view under attack 18an (a2)', () => {
  it('a2-2: source lines are redacted as answers are', async () => {
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const { redactValue } = await import('../mcp/redact-answers.js');
    const root = mkdtempSync(path.join(os.tmpdir(), 'debugkit-live-redact-'));
    try {
      writeFileSync(path.join(root, 'app.py'), 'import os\nDB_PASSWORD=Hunter2SuperSecret\nprint(1)\n');
      const view = new LiveView();
      const shown = await view.sourceAround(root, { file: 'app.py', line: 3 }, (line) => String(redactValue(line)));
      expect(shown?.lines).toEqual(['import os', 'DB_PASSWORD=[redacted DB_PASSWORD]', 'print(1)']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("a2-3: two keys' sessions of the same chosen name each show their own stop", () => {
    const view = new LiveView();
    view.record({ key: 'a', tool: 'debugger_step_forward', toolset: 'debugger', session: 'default', ok: true, ms: 1, result: { stop: { file: 'a.c', line: 7 } } });
    view.record({ key: 'c', tool: 'debugger_step_forward', toolset: 'debugger', session: 'default', ok: true, ms: 1, result: { stop: { file: 'c.c', line: 1 } } });
    view.record({ key: 'a', tool: 'debugger_step_forward', toolset: 'debugger', session: 'default', ok: true, ms: 1, result: { stop: { file: 'a.c', line: 8 } } });
    const at = new Date();
    const sessions = ['a', 'c'].map((key) => ({ toolset: 'debugger', id: 'default', owner: `http:${key}`, key, created: at, lastUsed: at }));
    const shown = view.state({ key: 'op', seesAll: true }, sessions).sessions;
    expect(shown.map((s) => [s.key, s.stop?.file, s.stop?.line, s.trail?.length])).toEqual([
      ['a', 'a.c', 8, 2],
      ['c', 'c.c', 1, 1],
    ]);
  });

  it("a2-5: one key's many calls never push another key's out of the view", () => {
    const view = new LiveView();
    view.record({ key: 'b', tool: 'call', ok: true, ms: 1, result: {} });
    for (let i = 0; i < 600; i++) view.record({ key: 'a', tool: 'list_sessions', ok: true, ms: 1, result: {} });
    expect(view.state({ key: 'b', seesAll: false }, []).calls.map((c) => c.key)).toEqual(['b']);
    expect(view.state({ key: 'op', seesAll: true }, []).calls.some((c) => c.key === 'b')).toBe(false); // the operator sees the newest 100 of all
    expect(view.state({ key: 'a', seesAll: false }, []).calls).toHaveLength(100);
  });
});
