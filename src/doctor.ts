import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';

export interface EngineCheck {
  engine: string;
  neededBy: string;
  found: boolean;
  version?: string;
  path?: string;
  install: string;
}

interface Probe {
  engine: string;
  neededBy: string;
  install: string;
  command(): [string, string[]] | undefined;
  version(out: string): string | undefined;
}

const firstLine = (out: string) => out.split('\n').find((l) => l.trim())?.trim();

function postgresBin(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(`${base}/${v}/bin/postgres`)) return `${base}/${v}/bin/postgres`;
  return undefined;
}

const PROBES: Probe[] = [
  { engine: 'gdb', neededBy: 'gdb, debugger', install: 'apt-get install -y gdb', command: () => ['gdb', ['--version']], version: firstLine },
  {
    engine: 'python3 + debugpy',
    neededBy: 'python',
    install: 'apt-get install -y python3-debugpy   (or: pip install debugpy)',
    command: () => ['/usr/bin/python3', ['-c', 'import debugpy, sys; print(sys.version.split()[0], "debugpy", debugpy.__version__)']],
    version: firstLine,
  },
  {
    engine: 'kubectl',
    neededBy: 'bundles',
    install: 'apt-get install -y kubernetes-client',
    command: () => ['kubectl', ['version', '--client']],
    version: firstLine,
  },
  {
    engine: 'proxychains4',
    neededBy: 'mocks',
    install: 'apt-get install -y proxychains4',
    command: () => (existsSync('/usr/bin/proxychains4') ? ['dpkg-query', ['-W', '-f=${Version}', 'proxychains4']] : undefined),
    version: (out) => (out.trim() ? `proxychains4 ${out.trim()}` : undefined),
  },
  {
    engine: 'postgresql',
    neededBy: 'mocks (tests)',
    install: 'apt-get install -y postgresql',
    command: () => {
      const bin = postgresBin();
      return bin ? [bin, ['--version']] : undefined;
    },
    version: firstLine,
  },
  { engine: 'gcc', neededBy: 'tests (C programs)', install: 'apt-get install -y gcc', command: () => ['gcc', ['--version']], version: firstLine },
];

function run(cmd: string, args: string[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 10_000 }, (err, stdout, stderr) => resolve(err ? undefined : `${stdout}${stderr}`));
  });
}

export async function checkEngines(): Promise<EngineCheck[]> {
  return Promise.all(
    PROBES.map(async (probe) => {
      const command = probe.command();
      const out = command ? await run(...command) : undefined;
      const version = out === undefined ? undefined : probe.version(out);
      return { engine: probe.engine, neededBy: probe.neededBy, found: version !== undefined, version, install: probe.install };
    }),
  );
}

export function renderDoctor(checks: EngineCheck[]): string {
  const lines = ['debugkit doctor: engines', ''];
  for (const c of checks) {
    const mark = c.found ? 'ok     ' : 'MISSING';
    lines.push(`${mark} ${c.engine.padEnd(18)} ${(c.version ?? '').padEnd(48)} (for ${c.neededBy})`);
    if (!c.found) lines.push(`        install: ${c.install}`);
  }
  const missing = checks.filter((c) => !c.found).length;
  lines.push('', missing === 0 ? 'All engines present.' : `${missing} missing: run the install commands above as root.`);
  return lines.join('\n');
}
