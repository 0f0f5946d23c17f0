import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { serialize } from 'pg-protocol';
import { waitBounded } from '../../../core/wait.js';
import { KeptShare, type KeptBytes, RELAYED_MAX_BYTES } from '../kept.js';
import type { StartupMessage } from './frontend.js';
import { Auth, AUTH_ASKS_PASSWORD, Backend } from './protocol.js';
import { authCodeOf, BackendSplitter, codeOf, errorFields } from './wire.js';

/**
 * The real server behind a replayed session, for the misses of `onMiss: passthrough | record`:
 * opened on the first miss, with the StartupMessage the client sent, then request groups in,
 * their answers (up to ReadyForQuery) out.
 *
 * Credentials: replay answers the client's startup itself, so the only secret it can hold is
 * the password the client gives when asked. The replayer asks for it (a cleartext password
 * request, on the local connection) only when misses may pass through and the recording shows
 * the server demanded a password; it is kept in memory for this connection, never written.
 * With it the server may ask for cleartext, MD5 or SCRAM-SHA-256; trust needs nothing. What
 * cannot work: GSSAPI/SSPI/Kerberos and certificate authentication (the secrets are the
 * client's, not a password), SCRAM-SHA-256-PLUS (channel binding needs TLS, which replay does
 * not speak upstream), and a server that asks for a password when the recording had none.
 *
 * Bounded (attack 18ah o1-3: endless 1 MiB DataRows and no ReadyForQuery held 1.8-2.2 GB): what is
 * read from the server and not yet handed out (a message being framed, messages waiting, the
 * answers of the group so far) is at most RELAYED_MAX_BYTES, what a replay holds of one answer it relays whole
 * every recorder has, and charged to `kept`, the replay's budget for calls not finished. Past
 * either, or past `timeoutMs` for a group, the exchange fails (UpstreamError, saying why) and the
 * connection is destroyed: nothing more is read, its bytes go back to the budget.
 */

/** How long the server may take to accept, authenticate, or answer one request group (the default of `timeoutMs`). */
export const UPSTREAM_TIMEOUT_MS = 30_000;

export class UpstreamError extends Error {}

export class PostgresUpstream {
  private socket: Duplex | undefined;
  private opening: Promise<void> | undefined;
  private readonly splitter = new BackendSplitter();
  private readonly inbox: Buffer[] = [];
  private wake: (() => void) | undefined;
  private closed: Error | undefined;
  /** Bytes read from the server and not handed out yet, lent by the replay's budget. */
  private held = 0;
  private readonly share: KeptShare;
  private readonly timeoutMs: number;
  private readonly limit: number | undefined;
  /** Transaction status the server reported last. */
  status = 'I';

  constructor(
    private readonly connect: () => Promise<Duplex>,
    private readonly startup: StartupMessage,
    private readonly password: string | undefined,
    private readonly where: string,
    limits: { kept?: KeptBytes; timeoutMs?: number } = {},
  ) {
    this.share = new KeptShare(limits.kept);
    this.timeoutMs = limits.timeoutMs ?? UPSTREAM_TIMEOUT_MS;
    this.limit = limits.kept?.limit;
  }

  /** Sends one request group; resolves with every answer up to and including ReadyForQuery. */
  async exchange(requests: readonly Buffer[]): Promise<Buffer[]> {
    this.opening ??= this.open();
    await this.opening;
    this.socket!.write(requests.length === 1 ? requests[0]! : Buffer.concat(requests));
    const out: Buffer[] = [];
    let bytes = 0;
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      const raw = await this.next('an answer', deadline);
      bytes += raw.length;
      // COPY FROM STDIN: the client was answered by mocks so far and sends no data to this server; refuse the COPY here.
      if (codeOf(raw) === Backend.CopyInResponse) {
        this.socket!.write(serialize.copyFail('debugkit: a COPY FROM STDIN that missed the mocks cannot be passed through'));
        continue;
      }
      out.push(raw);
      if (codeOf(raw) === Backend.ReadyForQuery) {
        this.status = String.fromCharCode(raw[5]!);
        // The answers are the caller's now (written to the program): off the budget.
        this.handedOut(bytes);
        return out;
      }
    }
  }

  close(): void {
    if (this.socket && !this.socket.destroyed) this.socket.end(serialize.end());
    this.socket?.destroy();
    this.forget();
  }

  /** Fails what waits with `err` and destroys the connection: nothing more is read from it. */
  private fail(err: UpstreamError): void {
    this.closed ??= err;
    this.socket?.destroy();
    this.forget();
    this.wake?.();
  }

  /** Drops what was read and not handed out, and gives it back to the budget. */
  private forget(): void {
    this.inbox.length = 0;
    this.held = 0;
    this.share.release();
  }

  private handedOut(n: number): void {
    this.held = Math.max(0, this.held - n);
    this.share.give(n);
  }

  private async open(): Promise<void> {
    let socket: Duplex;
    try {
      socket = await this.connect();
    } catch (err) {
      throw new UpstreamError(`could not reach the real server ${this.where}: ${(err as Error).message}`);
    }
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      if (this.closed) return;
      const held = this.held + chunk.length;
      if (held > RELAYED_MAX_BYTES) {
        return this.fail(
          new UpstreamError(
            `the real server ${this.where} answered over ${RELAYED_MAX_BYTES} bytes, the bound of an answer relayed whole (${held} bytes read, no ReadyForQuery yet); the connection to it was closed`,
          ),
        );
      }
      if (!this.share.take(chunk.length)) {
        return this.fail(
          new UpstreamError(
            `the real server's answer does not fit in the ${this.limit} bytes the replay keeps of calls not finished (other calls hold the rest); the connection to ${this.where} was closed`,
          ),
        );
      }
      this.held = held;
      try {
        this.inbox.push(...this.splitter.push(chunk));
      } catch (err) {
        this.closed = err as Error;
        socket.destroy();
      }
      this.wake?.();
    });
    const gone = (err?: Error) => {
      this.closed ??= err ?? new Error('the connection closed');
      this.wake?.();
    };
    socket.on('error', gone);
    socket.on('close', () => gone());
    socket.write(this.startup.raw);
    await this.authenticate();
  }

  private async authenticate(): Promise<void> {
    let scram: Scram | undefined;
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      const raw = await this.next('authentication', deadline);
      this.handedOut(raw.length);
      const code = codeOf(raw);
      if (code === Backend.ErrorResponse) throw new UpstreamError(`the real server ${this.where} refused the session: ${errorFields(raw).M ?? 'an error'}`);
      if (code === Backend.ReadyForQuery) return;
      if (code !== Backend.Authentication) continue; // ParameterStatus, BackendKeyData, NegotiateProtocolVersion: the client already has replayed ones
      const auth = authCodeOf(raw);
      if (auth === Auth.Ok) continue;
      if (auth === Auth.SASLFinal) {
        // The server proves it knows the password too: a server that does not is not the recorded one.
        if (!scram?.verify(raw.toString('utf8', 9))) throw new UpstreamError(`the real server ${this.where} sent a SCRAM server signature that does not match the password`);
        continue;
      }
      if (AUTH_ASKS_PASSWORD.has(auth)) {
        if (this.password === undefined) {
          throw new UpstreamError(
            `the real server ${this.where} asks for a password, and this replayed session has none (the recording needed no password, so replay did not ask the program for one)`,
          );
        }
      }
      const user = this.startup.parameters.user ?? '';
      if (auth === Auth.CleartextPassword) this.socket!.write(serialize.password(this.password!));
      else if (auth === Auth.MD5Password) {
        const inner = md5(this.password! + user);
        this.socket!.write(serialize.password(`md5${md5(Buffer.concat([Buffer.from(inner), raw.subarray(9, 13)]))}`));
      } else if (auth === Auth.SASL) {
        const mechanisms = raw.toString('utf8', 9).split('\0').filter(Boolean);
        if (!mechanisms.includes('SCRAM-SHA-256')) {
          throw new UpstreamError(`the real server ${this.where} offers only ${mechanisms.join(', ')}; replay can authenticate with SCRAM-SHA-256 only (channel binding needs TLS)`);
        }
        scram = new Scram(this.password!);
        this.socket!.write(serialize.sendSASLInitialResponseMessage('SCRAM-SHA-256', scram.first));
      } else if (auth === Auth.SASLContinue && scram) {
        this.socket!.write(serialize.sendSCRAMClientFinalMessage(scram.final(raw.toString('utf8', 9))));
      } else {
        throw new UpstreamError(`the real server ${this.where} asks for authentication method ${auth} (GSSAPI, SSPI or Kerberos), which replay cannot answer: the secrets are the program's own`);
      }
    }
  }

  private async next(what: string, deadline: number): Promise<Buffer> {
    for (;;) {
      if (this.closed instanceof UpstreamError) throw this.closed;
      if (this.inbox.length > 0) break;
      if (this.closed) throw new UpstreamError(`the real server ${this.where} closed the connection while replay waited for ${what}: ${this.closed.message}`);
      const left = deadline - Date.now();
      if (left <= 0) {
        // No reading after the deadline: the answer is given up, and the connection with it.
        this.fail(new UpstreamError(`the real server ${this.where} sent no ReadyForQuery within ${this.timeoutMs / 1000} s (replay waited for ${what}); the connection to it was closed`));
        continue;
      }
      await waitBounded<void>(
        (settle) => {
          const wake = () => settle();
          this.wake = wake;
          return () => void (this.wake === wake && (this.wake = undefined));
        },
        { timeoutMs: left },
      );
    }
    return this.inbox.shift()!;
  }
}

const md5 = (s: string | Buffer) => createHash('md5').update(s).digest('hex');
const hmac = (key: Buffer, s: string) => createHmac('sha256', key).update(s).digest();

/** The client side of SCRAM-SHA-256 (RFC 5802/7677) without channel binding. */
class Scram {
  private readonly nonce = randomBytes(18).toString('base64');
  private readonly bare = `n=*,r=${this.nonce}`;
  private serverSignature: string | undefined;
  readonly first = `n,,${this.bare}`;

  constructor(private readonly password: string) {}

  final(serverFirst: string): string {
    const attrs = new Map(serverFirst.split(',').map((kv) => [kv[0]!, kv.slice(2)] as const));
    const nonce = attrs.get('r') ?? '';
    const salt = Buffer.from(attrs.get('s') ?? '', 'base64');
    const iterations = Number(attrs.get('i'));
    if (!nonce.startsWith(this.nonce) || !Number.isInteger(iterations) || iterations < 1) throw new UpstreamError('the real server sent an invalid SCRAM challenge');
    const salted = pbkdf2Sync(this.password.normalize('NFKC'), salt, iterations, 32, 'sha256');
    const clientKey = hmac(salted, 'Client Key');
    const storedKey = createHash('sha256').update(clientKey).digest();
    const withoutProof = `c=biws,r=${nonce}`;
    const authMessage = `${this.bare},${serverFirst},${withoutProof}`;
    const signature = hmac(storedKey, authMessage);
    const proof = Buffer.from(clientKey.map((b, i) => b ^ signature[i]!));
    this.serverSignature = hmac(hmac(salted, 'Server Key'), authMessage).toString('base64');
    return `${withoutProof},p=${proof.toString('base64')}`;
  }

  /** The server-final message carries the signature only the password's owner can make. */
  verify(serverFinal: string): boolean {
    const v = serverFinal
      .split(',')
      .find((kv) => kv.startsWith('v='))
      ?.slice(2);
    return v !== undefined && this.serverSignature !== undefined && v === this.serverSignature;
  }
}
