import { randomInt } from 'node:crypto';
import type { PostgresMock } from '../keploy/types.js';
import { ReplayIndex } from './catalog.js';
import { FrontendParser, type FrontendMessage, type StartupMessage } from './frontend.js';
import type { PostgresConnection } from './recorder.js';
import { QuerySession, type SessionEvents } from './session.js';
import { backend } from './wire.js';

/**
 * Serves one client connection from recorded mocks, with no database behind it: a small
 * PostgreSQL-speaking server.
 *
 * - SSLRequest / GSSENCRequest: answered 'N' (no TLS), as the recorder did.
 * - Startup: AuthenticationOk straight away, whatever the client's credentials and whatever
 *   authentication the recording went through (replay has no secrets to check against); then
 *   the recorded ParameterStatus set (defaults when the set has no startup mock), BackendKeyData
 *   and ReadyForQuery 'I'. A client asking for protocol 3.x, x > 0, is told 3.0.
 * - Queries: matched on their text and parameter values, never on statement names (see
 *   catalog.ts); the same query+parameters recorded several times is replayed in recorded order,
 *   the last answer repeating after that. A miss is an ErrorResponse (SQLSTATE XX000, "debugkit:
 *   no recorded mock for query: ... (closest: mock-N: ...)") then ReadyForQuery, and `onMiss`.
 * - CancelRequest: ignored (its connection is closed); Terminate closes the connection.
 *
 * Pass a `ReplayIndex` instead of the mocks to share replay order across a client's connections.
 */

export interface ReplayPostgresOptions extends SessionEvents {
  /** A client that stops speaking the protocol (the connection is closed after a FATAL error). */
  onError?(err: unknown): void;
}

export interface ReplayPostgresResult {
  matched: number;
  missed: number;
  error?: Error;
}

/** What a replayed server reports when the recording has no startup mock. */
export const DEFAULT_PARAMETER_STATUS: ReadonlyArray<readonly [string, string]> = [
  ['application_name', ''],
  ['client_encoding', 'UTF8'],
  ['DateStyle', 'ISO, MDY'],
  ['integer_datetimes', 'on'],
  ['IntervalStyle', 'postgres'],
  ['is_superuser', 'on'],
  ['server_encoding', 'UTF8'],
  ['server_version', '15.0'],
  ['standard_conforming_strings', 'on'],
  ['TimeZone', 'UTC'],
];

/** Replays one connection; resolves once it is closed. */
export function replayPostgres(
  conn: PostgresConnection,
  mocks: readonly PostgresMock[] | ReplayIndex,
  options: ReplayPostgresOptions = {},
): Promise<ReplayPostgresResult> {
  const index = mocks instanceof ReplayIndex ? mocks : new ReplayIndex(mocks);
  const { client } = conn;
  const result: ReplayPostgresResult = { matched: 0, missed: 0 };
  let pending: Buffer[] = [];
  const session = new QuerySession(index, (raw) => pending.push(raw), options);
  const parser = new FrontendParser();
  let ended = false;

  const flush = () => {
    if (pending.length === 0 || client.destroyed) return;
    const ok = client.write(pending.length === 1 ? pending[0]! : Buffer.concat(pending));
    pending = [];
    // Answers only follow requests: holding the requests back is the backpressure.
    if (!ok) {
      client.pause();
      client.once('drain', () => client.resume());
    }
  };
  const end = () => {
    if (ended) return;
    ended = true;
    flush();
    client.end();
  };
  const handle = (m: FrontendMessage) => {
    if (ended) return;
    if (m.type === 'ssl' || m.type === 'gssenc') return void pending.push(Buffer.from('N'));
    if (m.type === 'cancel' || m.type === 'X') return end();
    if (m.type === 'startup') return startup(m, index, (raw) => pending.push(raw));
    dispatch(session, m);
  };

  client.on('data', (chunk: Buffer) => {
    try {
      for (const m of parser.push(chunk)) handle(m);
    } catch (err) {
      options.onError?.(err);
      pending.push(backend.error({ S: 'FATAL', V: 'FATAL', C: '08P01', M: `debugkit: ${(err as Error).message}` }));
      end();
    }
    flush();
  });
  client.on('end', end);
  return new Promise((resolve) => {
    client.on('error', (err) => (result.error ??= err));
    client.once('close', () => resolve({ ...result, matched: session.matched, missed: session.missed }));
    client.resume();
  });
}

function startup(m: StartupMessage, index: ReplayIndex, send: (raw: Buffer) => void): void {
  const minor = m.protocolVersion & 0xffff;
  const options = Object.keys(m.parameters).filter((k) => k.startsWith('_pq_.'));
  if (minor > 0 || options.length > 0) send(backend.negotiateProtocolVersion(0, options));
  send(backend.authenticationOk());
  const status = index.startup.parameterStatus.length > 0 ? index.startup.parameterStatus : DEFAULT_PARAMETER_STATUS;
  for (const [name, value] of status) send(backend.parameterStatus(name, value));
  const key = index.startup.backendKey ?? { processId: randomInt(1, 2 ** 31 - 1), secretKey: randomInt(1, 2 ** 31 - 1) };
  send(backend.backendKeyData(key.processId, key.secretKey));
  send(backend.readyForQuery('I'));
}

function dispatch(session: QuerySession, m: FrontendMessage): void {
  if (session.skipping && m.type !== 'S') return;
  switch (m.type) {
    case 'P':
      return session.parse(m);
    case 'B':
      return session.bind(m);
    case 'D':
      return session.describe(m);
    case 'E':
      return session.execute(m);
    case 'C':
      return session.close(m.target, m.name);
    case 'S':
      return session.sync();
    case 'Q':
      return session.query(m);
    case 'F':
      return session.functionCall();
    case 'c':
    case 'f':
      return session.copyEnded();
    // Flush: answers go out after every chunk anyway. Password/SASL after AuthenticationOk and
    // COPY data: nothing to answer.
  }
}
