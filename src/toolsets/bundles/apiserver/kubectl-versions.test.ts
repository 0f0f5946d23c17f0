import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_2025, requireKubectl, SDK_KUBECTL, startHarness, type KubectlHarness } from './testkit.js';

/**
 * Older and newer kubectl releases differ in discovery (aggregated or not), in Table
 * negotiation and in error text: a subset of commands against 1.27, 1.30 and 1.33.
 */
const VERSIONS = [27, 30, 33];

let h: KubectlHarness;
beforeAll(async () => {
  for (const v of VERSIONS) requireKubectl(SDK_KUBECTL(v));
  h = await startHarness(BUNDLE_2025);
});
afterAll(async () => h?.close());

describe.each(VERSIONS)('kubectl 1.%i', (minor) => {
  const bin = SDK_KUBECTL(minor);

  it('get pods -A prints the server-side table', async () => {
    const r = await h.kubectl(['get', 'pods', '-A'], bin);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/m);
    expect(r.stdout).toMatch(/^kube-system\s+coredns-ff8999cc5-6rpll\s+1\/1\s+Running\s+0\s+48m$/m);
  });

  it('get certificates -A resolves a custom resource through discovery', async () => {
    const r = await h.kubectl(['get', 'certificates', '-A'], bin);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^traefik\s+traefik-self-signed\s+True\s+traefik-self-signed\s+18m$/m);
  });

  it('logs, describe and NotFound behave', async () => {
    const logs = await h.kubectl(['logs', 'coredns-ff8999cc5-6rpll', '-n', 'kube-system', '--tail=1'], bin);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout.trim().split('\n')).toHaveLength(1);
    const describe = await h.kubectl(['describe', 'pod', 'coredns-ff8999cc5-6rpll', '-n', 'kube-system'], bin);
    expect(describe.stdout).toContain('Started container coredns');
    const missing = await h.kubectl(['get', 'pod', 'nope'], bin);
    expect(missing.stderr).toContain('Error from server (NotFound): pods "nope" not found');
  });

  it('delete fails with MethodNotAllowed', async () => {
    const r = await h.kubectl(['delete', 'pod', 'x'], bin);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('MethodNotAllowed');
  });
});
