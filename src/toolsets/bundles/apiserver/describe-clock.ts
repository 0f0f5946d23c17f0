import type { IncomingMessage } from 'node:http';
import { isRecord, type K8sObject } from './json.js';
import type { ResourceType } from './resources.js';

/**
 * `kubectl describe` prints event ages computed against its own clock, not against a server
 * table like `get`. So that they read as of the bundle's collection (as `get` ages do), events
 * sent to a describe (kubectl names its command in the Kubectl-Command header, which debugkit's
 * runner turns on for describe) carry their times moved forward by (now - collected): kubectl's
 * "now - time" is then "collected - original time". describe prints no absolute event times, and
 * every other request (get, -o json) gets the times as collected.
 */
export function isDescribe(req: IncomingMessage): boolean {
  const command = req.headers['kubectl-command'];
  return typeof command === 'string' && /^kubectl describe\b/.test(command);
}

const EVENT_TIMES = ['firstTimestamp', 'lastTimestamp', 'eventTime', 'deprecatedFirstTimestamp', 'deprecatedLastTimestamp'];

export function isEventType(t: ResourceType): boolean {
  return t.plural === 'events' && (t.group === '' || t.group === 'events.k8s.io');
}

/** Copies of `events` with their times shifted by `offsetMs`. */
export function shiftEventTimes(events: K8sObject[], offsetMs: number): K8sObject[] {
  return events.map((e) => {
    const copy: K8sObject = { ...e };
    for (const key of EVENT_TIMES) if (typeof copy[key] === 'string') copy[key] = shift(copy[key] as string, offsetMs);
    if (isRecord(copy.series) && typeof copy.series.lastObservedTime === 'string') {
      copy.series = { ...copy.series, lastObservedTime: shift(copy.series.lastObservedTime, offsetMs) };
    }
    if (isRecord(copy.metadata) && typeof copy.metadata.creationTimestamp === 'string') {
      copy.metadata = { ...copy.metadata, creationTimestamp: shift(copy.metadata.creationTimestamp, offsetMs) };
    }
    return copy;
  });
}

/** The same RFC 3339 form back: seconds (Time) or microseconds (MicroTime). */
function shift(value: string, offsetMs: number): string {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return value;
  const iso = new Date(ms + offsetMs).toISOString();
  return /\.\d+Z$/.test(value) ? iso.replace(/\.(\d{3})Z$/, '.$1000Z') : iso.replace(/\.\d{3}Z$/, 'Z');
}
