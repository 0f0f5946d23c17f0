import type { Verdict } from '../protocol.js';

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

/** A command or reply still incomplete past this many bytes stops a recording and ends a replayed connection. */
export const MAX_BUFFERED = 64 * 1024 * 1024;

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
export function respEnd(buf: Buffer, at: number): number {
  const end = new RespFramer().end(at === 0 ? buf : buf.subarray(at));
  return end < 0 ? -1 : at + end;
}

/**
 * Frames RESP values (a server's replies) from a stream: where the value at the start of the
 * bytes ends. A value still arriving is framed on from where the last call stopped, aggregates
 * through a stack of what each still holds, so each byte is read once however many chunks it
 * comes in (respEnd, from the start each time, is quadratic on a large reply). Throws RespError
 * on bytes that are not RESP.
 */
export class RespFramer {
  /** Where framing goes on in the value at the start. */
  private at = 0;
  /** Where the search for the end of the line at `at` goes on. */
  private scan = 0;
  /** A bulk string whose length line is read: where it ends (0: none). */
  private bulkEnd = 0;
  /** Values each open aggregate still holds, innermost last. */
  private readonly open: number[] = [];

  /** The end of the value at the start of `buf` (the same start as the last call, more bytes after), or -1 when not whole yet. */
  end(buf: Buffer): number {
    for (;;) {
      if (this.bulkEnd > 0) {
        const end = this.bulkEnd;
        if (end > buf.length) return -1;
        if (buf[end - 2] !== 0x0d || buf[end - 1] !== 0x0a) throw new RespError('a RESP bulk string does not end with CRLF');
        this.bulkEnd = 0;
        if (this.done(end)) return end;
        continue;
      }
      if (this.at >= buf.length) return -1;
      const type = buf[this.at]!;
      const lf = buf.indexOf(CRLF, Math.max(this.scan, this.at + 1));
      if (lf < 0) {
        this.scan = buf.length;
        return -1;
      }
      if (lf - 1 <= this.at || buf[lf - 1] !== 0x0d) throw new RespError('a RESP line does not end with CRLF');
      const eol = lf - 1;
      const next = lf + 1;
      this.scan = 0;
      switch (type) {
        case 0x2b: // +
        case 0x2d: // -
        case 0x3a: // :
        case 0x5f: // _
        case 0x2c: // ,
        case 0x23: // #
        case 0x28: // (
          if (this.done(next)) return next;
          break;
        case 0x24: // $
        case 0x21: // !
        case 0x3d: {
          // =
          const len = intOf(buf, this.at + 1, eol);
          if (len < 0) {
            if (this.done(next)) return next;
          } else {
            this.at = next;
            this.bulkEnd = next + len + 2;
          }
          break;
        }
        case 0x2a: // *
        case 0x7e: // ~
        case 0x3e: // >
        case 0x25: // %
        case 0x7c: {
          // |
          const count = intOf(buf, this.at + 1, eol);
          if (count > MAX_COUNT) throw new RespError('RESP aggregate too large');
          // A map's pairs count twice; an attribute describes the value that follows it: both are one value.
          const holds = count < 0 ? 0 : (type === 0x25 || type === 0x7c ? 2 * count : count) + (type === 0x7c ? 1 : 0);
          if (holds === 0) {
            if (this.done(next)) return next;
          } else {
            if (this.open.length >= MAX_DEPTH) throw new RespError('RESP nested too deep');
            this.open.push(holds);
            this.at = next;
          }
          break;
        }
        default:
          throw new RespError(`not a RESP value: first byte 0x${type.toString(16)}`);
      }
    }
  }

  /** A value ended at `end`: it counts in each aggregate it closes. True when that ends the value at the start (framing begins anew). */
  private done(end: number): boolean {
    this.at = end;
    while (this.open.length > 0) {
      const top = this.open.length - 1;
      if (--this.open[top]! > 0) return false;
      this.open.pop();
    }
    this.at = 0;
    return true;
  }
}

/** The end of one client command at `at` (RESP array or inline line), or -1 when incomplete. */
export function commandEnd(buf: Buffer, at: number): number {
  const framer = new CommandFramer();
  const end = framer.end(at === 0 ? buf : buf.subarray(at));
  return end < 0 ? -1 : at + end;
}

/**
 * Arguments of one command at most. A real Redis takes up to 1,048,576 before AUTH, but replay
 * keys, compares and describes a command in one step on the main thread, about 1 µs an argument
 * here: 100,000 held the loop 100-190 ms a command (attack 18ao d2-1); 32,768 keeps it near 30 ms.
 */
export const MAX_COMMAND_ARGS = 32_768;
/** An inline command's line at most, as a real Redis (PROTO_INLINE_MAX_SIZE). */
export const MAX_INLINE_BYTES = 64 * 1024;

/**
 * Frames client commands from a stream: where the command at the start of the bytes ends. A
 * command still arriving is framed on from where the last call stopped (each byte is read once,
 * however many chunks it comes in), and is bounded: arguments are bulk strings (as a real Redis
 * wants them), at most MAX_COMMAND_ARGS of them, and an inline command is one line of at most
 * MAX_INLINE_BYTES. Throws RespError on anything else.
 */
export class CommandFramer {
  /** Where framing goes on in the command at the start (0: not begun). */
  private at = 0;
  /** Arguments still to frame (-1: the array's header not read yet). */
  private left = -1;

  /** The end of the command at the start of `buf` (the same start as the last call, more bytes after), or -1 when not whole yet. */
  end(buf: Buffer): number {
    if (buf.length === 0) return -1;
    if (buf[0] !== 0x2a) {
      const lf = buf.indexOf(CRLF, this.at);
      if (lf < 0 ? buf.length > MAX_INLINE_BYTES : lf >= MAX_INLINE_BYTES) throw new RespError(`an inline command over ${MAX_INLINE_BYTES / 1024} KiB`);
      if (lf < 0) {
        this.at = buf.length;
        return -1;
      }
      return this.done(lf + 1);
    }
    if (this.left < 0) {
      const eol = lineEnd(buf, 1);
      if (eol < 0) {
        if (buf.length > 32) throw new RespError('a RESP array header longer than a count');
        return -1;
      }
      const count = intOf(buf, 1, eol);
      if (count > MAX_COMMAND_ARGS) throw new RespError(`a command of ${count} arguments (at most ${MAX_COMMAND_ARGS})`);
      this.left = Math.max(0, count);
      this.at = eol + 2;
    }
    while (this.left > 0) {
      if (this.at >= buf.length) return -1;
      if (buf[this.at] !== 0x24) throw new RespError('a command argument is not a bulk string');
      const end = respEnd(buf, this.at);
      if (end < 0) return -1;
      this.at = end;
      this.left--;
    }
    return this.done(this.at);
  }

  /** Forgets a command half framed (its bytes were dropped). */
  reset(): void {
    this.at = 0;
    this.left = -1;
  }

  private done(end: number): number {
    this.reset();
    return end;
  }
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

/**
 * A Redis command as clients send it: a RESP array of bulk strings (`*2\r\n$3\r\nGET...`).
 * Inline commands (`PING\r\n`) stay generic: too much like other line protocols.
 */
export function detect(buf: Buffer, final: boolean): Verdict {
  if (buf[0] !== 0x2a) return 'no'; // '*'
  const text = buf.toString('latin1', 0, Math.min(buf.length, 32));
  if (/^\*[1-9]\d{0,6}\r\n\$\d{1,9}\r\n/.test(text)) return { protocol: 'redis' };
  if (final) return 'no';
  // Still a prefix of `*<n>\r\n$<len>\r\n`?
  return /^\*(\d{0,7}(\r(\n(\$(\d{0,10}\r?)?)?)?)?)?$/.test(text) ? 'maybe' : 'no';
}
