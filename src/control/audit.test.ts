import { describe, expect, it } from 'vitest';
import { ChainVerifier, GENESIS, bodyOf, canonicalJson, chainHash, cleanTraceparent, redact, sha256Hex, type AuditRecord } from './audit.js';

function chain(n: number): AuditRecord[] {
  const out: AuditRecord[] = [];
  let prev = GENESIS;
  for (let seq = 1; seq <= n; seq++) {
    const body = {
      ts: new Date(1_700_000_000_000 + seq).toISOString(), event: 'call' as const, call_id: `c${seq}`, node: 'n', key_id: 'k', client: 'c',
      transport: 'http', session: null, debug_session: null, tool: 't', args: { i: seq }, outcome: null, error: null, duration_ms: null, traceparent: null,
    };
    const hash = chainHash(prev, seq, sha256Hex(canonicalJson(body)));
    out.push({ ...body, seq, prev_hash: prev, hash });
    prev = hash;
  }
  return out;
}

describe('canonical JSON', () => {
  it('sorts keys at every level and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[1,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
  });
});

describe('audit chain', () => {
  it('verifies an intact chain', () => {
    const v = new ChainVerifier();
    for (const r of chain(5)) v.add(r);
    expect(v.state()).toMatchObject({ ok: true, checked: 5 });
  });

  it('names the first changed entry', () => {
    const records = chain(5);
    records[2] = { ...records[2]!, args: { i: 99 } };
    const v = new ChainVerifier();
    for (const r of records) v.add(r);
    expect(v.state()).toMatchObject({ ok: false, first_broken: { seq: 3, reason: expect.stringMatching(/content was changed/) } });
  });

  it('names a gap and a re-hashed entry', () => {
    const records = chain(5);
    const gap = new ChainVerifier();
    for (const r of [...records.slice(0, 2), ...records.slice(3)]) gap.add(r);
    expect(gap.state().first_broken).toEqual({ seq: 4, reason: expect.stringMatching(/expected entry 3/) });
    // Rewriting entry 2 with a fresh hash breaks the link from entry 3.
    const forged = { ...records[1]!, tool: 'other' };
    forged.hash = chainHash(forged.prev_hash, 2, sha256Hex(canonicalJson(bodyOf(forged))));
    const v = new ChainVerifier();
    for (const r of [records[0]!, forged, ...records.slice(2)]) v.add(r);
    expect(v.state().first_broken?.seq).toBe(3);
  });
});

describe('redaction', () => {
  it('hides secrets by name and in text', () => {
    const out = redact({
      password: 'hunter2', apiKey: 'x', nested: { token: 't', keep: 'visible' }, env: { DB_PASSWORD: 'p', HOME: '/root' },
      command: 'API_TOKEN=abc123 npm start --pass', header: 'Authorization: Bearer abcdefghijklmnop', url: 'postgres://u:secretpw@h/db',
      list: ['dk_abcdefghijklmnopqrstuvwxyz'],
    }) as Record<string, any>;
    expect(out.password).toBe('[REDACTED]');
    expect(out.apiKey).toBe('[REDACTED]');
    expect(out.nested).toEqual({ token: '[REDACTED]', keep: 'visible' });
    expect(out.env).toEqual({ DB_PASSWORD: '[REDACTED]', HOME: '/root' });
    expect(out.command).toBe('API_TOKEN=[REDACTED] npm start --pass');
    expect(out.header).toBe('Authorization: Bearer [REDACTED]');
    expect(out.url).toBe('postgres://u:[REDACTED]@h/db');
    expect(out.list).toEqual(['[REDACTED]']);
    expect(JSON.stringify(out)).not.toMatch(/hunter2|abc123|secretpw|abcdefghijklmnop/);
  });

  it('cuts long strings', () => {
    expect(String(redact('x'.repeat(5000)))).toMatch(/\.\.\.\[3000 more characters\]$/);
  });

  it('keeps only well-formed traceparents', () => {
    expect(cleanTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(cleanTraceparent('00-xyz')).toBeNull();
    expect(cleanTraceparent(['a'])).toBeNull();
  });
});
