// Copies the non-TypeScript files the server reads at run time (docs, scripts) into dist/.
import { chmodSync, cpSync, existsSync } from 'node:fs';

const assets = [
  ['src/toolsets/gdb/docs', 'dist/toolsets/gdb/docs'],
  ['src/toolsets/gdb/exec-wrapper.sh', 'dist/toolsets/gdb/exec-wrapper.sh'],
  ['src/toolsets/python/boot', 'dist/toolsets/python/boot'],
];
for (const [from, to] of assets) {
  if (!existsSync(from)) throw new Error(`postbuild: missing ${from}`);
  cpSync(from, to, { recursive: true });
}
chmodSync('dist/toolsets/gdb/exec-wrapper.sh', 0o755);
chmodSync('dist/cli.js', 0o755);
