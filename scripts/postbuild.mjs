// Copies the non-TypeScript files the server reads at run time (docs, scripts) into dist/, and
// removes compiled files whose source is gone (tsc never deletes), so dist/ and the npm tarball
// hold only what the sources make.
import { chmodSync, cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';

const assets = [
  ['src/toolsets/gdb/docs', 'dist/toolsets/gdb/docs'],
  ['src/toolsets/gdb/exec-wrapper.sh', 'dist/toolsets/gdb/exec-wrapper.sh'],
  ['src/toolsets/python/boot', 'dist/toolsets/python/boot'],
  ['src/skills', 'dist/skills'],
  ['src/ui', 'dist/ui'],
];
for (const [from, to] of assets) {
  if (!existsSync(from)) throw new Error(`postbuild: missing ${from}`);
  cpSync(from, to, { recursive: true });
}
chmodSync('dist/toolsets/gdb/exec-wrapper.sh', 0o755);
chmodSync('dist/cli.js', 0o755);

const compiled = /\.(js|d\.ts)(\.map)?$/;
for (const entry of readdirSync('dist', { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !compiled.test(entry.name)) continue;
  const file = path.join(entry.parentPath ?? entry.path, entry.name);
  const source = path.join('src', path.relative('dist', file)).replace(compiled, '.ts');
  if (!existsSync(source)) rmSync(file);
}
