import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { RequestRewriter } from './http-forward.js';
import { errorResponse, type HttpProxyError, type HttpTarget } from './http-proxy.js';
import { HOP_HIGH_WATER_MARK } from './pipe.js';

/** How long the handler of the previous origin may take to finish once it got EOF. */
const SWITCH_GRACE_MS = 5000;
/** Forwarded pieces of one read up to this size are joined into one. */
const COALESCE_BYTES = 64 * 1024;

export type SwitchHandler = (target: HttpTarget, rest: Buffer) => void;

/**
 * The client side of a plain-proxy connection as its handler sees it: a Duplex that reads the
 * client's requests rewritten to origin form and writes responses straight to the client socket.
 *
 * When the client sends a request for another origin on the same connection, this stream ends
 * (EOF, like a client closing), and once its handler has finished writing the socket is handed to
 * `onSwitch` with the new request, for a new intercepted connection. HTTP/1.1 clients send the
 * next request only after the previous response, so the EOF cannot cut a response short.
 */
export class ForwardedHttpStream extends Duplex {
  private readonly rewriter: RequestRewriter;
  private forwardedAny = false;
  private switching: { target: HttpTarget; rest: Buffer } | undefined;
  private handedOver = false;
  /** The socket is no longer ours to destroy: answered with an error, or handed to the next origin. */
  private released = false;
  private switchTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly socket: Socket,
    target: HttpTarget,
    initial: Buffer,
    private readonly onSwitch: SwitchHandler,
  ) {
    super({ allowHalfOpen: true, highWaterMark: HOP_HIGH_WATER_MARK });
    this.rewriter = new RequestRewriter(target);
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', this.onError);
    socket.on('close', this.onClose);
    if (initial.length > 0) this.onData(initial);
  }

  private readonly onData = (chunk: Buffer): void => {
    const result = this.rewriter.feed(chunk);
    // A rewritten head and the body bytes after it leave in one write (one segment, as the client
    // sent them), unless that would copy a large body.
    const size = result.forward.reduce((n, part) => n + part.length, 0);
    const parts = result.forward.length > 1 && size <= COALESCE_BYTES ? [Buffer.concat(result.forward, size)] : result.forward;
    let more = true;
    for (const part of parts) {
      this.forwardedAny = true;
      more = this.push(part) && more;
    }
    if (!more) this.socket.pause();
    if (result.error) this.fail(result.error);
    else if (result.switchTo) this.beginSwitch(result.switchTo);
  };

  private readonly onEnd = (): void => {
    this.push(null);
  };
  private readonly onError = (err: Error): void => {
    this.destroy(err);
  };
  private readonly onClose = (): void => {
    this.destroy();
  };

  private fail(err: HttpProxyError): void {
    this.detach();
    this.released = true;
    // A refusal can only be answered before any response bytes could be in flight.
    if (!this.forwardedAny && this.socket.writable) {
      this.socket.end(errorResponse(err.status, err.message), () => this.socket.destroy());
    } else {
      this.socket.destroy();
    }
    this.destroy(err);
  }

  private beginSwitch(next: { target: HttpTarget; rest: Buffer }): void {
    this.switching = next;
    this.released = true;
    this.socket.pause();
    this.detach();
    this.push(null);
    // A handler that never finishes must not keep the client's next request waiting forever.
    this.switchTimer = setTimeout(() => this.destroy(), SWITCH_GRACE_MS);
    this.switchTimer.unref();
  }

  private handOver(): void {
    if (this.handedOver || !this.switching) return;
    this.handedOver = true;
    clearTimeout(this.switchTimer);
    if (!this.socket.destroyed) this.onSwitch(this.switching.target, this.switching.rest);
  }

  private detach(): void {
    this.socket.off('data', this.onData);
    this.socket.off('end', this.onEnd);
    this.socket.off('error', this.onError);
    this.socket.off('close', this.onClose);
  }

  override _read(): void {
    if (!this.switching) this.socket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    if (this.socket.write(chunk)) callback();
    else this.socket.once('drain', () => callback());
  }

  override _final(callback: (err?: Error | null) => void): void {
    if (this.switching) {
      callback();
      this.handOver();
    } else {
      this.socket.end(callback);
    }
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    if (this.switching) this.handOver();
    else if (!this.released) {
      this.detach();
      this.socket.destroy(err ?? undefined);
    }
    callback(err);
  }
}
