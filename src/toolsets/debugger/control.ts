import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../../core/files.js';
import { VERSION } from '../../version.js';

/**
 * What the debugger toolset needs from the control plane (keys, scopes, quotas, audit, crash
 * signatures). The local defaults below make every tool work for one local key; `planeControl`
 * (src/control/debugger.ts) answers from the control plane (keys, quotas, the audit chain, its store).
 */
export interface QuotaStatus {
  plan: string;
  limit: number | 'unlimited';
  used: number;
  remaining: number | 'unlimited';
  reset_at: string | null;
}

export interface LicenseInfo {
  product: string;
  version: string;
  license: string;
  key: { id: string; scopes: string[]; expires_at: string | null; expired: boolean };
  limits: Record<string, number | string>;
}

export interface AuditQuery {
  start_time?: string;
  end_time?: string;
  session_id?: string;
}

export interface AuditAnswer {
  configured: boolean;
  verified: boolean | null;
  entries: Array<Record<string, unknown>>;
  note?: string;
}

export interface CrashSignature {
  id: string;
  time: string;
  /** SIGSEGV, SIGABRT, heap-buffer-overflow, AssertionError, ... */
  failure: string;
  /** crash | memory | logic */
  pattern: 'crash' | 'memory' | 'logic';
  /** Normalized top frames, innermost first. */
  frames: string[];
  signature: string;
  program?: string;
  source: string;
}

/** Crash signatures by API key: a key adds its own and lists only its own (another key's crashes, programs and session names are not its to see). */
export interface SignatureStore {
  add(key: string, signature: CrashSignature): Promise<void>;
  list(key: string): Promise<CrashSignature[]>;
}

/** Who calls: the client's owner id and, where the server authenticated it, its principal (the key). */
export interface Caller {
  owner: string;
  principal?: { id: string; [key: string]: unknown };
}

export interface DebuggerControl {
  quota(caller: Caller): Promise<QuotaStatus>;
  license(caller: Caller): Promise<LicenseInfo>;
  audit(caller: Caller, query: AuditQuery): Promise<AuditAnswer>;
  signatures: SignatureStore;
}

/** How many signatures are kept and ranked at most (the newest). */
export const MAX_SIGNATURES = 50_000;

/** Signatures in one JSON file, rewritten atomically (temp file + rename) on every add. */
export class JsonSignatureStore implements SignatureStore {
  private cache: Array<CrashSignature & { key?: string }> | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly file: string) {}

  async list(key: string): Promise<CrashSignature[]> {
    // A signature recorded before keys were kept with them is the local user's.
    return (await this.all()).filter((s) => (s.key ?? 'local') === key).map(({ key: _key, ...sig }) => sig);
  }

  private async all(): Promise<Array<CrashSignature & { key?: string }>> {
    if (!this.cache) {
      try {
        const parsed = JSON.parse(readFileSync(this.file, 'utf8')) as { signatures?: CrashSignature[] };
        this.cache = Array.isArray(parsed.signatures) ? parsed.signatures : [];
      } catch {
        this.cache = [];
      }
    }
    return this.cache;
  }

  async add(key: string, signature: CrashSignature): Promise<void> {
    const all = await this.all();
    all.push({ ...signature, key });
    if (all.length > MAX_SIGNATURES) all.splice(0, all.length - MAX_SIGNATURES);
    // One write at a time, each atomic; a failed write does not stop the next one.
    const write = this.writing
      .catch(() => undefined)
      .then(async () => {
        await mkdir(path.dirname(this.file), { recursive: true });
        await writeFileAtomic(this.file, JSON.stringify({ version: 1, signatures: all }));
      });
    this.writing = write;
    await write;
  }
}

/** The single local key: no quota, no expiry, every scope; no audit store. */
export function localControl(dataDir: string): DebuggerControl {
  return {
    quota: async () => ({ plan: 'local', limit: 'unlimited', used: 0, remaining: 'unlimited', reset_at: null }),
    license: async () => ({
      product: 'debugkit',
      version: VERSION,
      license: 'Apache-2.0',
      key: { id: 'local', scopes: ['debugger:read', 'debugger:control', 'debugger:attach'], expires_at: null, expired: false },
      limits: { requests: 'unlimited', sessions_per_client: 'unlimited' },
    }),
    audit: async () => ({
      configured: false,
      verified: null,
      entries: [],
      note: 'no audit store is configured on this server: debugkit keeps an audit chain only when its control plane (API keys with a database) is enabled',
    }),
    signatures: new JsonSignatureStore(path.join(dataDir, 'signatures.json')),
  };
}
