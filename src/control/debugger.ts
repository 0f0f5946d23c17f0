import { keyOf } from './hooks.js';
import type { ControlPlane } from './plane.js';
import { VERSION } from '../version.js';
import { MAX_SIGNATURES, type AuditAnswer, type Caller, type CrashSignature, type DebuggerControl, type LicenseInfo, type QuotaStatus, type SignatureStore } from '../toolsets/debugger/control.js';

/** Entries one get_comprehensive_audit reads at most (the newest matching). */
export const AUDIT_ENTRIES = 100;
/** Characters of an entry's arguments (their JSON) an answer shows; past it, their head and length. */
export const AUDIT_ARGS_CHARS = 2048;
/** Characters of entries one answer holds: the newest that fit, the rest counted (a 25,000-token answer is about this). */
export const AUDIT_ANSWER_CHARS = 100_000;

/**
 * The debugger's control-plane needs answered by debugkit's control plane: quota_status from the
 * key's counters, license_info from the key, get_comprehensive_audit from the audit chain (with its
 * verification state), and crash signatures kept in the control store (SQLite, or PostgreSQL shared
 * by every node). Refusals (rate, quota, expiry, scope) happen before a call reaches the toolset.
 */
export function planeControl(plane: ControlPlane): DebuggerControl {
  const keyFor = (caller: Caller) => keyOf((caller.principal ?? { id: 'local' }) as Parameters<typeof keyOf>[0]);
  const signatures: SignatureStore = {
    add: (key: string, sig: CrashSignature) => plane.store.addSignature(key, sig.id, sig.time, sig),
    list: async (key: string) => (await plane.store.listSignatures(key, MAX_SIGNATURES)) as CrashSignature[],
  };
  return {
    async quota(caller): Promise<QuotaStatus> {
      const status = await plane.quotaStatus(keyFor(caller));
      // The contract shows one budget: the quota when the key has one, else its rate limit.
      const limit = status.quota ?? status.rate;
      if (!limit) return { plan: `key ${status.key_name}`, limit: 'unlimited', used: 0, remaining: 'unlimited', reset_at: null };
      return { plan: `key ${status.key_name}: ${limit.limit}/${limit.period}`, limit: limit.limit, used: limit.used, remaining: limit.remaining, reset_at: limit.reset_at };
    },
    async license(caller): Promise<LicenseInfo> {
      const key = keyFor(caller);
      const expires = key.expires_at ?? null;
      const limits: Record<string, number | string> = {};
      limits.rate = key.rate ? `${key.rate.limit}/${key.rate.unit}` : 'unlimited';
      limits.quota = key.quota ? `${key.quota.limit}/${key.quota.unit}` : 'unlimited';
      return {
        product: 'debugkit',
        version: VERSION,
        license: 'Apache-2.0',
        key: { id: key.id, scopes: key.scopes, expires_at: expires, expired: expires !== null && Date.parse(expires) <= Date.now() },
        limits,
      };
    },
    async audit(caller, query): Promise<AuditAnswer> {
      // A key reads its own entries only (another key's arguments, sessions and commands are not
      // its to see); the whole chain's verification state is reported. The operator reads every
      // key's entries with `debugkit audit export`. The answer is bounded before it is built: each
      // entry's arguments are cut in the store's query, and entries stop at AUDIT_ANSWER_CHARS.
      const keyId = keyFor(caller).id;
      const report = await plane.queryAudit({
        keyId,
        ...(query.start_time ? { since: query.start_time } : {}),
        ...(query.end_time ? { until: query.end_time } : {}),
        ...(query.session_id ? { session: query.session_id } : {}),
        limit: AUDIT_ENTRIES,
        preview: AUDIT_ARGS_CHARS,
        maxChars: AUDIT_ANSWER_CHARS,
      });
      const state = report.verification;
      const shown = `the newest ${report.entries.length} matching entries of this key (${keyId}) are shown`;
      const oldest = report.entries[0]?.ts;
      const rest = report.left_out ? `; ${report.left_out} older matching ones are left out to keep this answer under ${AUDIT_ANSWER_CHARS} characters (ask again with end_time before ${oldest})` : '';
      return {
        configured: true,
        verified: state.ok,
        // The chain's own fields (seq, hashes) say how many calls every key made in between: not a key's to know.
        entries: report.entries.map(({ seq: _seq, prev_hash: _prev, hash: _hash, ...entry }) => entry as Record<string, unknown>),
        note: state.ok
          ? // How long the whole chain is (every key's activity) is the operator's to know, not a key's.
            `the audit chain verifies (${state.from_seq <= 1 ? 'walked whole' : 'checked on from the last full walk, each entry shown re-hashed'}); ${shown}${rest}; arguments longer than ${AUDIT_ARGS_CHARS} characters are cut for display; the operator exports every key's entries whole with debugkit audit export`
          : `the audit chain is BROKEN at entry ${state.first_broken?.seq}: ${state.first_broken?.reason}`,
      };
    },
    signatures,
  };
}
