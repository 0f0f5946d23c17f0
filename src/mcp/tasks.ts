import { randomUUID } from 'node:crypto';
import { z } from 'zod';

/**
 * Long tool calls as tasks: the Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663, the
 * 2026-07-28 revision's per-request capabilities). A client that says on its `tools/call` that it
 * handles tasks gets, for a call still running after a short grace, a task handle at once and polls
 * `tasks/get` for the outcome, so a 300 s recording never outlasts a client's 60 s request timeout.
 * A call that ends within the grace is answered as always (the spec lets the server decide per
 * request). One table per server, shared by every client's McpServer: a stateless 2026-07-28
 * request gets a new McpServer, and its task must outlive it.
 *
 * Every task belongs to the key (principal) that made it: another key asking for it is told it
 * does not exist. The call inside a task is the same call (scopes, audit entry before it runs and
 * its outcome when it ends, answer ceiling, redaction); only its request's signal, progress and log
 * are the task's: progress becomes the task's `statusMessage`, `tasks/cancel` aborts the signal.
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** The request `_meta` key that carries a 2026-07-28 request's client capabilities. */
const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** A task as `tasks/get` answers it (DetailedTask): its result or error once it has one. */
export interface TaskView {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number | null;
  pollIntervalMs?: number;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

export interface TaskLimits {
  /** How long a task is kept from its creation (`ttlMs`); a task still working is kept until it ends. */
  ttlMs: number;
  /** The polling interval suggested to clients. */
  pollIntervalMs: number;
  /** A call that ends within this is answered directly, without a task. */
  graceMs: number;
  /** Tasks one key may have working at once; past it a call is served as an ordinary call (no task). */
  maxWorkingPerKey: number;
  /** Ended tasks kept per key (the oldest go first). */
  maxEndedPerKey: number;
  /** Ended tasks kept over all keys (the oldest go first): what their results may hold in memory is bounded. */
  maxEndedTotal: number;
}

export const DEFAULT_TASK_LIMITS: TaskLimits = { ttlMs: 3_600_000, pollIntervalMs: 2000, graceMs: 2000, maxWorkingPerKey: 16, maxEndedPerKey: 64, maxEndedTotal: 1000 };

/** What a task's work gets: its own signal (tasks/cancel, the server closing) and a way to say how it is doing. */
export interface TaskWork {
  signal: AbortSignal;
  report(message: string): void;
}

/** The outcome of starting a call that may become a task. */
/** `inline`: the key has as many tasks working as it may, so this call is to be served as an ordinary call. */
export type TaskStart = { answer: unknown } | { task: TaskView } | { refused: string } | { inline: true };

/** Who makes a task: the key it belongs to, the client whose release cancels it, and where it is routed (multi-node). */
export interface TaskOwner {
  /** The key (principal id): only it sees the task. */
  principal: string;
  /** The client (ClientContext.owner) that made it: its release cancels the task. */
  client: string;
  /** A task now lives on this node: resolved before its handle is answered, so `tasks/get` finds it from any node. */
  claim?(taskId: string): Promise<void>;
  /** The task was discarded. */
  release?(taskId: string): void;
}

interface TaskRecord {
  taskId: string;
  owner: TaskOwner;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: number;
  lastUpdatedAt: number;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
  controller: AbortController;
  /** The work ended (whatever its outcome). */
  ended: Promise<void>;
  /** True until the work has ended, cancelled or not. */
  running: boolean;
}

/** The client capabilities a 2026-07-28 request carries (its envelope), if any. */
export function requestCapabilities(ctx: { mcpReq?: { envelope?: unknown; _meta?: unknown } }): { extensions?: Record<string, unknown> } | undefined {
  const envelope = ctx.mcpReq?.envelope as Record<string, unknown> | undefined;
  const meta = ctx.mcpReq?._meta as Record<string, unknown> | undefined;
  return (envelope?.[CLIENT_CAPABILITIES_META] ?? envelope?.clientCapabilities ?? meta?.[CLIENT_CAPABILITIES_META]) as { extensions?: Record<string, unknown> } | undefined;
}

/** Does this request say its client handles tasks (its own capabilities, 2026-07-28)? */
export function requestAcceptsTasks(ctx: { mcpReq?: { envelope?: unknown; _meta?: unknown } }): boolean {
  const declared = requestCapabilities(ctx)?.extensions?.[TASKS_EXTENSION];
  return declared !== null && typeof declared === 'object' && !Array.isArray(declared);
}

/** A JSON-RPC error thrown by a call, as the task's `error`. */
function rpcErrorOf(err: unknown): { code: number; message: string; data?: unknown } {
  const e = err as { code?: unknown; message?: unknown; data?: unknown };
  const code = typeof e?.code === 'number' && Number.isInteger(e.code) ? e.code : -32603;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  return { code, message, ...(e?.data === undefined ? {} : { data: e.data }) };
}

export class TaskTable {
  private readonly tasks = new Map<string, TaskRecord>();
  private readonly limits: TaskLimits;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(limits: Partial<TaskLimits> = {}) {
    this.limits = { ...DEFAULT_TASK_LIMITS, ...limits };
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, this.limits.ttlMs));
    this.sweeper.unref();
  }

  /**
   * Runs `work` for `owner`: its answer when it ends within the grace (or throws its error),
   * else a task that holds it. The task is in the table (and `created` has resolved) before it is
   * returned. `cancelled` (the request's own signal) cancels the work while the grace lasts.
   */
  async start(owner: TaskOwner, work: (task: TaskWork) => Promise<unknown>, cancelled?: AbortSignal): Promise<TaskStart> {
    if (this.closed) return { refused: 'the server is shutting down: no new task can start' };
    const principal = owner.principal;
    // A cancelled task counts until its work has ended: cancelling must not free a slot while what it runs still runs (18an a2-4).
    const working = [...this.tasks.values()].filter((t) => t.owner.principal === principal && t.running).length;
    // Past its working tasks a key's call is served as an ordinary call: the client handles either answer.
    if (working >= this.limits.maxWorkingPerKey) return { inline: true };
    const now = Date.now();
    const controller = new AbortController();
    const record: TaskRecord = { taskId: randomUUID(), owner, status: 'working', createdAt: now, lastUpdatedAt: now, controller, ended: Promise.resolve(), running: true };
    this.tasks.set(record.taskId, record);
    const onCancel = () => controller.abort(cancelled?.reason);
    cancelled?.addEventListener('abort', onCancel, { once: true });
    let answer: { value: unknown } | { error: unknown } | undefined;
    const report = (message: string) => {
      if (record.status !== 'working') return;
      record.statusMessage = message.slice(0, 500);
      record.lastUpdatedAt = Date.now();
    };
    record.ended = (async () => {
      try {
        answer = { value: await work({ signal: controller.signal, report }) };
      } catch (err) {
        answer = { error: err };
      }
      record.running = false;
      if (record.status !== 'working') return; // cancelled: what the work answered after is not the task's
      if ('value' in answer) {
        record.status = 'completed';
        record.result = answer.value as Record<string, unknown>;
      } else {
        record.status = 'failed';
        record.error = rpcErrorOf(answer.error);
      }
      delete record.statusMessage;
      record.lastUpdatedAt = Date.now();
      this.keepEnded(principal);
    })();
    let graceTimer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (graceTimer = setTimeout(resolve, this.limits.graceMs)));
    const registered = owner.claim?.(record.taskId).catch(() => undefined);
    await Promise.race([record.ended, grace]);
    clearTimeout(graceTimer);
    await registered;
    cancelled?.removeEventListener('abort', onCancel);
    if (answer !== undefined && record.status !== 'cancelled') {
      // Ended within the grace: answered as an ordinary call, and no task is kept.
      this.drop(record.taskId);
      if ('error' in answer) throw answer.error;
      return { answer: answer.value };
    }
    return { task: this.view(record, false) };
  }

  /** The task `taskId` of `principal`, as tasks/get answers it; undefined when it has none by that id. */
  get(principal: string, taskId: string): TaskView | undefined {
    const record = this.tasks.get(taskId);
    return record && record.owner.principal === principal ? this.view(record, true) : undefined;
  }

  /** Asks task `taskId` of `principal` to stop: false when it has none by that id. Its status is `cancelled` at once if it was working. */
  cancel(principal: string, taskId: string): boolean {
    const record = this.tasks.get(taskId);
    if (!record || record.owner.principal !== principal) return false;
    this.cancelRecord(record, 'cancelled by the client (tasks/cancel)');
    return true;
  }

  /** Cancels every task a client made (its connection or session ended). */
  releaseClient(client: string): void {
    for (const record of this.tasks.values()) if (record.owner.client === client) this.cancelRecord(record, 'the client that made it went away');
  }

  /** Cancels every working task and waits for their work to end (the server is closing). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    const ending = [...this.tasks.values()].map((record) => {
      this.cancelRecord(record, 'the server is shutting down');
      return record.ended;
    });
    await Promise.all(ending);
  }

  /** How many tasks are held (for tests and the server's state). */
  get size(): number {
    return this.tasks.size;
  }

  private cancelRecord(record: TaskRecord, why: string): void {
    if (record.status !== 'working' && record.status !== 'input_required') return;
    record.status = 'cancelled';
    record.statusMessage = why;
    record.lastUpdatedAt = Date.now();
    record.controller.abort(new Error(why));
    this.keepEnded(record.owner.principal);
  }

  private view(record: TaskRecord, detailed: boolean): TaskView {
    return {
      taskId: record.taskId,
      status: record.status,
      ...(record.statusMessage !== undefined ? { statusMessage: record.statusMessage } : {}),
      createdAt: new Date(record.createdAt).toISOString(),
      lastUpdatedAt: new Date(record.lastUpdatedAt).toISOString(),
      ttlMs: this.limits.ttlMs,
      pollIntervalMs: this.limits.pollIntervalMs,
      ...(detailed && record.status === 'completed' && record.result !== undefined ? { result: record.result } : {}),
      ...(detailed && record.status === 'failed' && record.error !== undefined ? { error: record.error } : {}),
    };
  }

  /** A key keeps at most maxEndedPerKey ended tasks, the server maxEndedTotal: the oldest go. */
  private keepEnded(principal: string): void {
    const ended = [...this.tasks.values()].filter((t) => t.status !== 'working' && t.status !== 'input_required');
    const keys = ended.filter((t) => t.owner.principal === principal);
    for (const record of keys.slice(0, Math.max(0, keys.length - this.limits.maxEndedPerKey))) this.drop(record.taskId);
    const left = ended.filter((t) => this.tasks.has(t.taskId));
    for (const record of left.slice(0, Math.max(0, left.length - this.limits.maxEndedTotal))) this.drop(record.taskId);
  }

  /** Ended tasks past their time to live go. */
  private sweep(): void {
    const now = Date.now();
    for (const record of [...this.tasks.values()]) {
      if (record.status !== 'working' && record.status !== 'input_required' && now - record.createdAt >= this.limits.ttlMs) this.drop(record.taskId);
    }
  }

  private drop(taskId: string): void {
    const record = this.tasks.get(taskId);
    if (!record) return;
    this.tasks.delete(taskId);
    record.owner.release?.(taskId);
  }
}

/** The progress token a task's call runs with: its progress becomes the task's status message. */
const TASK_PROGRESS_TOKEN = 'debugkit-task';

/**
 * The request context a call runs with inside a task: the task's signal instead of the request's
 * (which ends when the handle is answered), its progress as the task's status message, and no log
 * messages (a task has no stream to send them on; the spec sends none for tasks).
 */
export function taskContext<C extends { mcpReq: object }>(ctx: C, work: TaskWork): C {
  const mcpReq = ctx.mcpReq as { _meta?: Record<string, unknown> };
  const notify = (notification: { method?: string; params?: { message?: unknown } }) => {
    if (notification.method === 'notifications/progress' && typeof notification.params?.message === 'string') work.report(notification.params.message);
    return Promise.resolve();
  };
  return {
    ...ctx,
    mcpReq: { ...mcpReq, signal: work.signal, _meta: { ...mcpReq._meta, progressToken: TASK_PROGRESS_TOKEN }, notify, log: () => Promise.resolve() },
  };
}

/** What a client's server needs to make and answer tasks: the table, whose they are, and whether this request's revision has them. */
export interface TaskScope {
  table: TaskTable;
  owner: TaskOwner;
  /** True when the server serves 2026-07-28 or later (the extension's per-request capabilities). */
  modern(): boolean;
}

interface RequestHandlerHost {
  setRequestHandler(method: string, schemas: { params: unknown }, handler: (params: never, ctx: unknown) => unknown): void;
  registerCapabilities(capabilities: Record<string, unknown>): void;
}

/** Unknown task: the same answer for a task that never was, has gone, or is another key's. */
function unknownTask(taskId: string): Error {
  return Object.assign(new Error(`unknown task ${JSON.stringify(taskId.slice(0, 100))}: it never existed, has expired, or belongs to another key`), { code: -32602 });
}

const TASK_ID = { params: z.object({ taskId: z.string().min(1).max(200) }).passthrough() };
const UPDATE = { params: z.object({ taskId: z.string().min(1).max(200), inputResponses: z.record(z.string(), z.unknown()).optional() }).passthrough() };

/**
 * Declares the extension and answers `tasks/get`, `tasks/update` and `tasks/cancel` on one client's
 * server. debugkit's tasks never ask the client for input, so `tasks/update` only acknowledges.
 */
export function registerTaskMethods(server: { server: unknown }, scope: TaskScope): void {
  const host = server.server as RequestHandlerHost;
  host.registerCapabilities({ extensions: { [TASKS_EXTENSION]: {} } });
  host.setRequestHandler('tasks/get', TASK_ID, (params: { taskId: string }) => {
    const task = scope.table.get(scope.owner.principal, params.taskId);
    if (!task) throw unknownTask(params.taskId);
    return task;
  });
  host.setRequestHandler('tasks/update', UPDATE, (params: { taskId: string }) => {
    if (!scope.table.get(scope.owner.principal, params.taskId)) throw unknownTask(params.taskId);
    return {};
  });
  host.setRequestHandler('tasks/cancel', TASK_ID, (params: { taskId: string }) => {
    if (!scope.table.cancel(scope.owner.principal, params.taskId)) throw unknownTask(params.taskId);
    return {};
  });
}
