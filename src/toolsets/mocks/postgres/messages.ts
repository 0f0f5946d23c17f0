import type { Frontend, TargetCode } from './protocol.js';
/**
 * The client's messages as frontend.ts decodes them (protocol v3, "Message Formats" in the
 * PostgreSQL docs). Every one keeps its raw bytes: recorders store them, replayers compare them.
 */

export interface Raw {
  /** The whole message as sent: type byte (typed messages), length, body. */
  raw: Buffer;
}
export interface StartupMessage extends Raw {
  type: 'startup';
  protocolVersion: number;
  parameters: Record<string, string>;
}
export interface SslRequest extends Raw {
  type: 'ssl';
}
export interface GssEncRequest extends Raw {
  type: 'gssenc';
}
export interface CancelRequest extends Raw {
  type: 'cancel';
  processId: number;
  /** 4 bytes in protocol 3.0, up to 256 in 3.2. */
  secretKey: Buffer;
}
export type UntypedMessage = StartupMessage | SslRequest | GssEncRequest | CancelRequest;

export interface QueryMessage extends Raw {
  type: typeof Frontend.Query;
  query: string;
}
export interface ParseMessage extends Raw {
  type: typeof Frontend.Parse;
  name: string;
  query: string;
  /** Parameter type OIDs the client fixed (0 = let the server infer). */
  paramTypes: number[];
}
export interface BindMessage extends Raw {
  type: typeof Frontend.Bind;
  portal: string;
  statement: string;
  /** As sent: [] = all text, [f] = all f, else one per parameter. */
  paramFormats: number[];
  /** null = SQL NULL. */
  params: Array<Buffer | null>;
  /** As sent: [] = all text, [f] = all f, else one per column. */
  resultFormats: number[];
}
export interface DescribeMessage extends Raw {
  type: typeof Frontend.Describe;
  target: TargetCode;
  name: string;
}
export interface CloseMessage extends Raw {
  type: typeof Frontend.Close;
  target: TargetCode;
  name: string;
}
export interface ExecuteMessage extends Raw {
  type: typeof Frontend.Execute;
  portal: string;
  maxRows: number;
}
/** Sync, Flush, Terminate, CopyDone: no body. */
export interface BareMessage extends Raw {
  type: typeof Frontend.Sync | typeof Frontend.Flush | typeof Frontend.Terminate | typeof Frontend.CopyDone;
}
/**
 * Bodies kept undecoded: `p` means PasswordMessage, SASLInitialResponse, SASLResponse or
 * GSSResponse depending on what the server asked for (see `decodePasswordBody`); `d`/`f` are
 * CopyData/CopyFail, `F` a FunctionCall.
 */
export interface OpaqueMessage extends Raw {
  type: typeof Frontend.Password | typeof Frontend.CopyData | typeof Frontend.CopyFail | typeof Frontend.FunctionCall;
  body: Buffer;
}
export type TypedMessage = QueryMessage | ParseMessage | BindMessage | DescribeMessage | CloseMessage | ExecuteMessage | BareMessage | OpaqueMessage;
export type FrontendMessage = UntypedMessage | TypedMessage;
