import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Ajv2020 as Ajv } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_2025 } from './helpers/bundles.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { compileC, tempDir } from './helpers/programs.js';
import { PY_ROOT } from './helpers/python.js';

/**
 * The contract every tool keeps, walked from tools/list: for every tool, one call that succeeds
 * and at least one that fails, each valid against the tool's declared output schema (checked with
 * ajv here and by the SDK client itself, which has listed the tools and so validates every result).
 */

interface ListedTool {
  name: string;
  description?: string;
  inputSchema: object;
  outputSchema?: object;
}

type Args = Record<string, unknown>;
/** Arguments for one tool: a success and failures, computed when the tool's turn comes. */
type Plan = { ok: () => Args; fail: Array<() => Args> };

let root: string;
let dk: TestClient;
let tools: ListedTool[];
let upstream: Server;
const ajv = new Ajv({ strict: false, allErrors: true });
const state: { gdb?: string; py?: string; url?: string; sleeper?: number; bp?: number } = {};
let sleeper: ChildProcess | undefined;

const CALC = () => path.join(root, 'calculator.py');

/** In the order they run: a session is opened before the tools that use it, closed after them. */
const PLANS: Record<string, Plan> = {
  list_sessions: { ok: () => ({}), fail: [] },
  open: { ok: () => ({ program: 'basic' }), fail: [() => ({ program: 'no-such-program' }), () => ({ timeout: 'soon' })] },
  call: { ok: () => ({ id: state.gdb, command: 'break add' }), fail: [() => ({ id: 'no-such-session', command: 'bt' }), () => ({ id: state.gdb })] },
  gdb_wait: { ok: () => ({ id: state.gdb, timeout: 0.2 }), fail: [() => ({ id: 'no-such-session' })] },
  gdb_program_output: { ok: () => ({ id: state.gdb }), fail: [() => ({ id: 'no-such-session' }), () => ({ id: state.gdb, cursor: 'x' })] },
  close: { ok: () => ({ id: state.gdb }), fail: [() => ({ id: 'no-such-session' })] },

  python_start_session: { ok: () => ({ entry: CALC() }), fail: [() => ({ entry: path.join(root, 'missing.py') }), () => ({})] },
  python_set_breakpoints: {
    ok: () => ({ sessionId: state.py, file: CALC(), breakpoints: [{ line: 10 }] }),
    fail: [() => ({ sessionId: 'no-such-session', file: CALC(), breakpoints: [{ line: 10 }] }), () => ({ sessionId: state.py, file: CALC(), breakpoints: 'line 10' })],
  },
  python_set_function_breakpoints: {
    ok: () => ({ sessionId: state.py, names: ['divide'] }),
    fail: [() => ({ sessionId: 'no-such-session', names: ['divide'] })],
  },
  python_run_to_breakpoint: {
    ok: () => ({ sessionId: state.py, file: CALC(), line: 11 }),
    fail: [() => ({ sessionId: 'no-such-session', file: CALC(), line: 11 }), () => ({ sessionId: state.py, file: CALC(), line: -3 })],
  },
  python_get_session: { ok: () => ({ sessionId: state.py }), fail: [() => ({ sessionId: 'no-such-session' })] },
  python_inspect: { ok: () => ({ sessionId: state.py }), fail: [() => ({ sessionId: 'no-such-session' })] },
  python_evaluate: {
    ok: () => ({ sessionId: state.py, expression: 'x + y' }),
    fail: [() => ({ sessionId: state.py, expression: 'x +' }), () => ({ sessionId: 'no-such-session', expression: '1' })],
  },
  python_step: { ok: () => ({ sessionId: state.py }), fail: [() => ({ sessionId: 'no-such-session' }), () => ({ sessionId: state.py, kind: 'sideways' })] },
  python_get_output: { ok: () => ({ sessionId: state.py }), fail: [() => ({ sessionId: 'no-such-session' })] },
  python_continue: { ok: () => ({ sessionId: state.py }), fail: [() => ({ sessionId: 'no-such-session' })] },
  python_end_session: { ok: () => ({ sessionId: state.py }), fail: [() => ({ sessionId: 'no-such-session' })] },

  list_available_bundles: { ok: () => ({}), fail: [] },
  initialize_bundle: { ok: () => ({ source: path.join(root, 'bundle.tar.gz') }), fail: [() => ({ source: path.join(root, 'no-such-bundle.tar.gz') })] },
  kubectl: { ok: () => ({ command: 'get pods -A', json_output: false }), fail: [() => ({ command: 'delete pod x' }), () => ({ command: 'get pods', json_output: 'yes' })] },
  list_files: { ok: () => ({ path: '.' }), fail: [() => ({ path: 'no/such/dir' }), () => ({ path: '../..' })] },
  read_file: { ok: () => ({ path: 'version.yaml' }), fail: [() => ({ path: 'no/such/file' }), () => ({ path: '../../etc/passwd' })] },
  grep_files: { ok: () => ({ pattern: 'kube-system', max_results: 5 }), fail: [() => ({ pattern: '(' }), () => ({ pattern: 'x', path: '../..' })] },
  bundle_summary: { ok: () => ({}), fail: [] },

  keploy_list_mocks: { ok: () => ({}), fail: [() => ({ path: '../../..' })] },
  keploy_mock_record: {
    ok: () => ({ command: `node fetch.mjs ${state.url}`, path: 'keploy' }),
    fail: [() => ({ command: '/no/such/program', path: 'keploy-fail' }), () => ({ command: 42 })],
  },
  keploy_mock_test: {
    ok: () => ({ command: `node fetch.mjs ${state.url}`, path: 'keploy' }),
    fail: [() => ({ command: `node fetch.mjs ${state.url}`, path: 'keploy', mockName: 'no-such-set' })],
  },

  // kindly-debugger answers its own failures as JSON-RPC errors with its contract's codes (-32004 ...).
  debugger_launch: { ok: () => ({ program: 'basic' }), fail: [() => ({ program: 'no-such-program' }), () => ({ program: 'basic', args: 'x' })] },
  debugger_set_breakpoint: { ok: () => ({ address: 'add' }), fail: [() => ({ address: 'no_such_function_xyz' }), () => ({ address: 'add', session_id: 'nope' })] },
  debugger_continue: { ok: () => ({}), fail: [() => ({ session_id: 'nope' })] },
  debugger_step_forward: { ok: () => ({}), fail: [() => ({ count: 0 }), () => ({ session_id: 'nope' })] },
  debugger_last_change: { ok: () => ({ expression: 'sum' }), fail: [() => ({ expression: 'system("id")' })] },
  debugger_step_backward: { ok: () => ({}), fail: [() => ({ session_id: 'nope' })] },
  debugger_bookmark: { ok: () => ({ name: 'here' }), fail: [() => ({ name: '../x' })] },
  debugger_get_stack_trace: { ok: () => ({}), fail: [() => ({ session_id: 'nope' }), () => ({ max_frames: 0 })] },
  debugger_get_variables: { ok: () => ({ scope: 'local' }), fail: [() => ({ scope: 'everything' }), () => ({ frame: 99 })] },
  debugger_evaluate: { ok: () => ({ expression: '$pc' }), fail: [() => ({ expression: 'sum = 1' }), () => ({ expression: 'sum', frame: 99 })] },
  debugger_breakpoints: { ok: () => ({ delete: [state.bp] }), fail: [() => ({ delete: [999] }), () => ({ session_id: 'nope' })] },
  debugger_export_trace: { ok: () => ({ format: 'json' }), fail: [() => ({ format: 'pdf' }), () => ({ session_id: 'nope' })] },
  debugger_find_similar_bugs: {
    ok: () => ({ pattern_type: 'logic', search_path: 'artefacts', session_id: 'none' }),
    fail: [() => ({ pattern_type: 'crash', search_path: '../..' }), () => ({ pattern_type: 'crash' })],
  },
  debugger_interrupt: { ok: () => ({}), fail: [() => ({ session_id: 'nope' })] },
  debugger_detach: { ok: () => ({}), fail: [() => ({ session_id: 'nope' })] },
  debugger_attach: { ok: () => ({ pid: state.sleeper }), fail: [() => ({ pid: 999_999_999 }), () => ({ pid: -1 })] },
  debugger_quota_status: { ok: () => ({}), fail: [] },
  debugger_license_info: { ok: () => ({}), fail: [] },
  debugger_get_comprehensive_audit: { ok: () => ({}), fail: [() => ({ start_time: 'yesterday' })] },
};

beforeAll(async () => {
  root = tempDir('debugkit-contract-');
  compileC(root, 'basic');
  copyFileSync(path.join(PY_ROOT, 'src/calculator.py'), CALC());
  copyFileSync(BUNDLE_2025, path.join(root, 'bundle.tar.gz'));
  writeFileSync(path.join(root, 'fetch.mjs'), 'const r = await fetch(process.argv[2]); console.log(r.status, await r.text());\n');
  mkdirSync(path.join(root, 'bundles'));
  mkdirSync(path.join(root, 'artefacts'));
  const traceback =
    'Traceback (most recent call last):\n  File "app.py", line 9, in <module>\n    main()\n  File "app.py", line 6, in main\n    ratio(0)\n  File "app.py", line 3, in ratio\n    return 1 / n\nZeroDivisionError: division by zero\n';
  writeFileSync(path.join(root, 'artefacts', 'app.log'), `started\n${traceback}restarted\n${traceback}`);
  upstream = createServer((_req, res) => res.end('hello from upstream')).listen(0, '127.0.0.1');
  await new Promise((r) => upstream.once('listening', r));
  state.url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/greeting`;
  sleeper = spawn('sleep', ['300'], { stdio: 'ignore' }); // a running process for debugger_attach
  state.sleeper = sleeper.pid;
  // Output schemas listed (--output-schemas), so every result is checked against them (ajv and the SDK client).
  dk = await connectStdio({ root, args: ['--bundle-dir', path.join(root, 'bundles'), '--data-dir', path.join(root, 'data'), '--output-schemas'] });
  tools = (await dk.client.listTools()).tools as ListedTool[];
}, 60_000);

afterAll(async () => {
  await dk?.close();
  upstream?.close();
  sleeper?.kill('SIGKILL');
});

/** One call through the SDK client (which validates it), then checked against the schema with ajv. */
async function check(tool: ListedTool, args: Args) {
  let result: any;
  try {
    result = await dk.client.callTool({ name: tool.name, arguments: args });
  } catch (err) {
    // The debugger contract's own errors are JSON-RPC errors with its codes, by design.
    const code = (err as { code?: unknown }).code;
    if (tool.name.startsWith('debugger_') && typeof code === 'number' && code <= -32002 && code >= -32010) {
      return { isError: true, structured: undefined, text: `${code} ${(err as Error).message}` };
    }
    throw new Error(`${tool.name} ${JSON.stringify(args)}: the SDK client rejected the result: ${err instanceof Error ? err.message : err}`, { cause: err });
  }
  const text = (result.content as Array<{ type: string; text?: string }>).map((c) => c.text ?? '').join('');
  expect(text.length, `${tool.name}: a result always has text`).toBeGreaterThan(0);
  if (result.structuredContent !== undefined) {
    const validate = ajv.compile(tool.outputSchema ?? {});
    expect(validate(result.structuredContent), `${tool.name} ${JSON.stringify(args)}: ${ajv.errorsText(validate.errors)}`).toBe(true);
  } else if (!result.isError) {
    expect(tool.outputSchema, `${tool.name}: a success without structuredContent needs no output schema`).toBeUndefined();
  }
  return { isError: result.isError === true, structured: result.structuredContent, text };
}

describe('the tool contract, walked from tools/list', () => {
  it('has a plan for every listed tool (a new tool needs one here)', () => {
    const missing = tools.map((t) => t.name).filter((n) => !(n in PLANS));
    expect(missing).toEqual([]);
  });

  it('every tool: one success and its failures, all valid against the declared schema', async () => {
    const byName = new Map(tools.map((t) => [t.name, t]));
    const report: string[] = [];
    for (const [name, plan] of Object.entries(PLANS)) {
      const tool = byName.get(name);
      if (!tool) continue; // not served by this build; the test above names what is missing the other way
      for (const fail of plan.fail) {
        const args = fail();
        const r = await check(tool, args);
        // A failure is an error result, or (the Keploy contract's way) a result that says success: false.
        const failed = r.isError || r.structured?.success === false;
        expect(failed, `${name} ${JSON.stringify(args)} should fail: ${r.text}`).toBe(true);
        expect(r.text, `${name}: an error says what was wrong`).not.toMatch(/^\s*$|"code":\s*"invalid_type"/);
      }
      const args = plan.ok();
      const r = await check(tool, args);
      expect(r.isError, `${name} ${JSON.stringify(args)} should succeed: ${r.text}`).toBe(false);
      if (name === 'open') state.gdb = r.structured.content.id;
      if (name === 'python_start_session') state.py = r.structured.sessionId;
      if (name === 'debugger_set_breakpoint') state.bp = r.structured.number;
      report.push(`${name}: ok + ${plan.fail.length} failing`);
    }
    expect(report.length).toBe(tools.length);
  }, 240_000);

  it('a tool with no arguments refuses arguments of the wrong shape at the protocol level, and the server goes on', async () => {
    await expect(dk.client.callTool({ name: 'list_sessions', arguments: 'all' as never })).rejects.toThrow(/-32602|Invalid/);
    await expect(dk.client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/-32602|not found/);
    expect(
      (
        await check(
          tools.find((t) => t.name === 'list_sessions')!,
          {},
        )
      ).isError,
    ).toBe(false);
  });

  it('tools/list, every toolset on, as a client gets it by default: under 32,000 characters (about 8,000 tokens)', async () => {
    // Was 64,357 characters (42% output schemas, a 700-character date-time pattern, one session_id
    // description 17 times). Output schemas are listed only with --output-schemas.
    const plain = await connectStdio({ root, args: ['--bundle-dir', path.join(root, 'bundles')] });
    try {
      const listed = (await plain.client.listTools()).tools as ListedTool[];
      const chars = JSON.stringify({ tools: listed }).length;
      const full = JSON.stringify({ tools }).length;
      console.log(`tools/list: ${listed.length} tools, ${chars} characters (about ${Math.round(chars / 4)} tokens); with --output-schemas ${full}`);
      expect(listed.map((t) => t.name)).toEqual(tools.map((t) => t.name));
      expect(listed.filter((t) => t.outputSchema !== undefined).map((t) => t.name)).toEqual([]);
      // Nothing an agent reads is lost: each tool's description and input schema's fields are the full listing's.
      for (const t of listed) {
        const same = tools.find((f) => f.name === t.name)!;
        expect(t.description).toBe(same.description);
        expect(Object.keys((t.inputSchema as { properties?: object }).properties ?? {})).toEqual(Object.keys((same.inputSchema as { properties?: object }).properties ?? {}));
      }
      expect(chars, 'tools/list is over its budget (issue 19): say a new argument in fewer words, or tell it once where a tool family shares it').toBeLessThan(32_000);
      // With --output-schemas (opt-in): issue 22 put a replay summary on every Python run answer.
      expect(full).toBeLessThan(65_000);
    } finally {
      await plain.close();
    }
  });
});

describe('the one ceiling for every result', () => {
  it('cuts an answer over --max-result-tokens, flags it, says how to get the rest, and stays valid', async () => {
    const small = await connectStdio({ root, args: ['--toolsets', 'bundles', '--bundle-dir', path.join(root, 'bundles'), '--max-result-tokens', '1000', '--output-schemas'] });
    try {
      const listed = (await small.client.listTools()).tools as ListedTool[];
      await small.tool('initialize_bundle', { source: path.join(root, 'bundle.tar.gz') });
      const r = await small.client.callTool({ name: 'kubectl', arguments: { command: 'get pods -A -o yaml' } }); // about 8k tokens: the kubectl tool's own cut, over this ceiling
      expect(r.isError).toBeFalsy();
      expect(r._meta?.['debugkit/truncated']).toMatchObject({ limitTokens: 1000, originalTokens: expect.any(Number) });
      const texts = (r.content as Array<{ text: string }>).map((c) => c.text);
      expect(texts.at(-1)).toMatch(/^\[truncated: this answer had about \d+ tokens and was cut to the 1000-token ceiling; ask for less/);
      for (const t of texts.slice(0, -1)) expect(t.length).toBeLessThanOrEqual(4000);
      expect(JSON.stringify(r.structuredContent).length).toBeLessThanOrEqual(4000);
      const validate = ajv.compile(listed.find((t) => t.name === 'kubectl')!.outputSchema!);
      expect(validate(r.structuredContent), ajv.errorsText(validate.errors)).toBe(true);
    } finally {
      await small.close();
    }
  });
});
