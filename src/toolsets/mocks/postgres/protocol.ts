/**
 * PostgreSQL protocol constants (protocol.html "Message Formats"), the one place they are written:
 * every postgres file (the sniffer, the frontend parser, the grouper, the catalog, the replayer
 * and the upstream client) uses these.
 */

/** PostgreSQL's MAX_STARTUP_PACKET_LENGTH. */
export const MAX_STARTUP_BYTES = 10_000;
export const SSL_REQUEST_CODE = 80877103;
export const GSSENC_REQUEST_CODE = 80877104;
export const CANCEL_REQUEST_CODE = 80877102;
/** Protocol 3.0 as the StartupMessage writes it (major << 16 | minor). */
export const PROTOCOL_3_0 = 196608;

/** Type bytes of the messages a client sends (as one-letter strings, as the parsers give them). */
export const Frontend = {
  Query: 'Q',
  Parse: 'P',
  Bind: 'B',
  Describe: 'D',
  Execute: 'E',
  Sync: 'S',
  Flush: 'H',
  Close: 'C',
  Terminate: 'X',
  /** PasswordMessage, SASLInitialResponse, SASLResponse, GSSResponse. */
  Password: 'p',
  FunctionCall: 'F',
  CopyData: 'd',
  CopyDone: 'c',
  CopyFail: 'f',
} as const;

/** Type bytes of the messages a server sends. */
export const Backend = {
  Authentication: 'R',
  ParameterStatus: 'S',
  BackendKeyData: 'K',
  ReadyForQuery: 'Z',
  ParseComplete: '1',
  BindComplete: '2',
  CloseComplete: '3',
  NoData: 'n',
  EmptyQuery: 'I',
  PortalSuspended: 's',
  CommandComplete: 'C',
  ParameterDescription: 't',
  RowDescription: 'T',
  DataRow: 'D',
  ErrorResponse: 'E',
  NoticeResponse: 'N',
  NegotiateProtocolVersion: 'v',
  CopyInResponse: 'G',
  CopyOutResponse: 'H',
  CopyBothResponse: 'W',
  CopyData: 'd',
  CopyDone: 'c',
  NotificationResponse: 'A',
} as const;

/** Authentication request codes (the int32 after an 'R'). */
export const Auth = {
  Ok: 0,
  KerberosV5: 2,
  CleartextPassword: 3,
  MD5Password: 5,
  GSS: 7,
  GSSContinue: 8,
  SSPI: 9,
  SASL: 10,
  SASLContinue: 11,
  SASLFinal: 12,
} as const;

/** Authentication requests the client must answer with a `p` message. */
export const AUTH_NEEDS_ANSWER: ReadonlySet<number> = new Set([Auth.CleartextPassword, Auth.MD5Password, Auth.GSS, Auth.GSSContinue, Auth.SSPI, Auth.SASL, Auth.SASLContinue]);
/** The requests that want the user's password (in clear, MD5-hashed, or through SCRAM). */
export const AUTH_ASKS_PASSWORD: ReadonlySet<number> = new Set([Auth.CleartextPassword, Auth.MD5Password, Auth.SASL]);

/** What Describe and Close name: a prepared statement or a portal. */
export const Target = { Statement: 'S', Portal: 'P' } as const;
export type TargetCode = (typeof Target)[keyof typeof Target];

/** The one byte answering an SSLRequest or GSSENCRequest: no encryption, go on in plaintext. */
export const ENCRYPTION_REFUSED = 'N';

/** ReadyForQuery transaction status bytes. */
export const TxStatus = { Idle: 'I', InTransaction: 'T', Failed: 'E' } as const;
