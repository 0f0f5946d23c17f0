/**
 * RESP framing (Redis serialization protocol, RESP2 and RESP3): where one value ends, a command's
 * arguments, and a command written back. Only framing: values are never interpreted beyond that.
 *
 * Types by first byte: simple `+ - : _ , # (` (a line), bulk `$ ! =` (length line, bytes, CRLF;
 * `$-1` is RESP2's null), aggregates `* ~ > %` (count line, then count values; `%` counts pairs;
 * `*-1` is a null array), attributes `|` (pairs, then the value they describe). A client may also
 * send an inline command: a line of words.
 */

const CRLF = 0x0a;
/** Nesting deeper than this is refused (a hostile peer cannot recurse us out of stack). */
const MAX_DEPTH = 64;
const MAX_COUNT = 1 << 24;

export class RespError extends Error {}

/** The line ending at or after `from` (index of its CR), or -1 when not yet received. */
function lineEnd(buf: Buffer, from: number): number {
  const lf = buf.indexOf(CRLF, from);
  if (lf < 0) return -1;
  if (lf === from || buf[lf - 1] !== 0x0d) throw new RespError('a RESP line does not end with CRLF');
  return lf - 1;
}

function intOf(buf: Buffer, start: number, end: number): number {
  const text = buf.toString('latin1', start, end);
  if (!/^-?\d{1,12}$/.test(text)) throw new RespError(`not a RESP length: ${JSON.stringify(text.slice(0, 20))}`);
  return Number(text);
}

/**
 * The offset just past the RESP value that starts at `at`, or -1 when `buf` does not hold all of
 * it yet. Throws RespError on bytes that are not RESP.
 */
export function respEnd(buf: Buffer, at: number, depth = 0): number {
  if (at >= buf.length) return -1;
  if (depth > MAX_DEPTH) throw new RespError('RESP nested too deep');
  const type = buf[at]!;
  const eol = lineEnd(buf, at + 1);
  if (eol < 0) return -1;
  const next = eol + 2;
  switch (type) {
    case 0x2b: // +
    case 0x2d: // -
    case 0x3a: // :
    case 0x5f: // _
    case 0x2c: // ,
    case 0x23: // #
    case 0x28: // (
      return next;
    case 0x24: // $
    case 0x21: // !
    case 0x3d: {
      // =
      const len = intOf(buf, at + 1, eol);
      if (len < 0) return next;
      const end = next + len + 2;
      if (end > buf.length) return -1;
      if (buf[end - 2] !== 0x0d || buf[end - 1] !== 0x0a) throw new RespError('a RESP bulk string does not end with CRLF');
      return end;
    }
    case 0x2a: // *
    case 0x7e: // ~
    case 0x3e: // >
    case 0x25: // %
    case 0x7c: {
      // |
      let count = intOf(buf, at + 1, eol);
      if (count < 0) return next;
      if (count > MAX_COUNT) throw new RespError('RESP aggregate too large');
      if (type === 0x25 || type === 0x7c) count *= 2;
      let pos = next;
      for (let i = 0; i < count; i++) {
        pos = respEnd(buf, pos, depth + 1);
        if (pos < 0) return -1;
      }
      // An attribute describes the value that follows it: both are one reply.
      return type === 0x7c ? respEnd(buf, pos, depth + 1) : pos;
    }
    default:
      throw new RespError(`not a RESP value: first byte 0x${type.toString(16)}`);
  }
}

/** The end of one client command at `at` (RESP array or inline line), or -1 when incomplete. */
export function commandEnd(buf: Buffer, at: number): number {
  if (at >= buf.length) return -1;
  if (buf[at] === 0x2a) return respEnd(buf, at);
  const lf = buf.indexOf(CRLF, at);
  return lf < 0 ? -1 : lf + 1;
}

/** A command's arguments (bulk strings of an array, or the words of an inline line). */
export function commandArgs(cmd: Buffer): Buffer[] {
  if (cmd[0] !== 0x2a) {
    return cmd
      .toString('latin1')
      .trim()
      .split(/\s+/)
      .filter((w) => w !== '')
      .map((w) => Buffer.from(w, 'latin1'));
  }
  const eol = lineEnd(cmd, 1);
  const count = intOf(cmd, 1, eol);
  const args: Buffer[] = [];
  let pos = eol + 2;
  for (let i = 0; i < count; i++) {
    if (cmd[pos] !== 0x24) throw new RespError('a command argument is not a bulk string');
    const e = lineEnd(cmd, pos + 1);
    const len = intOf(cmd, pos + 1, e);
    const start = e + 2;
    args.push(cmd.subarray(start, start + Math.max(0, len)));
    pos = start + Math.max(0, len) + 2;
  }
  return args;
}

/** A command as clients send it: an array of bulk strings. */
export function encodeCommand(args: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) parts.push(Buffer.from(`$${a.length}\r\n`), a, Buffer.from('\r\n'));
  return Buffer.concat(parts);
}

/** A RESP error reply line (no CR/LF inside). */
export function errorReply(message: string): Buffer {
  return Buffer.from(`-${message.replace(/[\r\n]+/g, ' ')}\r\n`, 'utf8');
}

/** Is this a RESP3 push (out-of-band data such as pub/sub messages and invalidations)? */
export function isPush(reply: Buffer): boolean {
  return reply[0] === 0x3e;
}

export const REDACTED = Buffer.from('(redacted)');

/**
 * The command with its secrets replaced (AUTH's password, HELLO's AUTH password, MIGRATE's AUTH):
 * recorded this way so no password lands in a mock file, and compared this way at replay, so a
 * replay needs no password.
 */
export function redactArgs(args: readonly Buffer[]): { args: Buffer[]; redacted: boolean } {
  const name = args[0]?.toString('latin1').toUpperCase();
  const out = [...args];
  let redacted = false;
  const hide = (i: number) => {
    if (i < out.length) {
      out[i] = REDACTED;
      redacted = true;
    }
  };
  if (name === 'AUTH') hide(out.length - 1);
  else if (name === 'HELLO') {
    for (let i = 2; i < out.length; i++) {
      if (out[i]!.toString('latin1').toUpperCase() === 'AUTH') hide(i + 2);
    }
  } else if (name === 'MIGRATE') {
    for (let i = 1; i < out.length; i++) {
      const w = out[i]!.toString('latin1').toUpperCase();
      if (w === 'AUTH') hide(i + 1);
      if (w === 'AUTH2') hide(i + 2);
    }
  }
  return { args: out, redacted };
}

/** A short text of a command for messages: `SET "user:1" "ada"` (long and binary arguments cut). */
export function describeCommand(args: readonly Buffer[]): string {
  const shown = args.slice(0, 6).map((a, i) => {
    const text = a.toString('utf8');
    const s = i === 0 ? text.toUpperCase() : JSON.stringify(text.length > 40 ? `${text.slice(0, 37)}...` : text);
    return s;
  });
  return shown.join(' ') + (args.length > 6 ? ` ... (${args.length} arguments)` : '');
}
