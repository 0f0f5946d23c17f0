// Attack 18r (L2, L4, I2), through the built server and the real kubectl: a bundle API server
// shared by keys stays up for each of them, only the kubeconfig's holder reaches it, and kubectl's
// warnings reach the answer.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_K3S, fenced } from './helpers/bundles.js';
import { createKey, rpc, startNode, tempDataDir, type Node } from './helpers/control.js';
import { tempDir } from './helpers/programs.js';

let data: Awaited<ReturnType<typeof tempDataDir>>;
let store: string[];
let root: string;
let node: Node;

beforeAll(async () => {
  data = await tempDataDir();
  store = ['--data-dir', data.dir];
  root = tempDir('debugkit-shared-root-');
  // An extracted bundle, used in place by every key that opens it.
  mkdirSync(path.join(root, 'small'));
  execFileSync('tar', ['-xzf', BUNDLE_K3S, '-C', path.join(root, 'small')]);
  // A bundle whose pods file the API server skips, with a Warning.
  mkdirSync(path.join(root, 'warned', 'cluster-resources', 'pods'), { recursive: true });
  writeFileSync(path.join(root, 'warned', 'cluster-resources', 'pods', 'ns0.json'), '{"kind":"PodList","items":[{"metadata":');
  await createKey(store, 'bootstrap', 'gdb:read');
  node = await startNode([...store, '--root', root, '--bundle-dir', tempDir('debugkit-shared-store-'), '--toolsets', 'bundles']);
}, 60_000);

afterAll(async () => {
  await node?.stop();
  await data?.cleanup();
});

let nextId = 1;
/** A plain JSON-RPC tools/call (no MCP session: the key's own). */
async function tool(key: string, name: string, args: object = {}): Promise<{ isError: boolean; text: string; structured: any }> {
  const r = await rpc(node.url, key, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } });
  if (r.body.error) return { isError: true, text: r.body.error.message, structured: undefined };
  return { isError: r.body.result.isError === true, text: r.body.result.content.map((c: { text?: string }) => c.text ?? '').join(''), structured: r.body.result.structuredContent };
}

async function open(key: string, source: string, force = false): Promise<{ kubeconfig_path: string }> {
  const r = await tool(key, 'initialize_bundle', { source, force });
  expect(r.isError, r.text).toBe(false);
  return r.structured;
}

async function pods(key: string): Promise<string> {
  const r = await tool(key, 'kubectl', { command: 'get pods -A' });
  expect(r.isError, r.text).toBe(false);
  return fenced(r.text);
}

/** A raw GET of the pod list on the server a kubeconfig names: `path` replaces its path (the token), `host` its Host. */
function get(kubeconfig: string, { path: prefix, host }: { path?: string; host?: string } = {}): Promise<number> {
  const server = new URL(JSON.parse(readFileSync(kubeconfig, 'utf8')).clusters[0].cluster.server);
  const p = prefix ?? server.pathname.replace(/\/$/, '');
  return new Promise((resolve, reject) => {
    const req = http.get(`http://${server.host}${p}/api/v1/pods`, { headers: host ? { Host: host } : {} }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
}

describe('a bundle directory served to several keys (attack 18r L2)', () => {
  it("key B's force: true leaves key A's kubectl working; a kubeconfig removed is refused clearly, and put back by initializing again", async () => {
    const a = await createKey(store, 'shared-a', 'bundles', ['--rate', 'unlimited']);
    const b = await createKey(store, 'shared-b', 'bundles', ['--rate', 'unlimited']);
    const opened = await open(a.key, 'small');
    const before = await pods(a.key);
    expect(before).toMatch(/kube-system/);
    await open(b.key, 'small', true);
    expect(await pods(a.key)).toBe(before);
    expect(await pods(b.key)).toBe(before);

    unlinkSync(opened.kubeconfig_path);
    const refused = await tool(a.key, 'kubectl', { command: 'get pods -A' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/kubeconfig .* is gone\): call initialize_bundle again/);
    expect(refused.text).not.toMatch(/8080/);
    await open(a.key, 'small');
    expect(await pods(a.key)).toBe(before);
    expect(await pods(b.key)).toBe(before);
  });
});

describe('who reaches a bundle API server (attack 18r L4)', () => {
  it('only a request with the kubeconfig token and the Host 127.0.0.1:PORT or localhost:PORT', async () => {
    const a = await createKey(store, 'access-a', 'bundles', ['--rate', 'unlimited']);
    const { kubeconfig_path: kubeconfig } = await open(a.key, 'small');
    const port = new URL(JSON.parse(readFileSync(kubeconfig, 'utf8')).clusters[0].cluster.server).port;
    expect(await get(kubeconfig)).toBe(200);
    expect(await get(kubeconfig, { host: `localhost:${port}` })).toBe(200);
    expect(await get(kubeconfig, { path: '' })).toBe(401);
    expect(await get(kubeconfig, { path: '/support-bundle' })).toBe(401);
    expect(await get(kubeconfig, { host: 'attacker.example' })).toBe(421);
    expect(await get(kubeconfig, { host: `attacker.example:${port}` })).toBe(421);
    // kubectl reaches it through the kubeconfig, and the token never shows in an answer.
    const r = await tool(a.key, 'kubectl', { command: 'get pods -A', timeout: 20 });
    expect(r.isError, r.text).toBe(false);
    const token = new URL(JSON.parse(readFileSync(kubeconfig, 'utf8')).clusters[0].cluster.server).pathname.slice(1);
    expect(token).toMatch(/^dk-[\w-]{43}$/);
    const missing = await tool(a.key, 'kubectl', { command: 'get pods no-such-pod -n default' });
    expect(missing.isError).toBe(true);
    expect(missing.text + r.text).not.toContain(token);
  });
});

describe("kubectl's warnings (attack 18r I2)", () => {
  it('a bundle file the API server skipped is named in the answer', async () => {
    const a = await createKey(store, 'warned-a', 'bundles', ['--rate', 'unlimited']);
    await open(a.key, 'warned');
    const r = await tool(a.key, 'kubectl', { command: 'get pods -A' });
    expect(r.isError, r.text).toBe(false);
    expect(r.text).toMatch(/kubectl warned:\nWarning: .*ns0\.json skipped/);
    expect(r.structured.warnings).toEqual([expect.stringMatching(/ns0\.json skipped/)]);
  });
});
