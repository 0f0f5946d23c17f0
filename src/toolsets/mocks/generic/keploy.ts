import { keployTime } from '../keploy/time.js';
import { KEPLOY_MOCK_VERSION, type GenericMessage, type GenericMock, type GenericPayload } from '../keploy/types.js';

/**
 * Generic mocks as Keploy writes them (keploy `pkg/core/proxy/integrations/generic`, `models.GenericSchema`):
 * - `genericrequests` holds the client's bytes (`origin: client`), `genericresponses` the server's
 *   (`origin: server`), each payload one `message: [{type, data}]`;
 * - `type: string` with the bytes as text when every byte is ASCII (Keploy's `util.IsASCII`, Go
 *   ranging over the runes: any byte >= 0x80 fails it), otherwise `type: binary` with base64;
 *   on replay Keploy sends `string` data as is and base64-decodes any other type (long `string`
 *   data that YAML would double-quote, `\r\n` of Redis or HTTP/1, is written as `!!binary`, which
 *   Keploy reads as the same string: keploy/emit.ts QUOTED_STRING_MAX);
 * - `metadata: {type: config}`.
 * Keploy writes one payload per read chunk; here each direction of an exchange is one payload
 * (chunk boundaries are TCP's choice, not the program's: replay compares the concatenated bytes,
 * whatever the number of payloads). Additions in the free `metadata` map, which Keploy ignores:
 * `host` (`host:port` of the server), `serverClosed` (the server closed the connection after this
 * answer), `truncated` with `requestBytes`/`responseBytes` (the exchange was over the size limit:
 * only its first bytes are kept and it is never replayed).
 */

export const META_HOST = 'host';
export const META_SERVER_CLOSED = 'serverClosed';
export const META_TRUNCATED = 'truncated';
export const META_REQUEST_BYTES = 'requestBytes';
export const META_RESPONSE_BYTES = 'responseBytes';

/** Keploy's `models.String`. */
export const STRING_TYPE = 'string';
export const BINARY_TYPE = 'binary';

/** One payload of `origin` holding `bytes` (none for no bytes, as Keploy skips empty reads). */
export function payloadsOf(bytes: Buffer, origin: 'client' | 'server'): GenericPayload[] {
  if (bytes.length === 0) return [];
  return [{ origin, message: [messageOf(bytes)] }];
}

/** `type: string` with the text when every byte is ASCII (long text YAML would double-quote is emit.ts's concern), else base64. */
export function messageOf(bytes: Buffer): GenericMessage {
  if (!isAscii(bytes)) return { type: BINARY_TYPE, data: bytes.toString('base64') };
  return { type: STRING_TYPE, data: bytes.toString('latin1') };
}

export function isAscii(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b >= 0x80) return false;
  return true;
}

/** The bytes of a message: `string` data as text (UTF-8, as Go's `[]byte(s)`), anything else base64. */
export function messageBytes(m: GenericMessage): Buffer {
  return m.type === STRING_TYPE ? Buffer.from(m.data, 'utf8') : Buffer.from(m.data, 'base64');
}

/** Every message of every payload, concatenated. */
export function payloadBytes(payloads: readonly GenericPayload[]): Buffer {
  return Buffer.concat(payloads.flatMap((p) => p.message.map(messageBytes)));
}

export interface GenericExchange {
  request: Buffer;
  response: Buffer;
  startedAt: Date;
  endedAt: Date;
  /** `host:port` of the server. */
  host?: string;
  connectionId?: string;
  serverClosed?: boolean;
  /** Over the size limit: `request`/`response` hold the first bytes only; these are the real sizes. */
  truncated?: { requestBytes: number; responseBytes: number };
}

export function buildGenericMock(ex: GenericExchange, utcOffsetMinutes?: number): GenericMock {
  const metadata: Record<string, string> = { type: 'config' };
  if (ex.host) metadata[META_HOST] = ex.host;
  if (ex.serverClosed) metadata[META_SERVER_CLOSED] = 'true';
  if (ex.truncated) {
    metadata[META_TRUNCATED] = 'true';
    metadata[META_REQUEST_BYTES] = String(ex.truncated.requestBytes);
    metadata[META_RESPONSE_BYTES] = String(ex.truncated.responseBytes);
  }
  const mock: GenericMock = {
    version: KEPLOY_MOCK_VERSION,
    kind: 'Generic',
    name: 'mocks',
    spec: {
      metadata,
      genericrequests: payloadsOf(ex.request, 'client'),
      genericresponses: payloadsOf(ex.response, 'server'),
      reqtimestampmock: keployTime(ex.startedAt, utcOffsetMinutes),
      restimestampmock: keployTime(ex.endedAt, utcOffsetMinutes),
    },
  };
  if (ex.connectionId) mock.connectionId = ex.connectionId;
  return mock;
}

/** Bytes for a report: printable text quoted (JSON escapes), else hex; `max` bytes at most. */
export function previewBytes(bytes: Buffer, max = 48): string {
  const head = bytes.subarray(0, max);
  const more = bytes.length > max ? '...' : '';
  const printable = head.every((b) => (b >= 0x20 && b < 0x7f) || b === 0x09 || b === 0x0a || b === 0x0d);
  if (printable) return `${JSON.stringify(head.toString('latin1'))}${more}`;
  return `hex ${head.toString('hex').replace(/(..)(?=.)/g, '$1 ')}${more}`;
}
