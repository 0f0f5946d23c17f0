import { DebugkitError } from '../../../core/errors.js';
import type { Mock } from './types.js';

// Which of a set's mocks one test uses (keploy_mock_test `only`, keploy_mock_record `replace`), and how a name is shown:
// plain functions over parsed mocks, for the server and the mock-set worker threads alike.

/** A name as an answer shows it: a set's names are the set's author's text, of any length. */
export function shownName(name: string): string {
  return name.length <= MAX_SHOWN_NAME ? name : `${name.slice(0, MAX_SHOWN_NAME)}... (${name.length} characters)`;
}
const MAX_SHOWN_NAME = 128;

/** Which of a set's mocks one test uses: by name, or by the time window its requests were made in (ISO 8601 times). */
export interface SetNarrowing {
  names?: readonly string[];
  from?: string;
  to?: string;
}

/**
 * The mocks of one test (Keploy's per-test scoping): those named, or those whose request was made
 * in [from, to], with the set's start-up mocks (a connection's handshake, whatever test opened it).
 * Refuses names the set does not hold and a narrowing that keeps no mock, saying what the set has.
 */
export function narrowSet(mocks: readonly Mock[], by: SetNarrowing): Mock[] {
  const names = by.names ? new Set(by.names) : undefined;
  if (names) {
    const held = new Set(mocks.map((m) => m.name));
    const unknown = [...names].filter((n) => !held.has(n));
    if (unknown.length > 0) {
      throw new DebugkitError(
        'INVALID_ARGUMENT',
        `the set holds no mock named ${unknown
          .slice(0, 5)
          .map((n) => `'${shownName(n)}'`)
          .join(', ')}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ''} (it has ${held.size} mocks, ${[...held].slice(0, 5).map(shownName).join(', ')}${held.size > 5 ? ', ...' : ''})`,
      );
    }
  }
  const time = (t: string | undefined, what: string): number | undefined => {
    if (t === undefined) return undefined;
    const ms = Date.parse(t);
    if (Number.isNaN(ms)) throw new DebugkitError('INVALID_ARGUMENT', `${what} must be an ISO 8601 time (2026-11-27T10:00:00Z), not ${JSON.stringify(t.slice(0, 64))}`);
    return ms;
  };
  const from = time(by.from, 'from');
  const to = time(by.to, 'to');
  const windowed = from !== undefined || to !== undefined;
  const kept = mocks.filter((m) => {
    if (isStartup(m)) return true;
    if (names && !names.has(m.name)) return false;
    if (!windowed) return true;
    const at = Date.parse(requestTime(m) ?? '');
    return !Number.isNaN(at) && at > 0 && (from === undefined || at >= from) && (to === undefined || at <= to);
  });
  if (!kept.some((m) => !isStartup(m))) {
    throw new DebugkitError(
      'INVALID_ARGUMENT',
      `no mock of the set is ${names ? 'named so' : ''}${names && windowed ? ' and ' : ''}${windowed ? `requested between ${by.from ?? 'its start'} and ${by.to ?? 'its end'}` : ''}: nothing to replay`,
    );
  }
  return kept;
}

/** When a mock's request was made, as its set says (`reqTimestampMock`, `reqtimestampmock`). */
function requestTime(mock: Mock): string | undefined {
  const spec = (mock as { spec?: Record<string, unknown> }).spec;
  const t = spec?.reqTimestampMock ?? spec?.reqtimestampmock;
  return typeof t === 'string' ? t : undefined;
}

/** A connection's start-up mock (Keploy's `metadata.type: config` on a PostgreSQL, MySQL or Generic mock): it answers each connection. */
export function isStartup(mock: Mock): boolean {
  if (mock.kind !== 'Postgres' && mock.kind !== 'MySQL' && mock.kind !== 'Generic') return false;
  const spec = (mock as { spec?: { metadata?: Record<string, unknown> } }).spec;
  return spec?.metadata?.type === 'config';
}
