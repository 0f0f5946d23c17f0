// Long work as tasks (issue 23): the Tasks extension (io.modelcontextprotocol/tasks) on protocol
// 2026-07-28, driven by the real clients: the v2 SDK client with @modelcontextprotocol/ext-tasks, and
// raw JSON-RPC for what a client library hides (ownership, cancel, unknown ids). Keys come from the
// control plane's store, so a task belongs to a key and the audit sees the call inside it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, resultFromTaskOutcome, type RawClientDispatch } from '@modelcontextprotocol/ext-tasks/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttpModern, MODERN_PROTOCOL } from './helpers/client.js';
import { createKey, modernRpc, runCli, startNode, tempDataDir, type ModernRpcOptions, type Node } from './helpers/control.js';
import { isRunning, pidFrom, waitFor } from './helpers/procs.js';
import { mocksWorkspace } from './helpers/programs.js';

const CLIENT_INFO = { name: 'debugkit-tasks-test', version: '1.0.0' };

let root: string;
let data: Awaited<ReturnType<typeof tempDataDir>>;
let store: string[];
let node: Node;
let api: Server;
let apiPort: number;
let keyA: { key: string; id: string };
let keyB: { key: string; id: string };

beforeAll(async () => {
  root = mocksWorkspace('debugkit-tasks-');
  data = await tempDataDir();
  store = ['--data-dir', data.dir];
  keyA = await createKey(store, 'tasks-a', 'mocks,mocks:run');
  keyB = await createKey(store, 'tasks-b', 'mocks,mocks:run');
  node = await startNode([...store, '--root', root, '--toolsets', 'mocks']);
  api = createServer((req, res) => res.end(JSON.stringify({ step: req.url })));
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  apiPort = (api.address() as AddressInfo).port;
}, 60_000);

afterAll(async () => {
  await node?.stop();
  await new Promise((resolve) => api?.close(resolve));
  await data?.cleanup();
});

/** One 2026-07-28 request to the node as the test's client sends it, with or without the tasks extension in its capabilities. */
function rpc(key: string, method: string, params: Record<string, unknown>, options: ModernRpcOptions = {}): Promise<any> {
  return modernRpc(node.url, key, method, params, { clientInfo: CLIENT_INFO, ...options });
}

/** A command that writes its pid to `file` and then sleeps: the recorded program of a task that is cancelled. */
function sleeper(file: string): string {
  return `/bin/sh -c 'echo $$ > ${file}; exec sleep 120'`;
}

describe('tasks (io.modelcontextprotocol/tasks, 2026-07-28)', () => {
  it('the SDK client with ext-tasks at its default 60 s timeout: a 90 s recording completes through a task; the same call made plainly times out', async () => {
    const modern = await connectHttpModern(node.url, keyA.key);
    // The requester coordinator ext-tasks asks for on 2026-07-28 (the SDK client cannot send the
    // extension's wire shapes): each request is bound by the SDK's default timeout, as the SDK's own are.
    let requests = 0;
    const rawDispatch: RawClientDispatch = async (request, options) => {
      requests++;
      const { method, params } = request as { method: string; params: Record<string, unknown> };
      const timeout = AbortSignal.timeout(DEFAULT_REQUEST_TIMEOUT_MSEC);
      const answer = await rpc(keyA.key, method, params, { signal: options?.signal ? AbortSignal.any([options.signal, timeout]) : timeout });
      return answer.error ? { kind: 'error', error: answer.error } : { kind: 'result', result: answer.result };
    };
    const session = createTaskSessionFromClient(modern.client, {
      endpointId: 'debugkit-tasks-test',
      rawDispatch,
      v2RequestFraming: { protocolVersion: MODERN_PROTOCOL, clientInfo: CLIENT_INFO, clientCapabilities: {} },
    });
    try {
      const started = Date.now();
      const command = (set: string) => ({ command: `/usr/bin/python3 slow.py ${apiPort} 90`, path: set });
      // The same recording through the SDK's plain callTool: the client gives up after 60 s.
      const plain = modern.client.callTool({ name: 'keploy_mock_record', arguments: command('keploy-plain') }).then(
        () => 'answered',
        (err: unknown) => String(err),
      );
      const execution = await session.callTool('keploy_mock_record', command('keploy-slow'));
      expect(execution.kind).toBe('task');
      const seen: string[] = [];
      const { outcome } = await execution.settle({ onEvent: (event) => void seen.push(JSON.stringify(event).slice(0, 300)) });
      const result = resultFromTaskOutcome(outcome) as { isError?: boolean; structuredContent?: Record<string, unknown> };
      expect(Date.now() - started).toBeGreaterThan(DEFAULT_REQUEST_TIMEOUT_MSEC);
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ success: true, mockCount: 2, protocols: ['HTTP'] });
      expect(await plain).toMatch(/timed out/i);
      // Polled, not held: the client asked many times, and saw how the recording went as it ran.
      expect(requests).toBeGreaterThan(10);
      expect(seen.join('\n')).toMatch(/recording: 1 calls captured/);
    } finally {
      await session.close();
      await modern.close();
    }
  }, 180_000);

  it('a call that ends within the grace is answered as always, with or without the extension; a long call without it is never a task', async () => {
    const quick = await rpc(keyA.key, 'tools/call', { name: 'keploy_list_mocks', arguments: {} });
    expect(quick.result.resultType).toBe('complete');
    expect(quick.result.content[0].text).toBeTruthy();
    const plain = await rpc(keyA.key, 'tools/call', { name: 'keploy_mock_record', arguments: { command: '/bin/sleep 3', path: 'keploy-untasked' } }, { tasks: false });
    expect(plain.result).toMatchObject({ resultType: 'complete', structuredContent: { success: true, appExitCode: 0 } });
    expect(plain.result.taskId).toBeUndefined();
  }, 30_000);

  it("a task is its key's alone; its owner cancels it, the recorded program ends, and the audit holds the call", async () => {
    const pidFile = path.join(root, 'task-sleeper.pid');
    const created = await rpc(keyA.key, 'tools/call', { name: 'keploy_mock_record', arguments: { command: sleeper(pidFile), path: 'keploy-cancelled' } });
    expect(created.result, JSON.stringify(created.result).slice(0, 600)).toMatchObject({ resultType: 'task', status: 'working', ttlMs: expect.any(Number), pollIntervalMs: expect.any(Number) });
    const taskId: string = created.result.taskId;
    const pid = await pidFrom(pidFile);
    // Another key: the task does not exist for it, and it cannot stop it.
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
      const other = await rpc(keyB.key, method, { taskId, ...(method === 'tasks/update' ? { inputResponses: {} } : {}) });
      expect(other.error, method).toMatchObject({ code: -32602, message: expect.stringMatching(/^unknown task .*belongs to another key/) });
    }
    expect(isRunning(pid)).toBe(true);
    const polled = await rpc(keyA.key, 'tasks/get', { taskId });
    expect(polled.result).toMatchObject({ resultType: 'complete', taskId, status: 'working', statusMessage: expect.stringMatching(/recording|still working/) });
    // debugkit's tasks never ask for input: an update is acknowledged.
    expect((await rpc(keyA.key, 'tasks/update', { taskId, inputResponses: {} })).result).toMatchObject({ resultType: 'complete' });
    expect((await rpc(keyA.key, 'tasks/cancel', { taskId })).result).toMatchObject({ resultType: 'complete' });
    expect((await rpc(keyA.key, 'tasks/get', { taskId })).result).toMatchObject({ taskId, status: 'cancelled' });
    expect(await waitFor(() => !isRunning(pid), 15_000)).toBe(true);
    // The call inside the task was audited before it ran, under its key, and its end once it ended.
    let entries: any[] = [];
    const callOf = () => entries.find((e) => e.event === 'call' && e.key_id === keyA.id && JSON.stringify(e.args ?? {}).includes('task-sleeper'));
    const ended = await waitFor(
      () => callOf() !== undefined && entries.some((e) => e.event === 'result' && e.call_id === callOf().call_id),
      15_000,
      200,
      async () => {
        const out = await runCli(['audit', 'export', ...store]);
        entries = out.stdout
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l));
      },
    );
    expect(ended, JSON.stringify(entries.slice(-4))).toBe(true);
    expect(callOf()).toMatchObject({ tool: 'keploy_mock_record', transport: 'http' });
    // Its end says it was cancelled, as tasks/get does (attack 18ao c2-3: it was recorded "ok", error null).
    expect(entries.find((e) => e.event === 'result' && e.call_id === callOf().call_id)).toMatchObject({ outcome: 'cancelled', error: expect.stringMatching(/^cancelled: /) });
  }, 60_000);

  it('an unknown task id is an error that says so; so is a malformed one', async () => {
    const unknown = await rpc(keyA.key, 'tasks/get', { taskId: 'no-such-task' });
    expect(unknown.error).toMatchObject({ code: -32602, message: expect.stringMatching(/^unknown task "no-such-task": it never existed, has expired, or belongs to another key/) });
    const malformed = await rpc(keyA.key, 'tasks/get', { taskId: 42 });
    expect(malformed.error).toMatchObject({ code: -32602, message: expect.stringMatching(/taskId/) });
  });
});
