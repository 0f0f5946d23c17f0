// The debugger toolset on the control plane: quota_status, license_info and
// get_comprehensive_audit answer from the key and the audit chain, crash signatures are kept in
// the control store, and an expired key gets the contract's -32010 "License expired".
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, rpc, startNode, tempDataDir, type Node } from './helpers/control.js';
import { compileC, tempDir } from './helpers/programs.js';

let root: string;
let data: { dir: string; cleanup(): Promise<void> };
let node: Node;
let key: { key: string; id: string };

let nextId = 1;
/** A plain JSON-RPC tools/call, kindly-debugger's curl form (no session, no envelope). */
async function call(name: string, args: object = {}, bearer = key.key) {
  const r = await rpc(node.url, bearer, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } });
  return r;
}

beforeAll(async () => {
  root = tempDir('debugkit-dbgctl-');
  compileC(root, 'segv');
  data = await tempDataDir();
  key = await createKey(['--data-dir', data.dir], 'ci', 'debugger', ['--quota', '500/day', '--expires', '30d']);
  node = await startNode(['--data-dir', data.dir, '--root', root, '--toolsets', 'debugger', '--allow-attach']);
}, 60_000);

afterAll(async () => {
  await node?.stop();
  await data?.cleanup();
});

describe('debugger toolset on the control plane', () => {
  it("quota_status and license_info are the key's own", async () => {
    const quota = await call('debugger/quota_status');
    expect(quota.status).toBe(200);
    expect(quota.body.result.structuredContent).toMatchObject({ limit: 500, plan: expect.stringContaining('500/day') });
    expect(quota.body.result.structuredContent.used).toBeGreaterThanOrEqual(1);
    expect(quota.body.result.structuredContent.remaining).toBe(500 - quota.body.result.structuredContent.used);
    const license = await call('debugger_license_info');
    expect(license.body.result.structuredContent.key).toMatchObject({ id: key.id, scopes: ['debugger'], expired: false });
    expect(Date.parse(license.body.result.structuredContent.key.expires_at)).toBeGreaterThan(Date.now() + 29 * 86_400_000);
  });

  it('get_comprehensive_audit reads the verified audit chain', async () => {
    const audit = await call('debugger/get_comprehensive_audit', { start_time: new Date(Date.now() - 3_600_000).toISOString() });
    const body = audit.body.result.structuredContent;
    expect(body).toMatchObject({ configured: true, verified: true });
    const tools = body.entries.map((e: { tool: string }) => e.tool);
    expect(tools).toContain('debugger_quota_status');
    expect(tools).toContain('debugger_license_info');
  });

  it('keeps crash signatures in the control store', async () => {
    await call('debugger_launch', { program: 'segv' });
    const crash = await call('debugger_continue', { wait: 20 });
    expect(crash.body.result.structuredContent.reason).toMatch(/signal|SIGSEGV/i);
    const db = new Database(path.join(data.dir, 'control.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT body FROM signatures').all() as Array<{ body: string }>;
      expect(rows.length).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(rows.at(-1)!.body)).toMatchObject({ failure: 'SIGSEGV', pattern: 'crash' });
    } finally {
      db.close();
    }
    await call('debugger_detach');
  }, 60_000);

  it('an expired key gets -32010 License expired, with when', async () => {
    const old = await createKey(['--data-dir', data.dir], 'old', 'debugger', ['--expires', '1d']);
    const db = new Database(path.join(data.dir, 'control.db'));
    try {
      db.prepare('UPDATE keys SET expires_at = ? WHERE id = ?').run('2026-01-01T00:00:00.000Z', old.id);
    } finally {
      db.close();
    }
    const r = await call('debugger/quota_status', {}, old.key);
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({ code: -32010, message: 'License expired', data: { key_id: old.id, expired_at: '2026-01-01T00:00:00.000Z' } });
  });
});
