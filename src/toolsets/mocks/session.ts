import { debugkitDataDir } from '../../core/dirs.js';
import { DebugkitCa, tlsEnv } from './tls/index.js';

/** Where the debugkit CA lives: private to this user, made once per install. */
export function defaultCaDir(): string {
  return debugkitDataDir('ca');
}

let caPromise: Promise<{ ca: DebugkitCa; env: Record<string, string> }> | undefined;

/** The CA and the environment that makes programs trust it (system CAs + ours). */
export function loadCa(warn: (message: string) => void): Promise<{ ca: DebugkitCa; env: Record<string, string> }> {
  caPromise ??= (async () => {
    const ca = await DebugkitCa.load(defaultCaDir(), { warn });
    return { ca, env: tlsEnv(await ca.caBundle()) };
  })();
  caPromise.catch(() => (caPromise = undefined));
  return caPromise;
}

/** Loopback names a proxied program may use for debugkit's own HTTP server. */
export function isOwnServer(host: string, port: number, ownPorts: number[]): boolean {
  const loopback = host === 'localhost' || host === '::1' || host.startsWith('127.');
  return loopback && ownPorts.includes(port);
}
