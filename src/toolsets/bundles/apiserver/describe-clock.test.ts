import { describe, expect, it } from 'vitest';
import { isDescribe, shiftEventTimes } from './describe-clock.js';

describe('shiftEventTimes', () => {
  it('moves every event time by the offset, keeping Time and MicroTime forms, without touching the original', () => {
    const original = {
      kind: 'Event',
      metadata: { name: 'e', creationTimestamp: '2025-04-11T18:18:00Z' },
      firstTimestamp: '2025-04-11T18:18:00Z',
      lastTimestamp: '2025-04-11T18:20:00Z',
      eventTime: '2025-04-11T18:18:00.123456Z',
      series: { count: 2, lastObservedTime: '2025-04-11T18:19:00.000001Z' },
      reason: 'Scheduled',
    };
    const [moved] = shiftEventTimes([original], 3_600_000);
    expect(moved).toMatchObject({
      metadata: { name: 'e', creationTimestamp: '2025-04-11T19:18:00Z' },
      firstTimestamp: '2025-04-11T19:18:00Z',
      lastTimestamp: '2025-04-11T19:20:00Z',
      eventTime: '2025-04-11T19:18:00.123000Z',
      series: { count: 2, lastObservedTime: '2025-04-11T19:19:00.000000Z' },
      reason: 'Scheduled',
    });
    expect(original.firstTimestamp).toBe('2025-04-11T18:18:00Z');
    expect(shiftEventTimes([{ firstTimestamp: null, lastTimestamp: 'garbage' }], 1000)).toEqual([{ firstTimestamp: null, lastTimestamp: 'garbage' }]);
  });

  it('knows a describe by the Kubectl-Command header', () => {
    const req = (h: Record<string, string>) => ({ headers: h }) as never;
    expect(isDescribe(req({ 'kubectl-command': 'kubectl describe' }))).toBe(true);
    expect(isDescribe(req({ 'kubectl-command': 'kubectl get' }))).toBe(false);
    expect(isDescribe(req({}))).toBe(false);
  });
});
