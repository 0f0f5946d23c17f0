import { describe, expect, it } from 'vitest';
import { pollUntil } from '../core/wait.js';
import { TaskTable, requestAcceptsTasks, type TaskOwner, type TaskWork } from './tasks.js';

const owner = (principal: string, client = `http:${principal}`): TaskOwner => ({ principal, client });

/** Work that runs until `finish` is called (or its signal aborts, when it then throws). */
function held(): { work: (task: TaskWork) => Promise<unknown>; finish(value: unknown): void; seen: { signal?: AbortSignal; report?: (m: string) => void } } {
  let finish: (value: unknown) => void = () => undefined;
  const seen: { signal?: AbortSignal; report?: (m: string) => void } = {};
  const work = (task: TaskWork) =>
    new Promise<unknown>((resolve, reject) => {
      seen.signal = task.signal;
      seen.report = task.report;
      finish = resolve;
      task.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
    });
  return { work, finish: (v) => finish(v), seen };
}

describe('TaskTable', () => {
  it('answers a call that ends within the grace directly, keeping no task; throws its error likewise', async () => {
    const table = new TaskTable({ graceMs: 5000 });
    expect(await table.start(owner('a'), () => Promise.resolve({ content: [] }))).toEqual({ answer: { content: [] } });
    await expect(table.start(owner('a'), () => Promise.reject(Object.assign(new Error('bad'), { code: -32602 })))).rejects.toThrow('bad');
    expect(table.size).toBe(0);
    await table.close();
  });

  it('makes a task of a call still running after the grace: working, then completed with its result; failed with a JSON-RPC error', async () => {
    const table = new TaskTable({ graceMs: 0 });
    const job = held();
    const started = await table.start(owner('a'), job.work);
    if (!('task' in started)) throw new Error(`not a task: ${JSON.stringify(started)}`);
    const id = started.task.taskId;
    expect(started.task).toMatchObject({ status: 'working', ttlMs: expect.any(Number), pollIntervalMs: expect.any(Number) });
    job.seen.report!('recording: 3 calls captured');
    expect(table.get('a', id)).toMatchObject({ status: 'working', statusMessage: 'recording: 3 calls captured' });
    job.finish({ content: [{ type: 'text', text: 'done' }] });
    await pollUntil(() => table.get('a', id)?.status === 'completed', { timeoutMs: 5000, intervalMs: 5 });
    expect(table.get('a', id)).toEqual(expect.objectContaining({ status: 'completed', result: { content: [{ type: 'text', text: 'done' }] } }));
    expect(table.get('a', id)!.statusMessage).toBeUndefined();

    const failing = await table.start(owner('a'), () => new Promise((_, reject) => setTimeout(() => reject(Object.assign(new Error('no such tool'), { code: -32602, data: { x: 1 } })), 10)));
    if (!('task' in failing)) throw new Error('not a task');
    await pollUntil(() => table.get('a', failing.task.taskId)?.status === 'failed', { timeoutMs: 5000, intervalMs: 5 });
    expect(table.get('a', failing.task.taskId)!.error).toEqual({ code: -32602, message: 'no such tool', data: { x: 1 } });
    await table.close();
  });

  it("keeps each key's tasks its own: another key neither sees nor cancels them", async () => {
    const table = new TaskTable({ graceMs: 0 });
    const job = held();
    const started = await table.start(owner('a'), job.work);
    if (!('task' in started)) throw new Error('not a task');
    expect(table.get('b', started.task.taskId)).toBeUndefined();
    expect(table.cancel('b', started.task.taskId)).toBe(false);
    expect(job.seen.signal!.aborted).toBe(false);
    expect(table.cancel('a', started.task.taskId)).toBe(true);
    expect(job.seen.signal!.aborted).toBe(true);
    expect(table.get('a', started.task.taskId)).toMatchObject({ status: 'cancelled' });
    // What the work answers after it was cancelled is not the task's.
    job.finish({ content: [] });
    await table.close();
    expect(table.get('a', started.task.taskId)).toMatchObject({ status: 'cancelled' });
  });

  it('serves a call of a key past its working tasks as an ordinary call (no task made); other keys are not affected', async () => {
    const table = new TaskTable({ graceMs: 0, maxWorkingPerKey: 2 });
    const jobs = [held(), held(), held()];
    expect('task' in (await table.start(owner('a'), jobs[0]!.work))).toBe(true);
    expect('task' in (await table.start(owner('a'), jobs[1]!.work))).toBe(true);
    expect(await table.start(owner('a'), jobs[2]!.work)).toEqual({ inline: true });
    expect(table.size).toBe(2);
    expect('task' in (await table.start(owner('b'), jobs[2]!.work))).toBe(true);
    await table.close();
  });

  it('counts a cancelled task as working until its work has ended (attack 18an a2-4: cancelling freed the slot while the work ran on)', async () => {
    const table = new TaskTable({ graceMs: 0, maxWorkingPerKey: 1 });
    let finish: () => void = () => undefined;
    // Work that ignores its signal for a while, as a probe that does not stop at once.
    const stubborn = () => new Promise<unknown>((resolve) => (finish = () => resolve({ content: [] })));
    const first = await table.start(owner('a'), stubborn);
    if (!('task' in first)) throw new Error('not a task');
    expect(table.cancel('a', first.task.taskId)).toBe(true);
    expect(await table.start(owner('a'), held().work)).toEqual({ inline: true });
    finish();
    expect(await pollUntil(async () => 'task' in (await table.start(owner('a'), held().work)), { timeoutMs: 5000, intervalMs: 5 })).toBe(true);
    await table.close();
  });

  it('keeps a bounded number of ended tasks per key, oldest first out, and tells the router when one goes', async () => {
    const released: string[] = [];
    const table = new TaskTable({ graceMs: 0, maxEndedPerKey: 2 });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const job = held();
      const started = await table.start({ ...owner('a'), release: (id) => released.push(id) }, job.work);
      if (!('task' in started)) throw new Error('not a task');
      ids.push(started.task.taskId);
      job.finish({ content: [] });
      await pollUntil(() => table.get('a', started.task.taskId)?.status !== 'working', { timeoutMs: 5000, intervalMs: 5 });
    }
    expect(ids.map((id) => table.get('a', id)?.status)).toEqual([undefined, undefined, 'completed', 'completed']);
    expect(released).toEqual(ids.slice(0, 2));
    await table.close();
  });

  it('keeps a bounded number of ended tasks over all keys, the oldest out first', async () => {
    const table = new TaskTable({ graceMs: 0, maxEndedPerKey: 10, maxEndedTotal: 3 });
    const ids: string[] = [];
    for (const key of ['a', 'b', 'c', 'd', 'e']) {
      const job = held();
      const started = await table.start(owner(key), job.work);
      if (!('task' in started)) throw new Error('not a task');
      ids.push(started.task.taskId);
      job.finish({ content: [] });
      await pollUntil(() => table.get(key, started.task.taskId)?.status !== 'working', { timeoutMs: 5000, intervalMs: 5 });
    }
    expect(['a', 'b', 'c', 'd', 'e'].map((key, i) => table.get(key, ids[i]!)?.status)).toEqual([undefined, undefined, 'completed', 'completed', 'completed']);
    await table.close();
  });

  it('a client that goes away cancels its tasks; the server closing cancels every task and waits for their work', async () => {
    const table = new TaskTable({ graceMs: 0 });
    const mine = held();
    const others = held();
    const a = await table.start(owner('a', 'http:session-1'), mine.work);
    const b = await table.start(owner('a', 'http:session-2'), others.work);
    if (!('task' in a) || !('task' in b)) throw new Error('not tasks');
    table.releaseClient('http:session-1');
    expect(table.get('a', a.task.taskId)!.status).toBe('cancelled');
    expect(table.get('a', b.task.taskId)!.status).toBe('working');
    await table.close();
    expect(others.seen.signal!.aborted).toBe(true);
    expect(table.get('a', b.task.taskId)!.status).toBe('cancelled');
    expect(await table.start(owner('a'), () => Promise.resolve({}))).toEqual({ refused: expect.stringMatching(/shutting down/) });
  });

  it('reads the capability from a 2026-07-28 request: the envelope or _meta, only as an object', () => {
    const caps = (value: unknown) => ({ mcpReq: { envelope: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': value } } } } });
    expect(requestAcceptsTasks(caps({}))).toBe(true);
    expect(requestAcceptsTasks(caps(null))).toBe(false);
    expect(requestAcceptsTasks(caps(true))).toBe(false);
    expect(requestAcceptsTasks({ mcpReq: { _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } } } })).toBe(true);
    expect(requestAcceptsTasks({ mcpReq: {} })).toBe(false);
  });
});
