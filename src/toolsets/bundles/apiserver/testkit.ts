import { accessSync, constants } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runBounded } from '../../../core/run.js';
import { startBundleApiServer, type BundleApiServer } from './server.js';
import { SUPPORT_BUNDLES } from '../../../../test/helpers/fixtures.js';

/**
 * Test support for the bundle API server: fixture bundles extracted to temp dirs, a
 * kubeconfig pointing at the server, and the real kubectl run against it (no shell).
 * Not used at run time.
 */

export const FIXTURES = `${SUPPORT_BUNDLES}/`;
export const BUNDLE_2022 = 'support-bundle.tar.gz';
export const BUNDLE_2025 = 'support-bundle-2025-04-11T14_05_31.tar.gz';
export const BUNDLE_NO_RESOURCES = 'missing-version.tar.gz';

export const SYSTEM_KUBECTL = '/usr/bin/kubectl';
export const SDK_KUBECTL = (minor: number) => `/usr/lib/google-cloud-sdk/bin/kubectl.1.${minor}`;

/** Runs a program through the one bounded runner: its exit code (-1 when it could not start, was killed or ran over `timeoutMs`) and output. */
async function run(file: string, args: string[], env?: NodeJS.ProcessEnv, timeoutMs = 30_000): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await runBounded({ command: file, args, ...(env ? { env } : {}), timeoutMs, maxOutputChars: 64 * 1024 * 1024 });
    return { code: r.timedOut ? -1 : (r.code ?? -1), stdout: r.stdout, stderr: r.stderr };
  } catch {
    return { code: -1, stdout: '', stderr: '' };
  }
}

/** Fails (never skips) when a kubectl binary is missing, naming how to install one. */
export function requireKubectl(bin: string): void {
  try {
    accessSync(bin, constants.X_OK);
  } catch {
    throw new Error(
      `kubectl not found at ${bin}: these tests run the real kubectl against the bundle API server. ` +
        'Install it with: apt-get install -y kubernetes-client' +
        (bin.includes('google-cloud-sdk') ? ' (the versioned binaries come with the Google Cloud SDK kubectl component)' : ''),
    );
  }
}

/** Extracts a fixture archive into a fresh temp dir (fixtures are never touched in place). */
export async function extractFixture(archive: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'debugkit-bundle-'));
  const r = await run('tar', ['-xzf', path.join(FIXTURES, archive), '-C', dir]);
  if (r.code !== 0) throw new Error(`tar -xzf ${archive} failed: ${r.stderr}`);
  return dir;
}

export interface KubectlHarness {
  server: BundleApiServer;
  root: string;
  /** Runs a kubectl binary (default /usr/bin/kubectl) with this harness's kubeconfig. */
  kubectl(args: string[], bin?: string): Promise<{ code: number; stdout: string; stderr: string }>;
  close(): Promise<void>;
}

/** An extracted fixture, a server on it, and a kubeconfig with a dummy token and its own cache dir. */
export async function startHarness(archive: string, collectedAt?: Date): Promise<KubectlHarness> {
  return harnessOn(await extractFixture(archive), collectedAt);
}

/** The same over a bundle already in `root` (a temp dir the harness owns: close() removes it). */
export async function harnessOn(root: string, collectedAt?: Date): Promise<KubectlHarness> {
  const server = await startBundleApiServer({ root, collectedAt });
  const home = path.join(root, '.kubectl-home');
  await mkdir(home, { recursive: true });
  const kubeconfig = path.join(home, 'config');
  await writeFile(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: bundle',
      '  cluster:',
      `    server: ${server.url}`,
      'users:',
      '- name: reader',
      '  user:',
      '    token: dummy-token',
      'contexts:',
      '- name: bundle',
      '  context:',
      '    cluster: bundle',
      '    user: reader',
      'current-context: bundle',
      '',
    ].join('\n'),
  );
  // A private HOME and cache dir: no discovery cache leaks between servers or from the user's.
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, KUBECONFIG: kubeconfig, KUBECACHEDIR: path.join(home, 'cache') };
  return {
    server,
    root,
    kubectl: (args, bin = SYSTEM_KUBECTL) => run(bin, ['--request-timeout=20s', ...args], env),
    close: async () => {
      await server.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}
