import { Duplex } from 'node:stream';

/**
 * A plain JS Duplex in front of another stream. node:http's server, given a socket with a native
 * handle (a net.Socket, a TLSSocket), reads that handle directly and would never see bytes already
 * buffered in the stream: exactly the sniffed first bytes the capture proxy leaves there. Through
 * this bridge the server reads with ordinary 'data' events, buffered bytes first.
 */
export class StreamBridge extends Duplex {
  private held = false;

  constructor(private readonly inner: Duplex) {
    super({ allowHalfOpen: true });
    inner.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) inner.pause();
    });
    inner.on('end', () => this.push(null));
    inner.on('error', (err: Error) => this.destroy(err));
    inner.on('close', () => {
      if (!this.destroyed) this.destroy();
    });
  }

  /** While held, nothing more is read from the inner stream (the reader asking for more does not resume it). */
  hold(on: boolean): void {
    if (this.held === on) return;
    this.held = on;
    if (on) this.inner.pause();
    else this.inner.resume();
  }

  override _read(): void {
    if (!this.held) this.inner.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.inner.write(chunk, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.inner.end(callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.inner.destroy();
    callback(error);
  }
}
