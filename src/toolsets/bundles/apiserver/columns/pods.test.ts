import { describe, expect, it } from 'vitest';
import type { K8sObject } from '../json.js';
import { summarizePod } from './pods.js';

const now = new Date('2025-04-11T12:00:00Z');

function pod(spec: Partial<{ containers: string[]; init: string[]; sidecars: string[] }>, status: K8sObject, metadata: K8sObject = {}): K8sObject {
  return {
    metadata: { name: 'p', ...metadata },
    spec: {
      containers: (spec.containers ?? ['app']).map((name) => ({ name })),
      initContainers: [...(spec.init ?? []).map((name) => ({ name })), ...(spec.sidecars ?? []).map((name) => ({ name, restartPolicy: 'Always' }))],
    },
    status,
  };
}

const running = (name: string, restarts = 0, lastExit?: string) => ({
  name,
  ready: true,
  restartCount: restarts,
  state: { running: { startedAt: '2025-04-11T11:00:00Z' } },
  lastState: lastExit ? { terminated: { exitCode: 1, finishedAt: lastExit } } : {},
});

describe('summarizePod (kubectl READY/STATUS/RESTARTS)', () => {
  it('reads a healthy pod', () => {
    const p = pod({ containers: ['a', 'b'] }, { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [running('a'), running('b')] });
    expect(summarizePod(p, now)).toEqual({ ready: '2/2', status: 'Running', restarts: '0' });
  });

  it('sums restarts and says how long ago the last one was', () => {
    const p = pod({ containers: ['a', 'b'] }, { phase: 'Running', containerStatuses: [running('a', 3, '2025-04-11T09:00:00Z'), running('b', 2, '2025-04-11T11:15:00Z')] });
    expect(summarizePod(p, now).restarts).toBe('5 (45m ago)');
  });

  it('shows CrashLoopBackOff from a waiting container', () => {
    const p = pod(
      {},
      {
        phase: 'Running',
        containerStatuses: [
          {
            name: 'app',
            ready: false,
            restartCount: 7,
            state: { waiting: { reason: 'CrashLoopBackOff' } },
            lastState: { terminated: { exitCode: 1, finishedAt: '2025-04-11T11:58:00Z' } },
          },
        ],
      },
    );
    expect(summarizePod(p, now)).toEqual({ ready: '0/1', status: 'CrashLoopBackOff', restarts: '7 (2m ago)' });
  });

  it('shows Completed for a finished job pod and ExitCode:N without a reason', () => {
    const done = pod({}, { phase: 'Succeeded', containerStatuses: [{ name: 'app', ready: false, restartCount: 0, state: { terminated: { exitCode: 0, reason: 'Completed' } } }] });
    expect(summarizePod(done, now)).toEqual({ ready: '0/1', status: 'Completed', restarts: '0' });
    const failed = pod({}, { phase: 'Failed', containerStatuses: [{ name: 'app', state: { terminated: { exitCode: 2 } } }] });
    expect(summarizePod(failed, now).status).toBe('ExitCode:2');
  });

  it('shows Pending and scheduling gates', () => {
    expect(summarizePod(pod({}, { phase: 'Pending' }), now)).toEqual({ ready: '0/1', status: 'Pending', restarts: '0' });
    const gated = pod({}, { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }] });
    expect(summarizePod(gated, now).status).toBe('SchedulingGated');
  });

  it('shows init progress and init failures', () => {
    const waiting = pod(
      { init: ['migrate'] },
      { phase: 'Pending', initContainerStatuses: [{ name: 'migrate', state: { running: {} } }], containerStatuses: [{ name: 'app', state: { waiting: { reason: 'PodInitializing' } } }] },
    );
    expect(summarizePod(waiting, now).status).toBe('Init:0/1');
    const crashing = pod({ init: ['migrate'] }, { phase: 'Pending', initContainerStatuses: [{ name: 'migrate', restartCount: 4, state: { waiting: { reason: 'CrashLoopBackOff' } } }] });
    expect(summarizePod(crashing, now)).toMatchObject({ status: 'Init:CrashLoopBackOff', restarts: '4' });
    const failed = pod({ init: ['migrate'] }, { phase: 'Pending', initContainerStatuses: [{ name: 'migrate', state: { terminated: { exitCode: 3 } } }] });
    expect(summarizePod(failed, now).status).toBe('Init:ExitCode:3');
  });

  it('counts a started sidecar toward READY', () => {
    const p = pod(
      { sidecars: ['proxy'] },
      {
        phase: 'Running',
        conditions: [{ type: 'Initialized', status: 'True' }],
        initContainerStatuses: [{ name: 'proxy', started: true, ready: true, restartCount: 1, state: { running: {} } }],
        containerStatuses: [running('app')],
      },
    );
    expect(summarizePod(p, now)).toMatchObject({ ready: '2/2', status: 'Running', restarts: '1' });
  });

  it('shows Terminating for a pod being deleted, Unknown when its node was lost', () => {
    const base = { phase: 'Running', containerStatuses: [running('app')] };
    expect(summarizePod(pod({}, base, { deletionTimestamp: '2025-04-11T11:59:00Z' }), now).status).toBe('Terminating');
    expect(summarizePod(pod({}, { ...base, reason: 'NodeLost' }, { deletionTimestamp: '2025-04-11T11:59:00Z' }), now).status).toBe('Unknown');
  });

  it('prefers status.reason such as Evicted', () => {
    expect(summarizePod(pod({}, { phase: 'Failed', reason: 'Evicted' }), now).status).toBe('Evicted');
  });
});
