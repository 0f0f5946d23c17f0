// Bundles what dist/cli.js loads, so a start reads a few files instead of some two hundred (issue
// 19: Node 20's ESM loader costs about half a millisecond a module; debugkit's own modules, zod's
// and the SDK's made up most of its start-up over a bare SDK server's). esbuild splits the bundle
// into dist/chunks/*.mjs: the start path in a few of them, each dynamic import (an engine, the
// control plane, `serve`, `doctor`) a chunk of its own still loaded when first used, and each
// module in exactly one chunk (one instance, its state, its classes for instanceof). dist/cli.js
// becomes the line that loads the bundle's entry. The rest of dist/ stays as tsc wrote it, for the
// worker threads (loaded by URL) and the files read beside the code.
//
// - A module of debugkit's that reads import.meta.url (to find its files beside it) is given its
//   own file's URL in dist/ still; any other use of import.meta stops the build.
// - Native and optional-native packages stay imports from node_modules (better-sqlite3, pg).
// - The licences of the packages bundled go beside the chunks (dist/chunks/LICENSES.txt).
// Run after tsc and postbuild.mjs (which would take the chunks for compiled files without a source).
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const DIST = path.resolve('dist');
const CHUNKS = path.join(DIST, 'chunks');
const ENTRY = path.join(DIST, 'cli.js');
const EXTERNAL = ['better-sqlite3', 'pg', 'pg-protocol', 'pg-native'];
/** Where a compiled module of debugkit's lies, from a chunk. */
const fromChunk = (file) => `../${path.relative(DIST, file).split(path.sep).join('/')}`;

const STUB = "// The bundle's entry (scripts/bundle.mjs bundled src/cli.ts and what it loads into dist/chunks/).";
if (readFileSync(ENTRY, 'utf8').includes(STUB)) throw new Error('dist/cli.js is the bundle entry already, not what tsc wrote: run npm run build');
rmSync(CHUNKS, { recursive: true, force: true });
rmSync(`${ENTRY}.map`, { force: true });
const result = await build({
  entryPoints: { cli: ENTRY },
  outdir: CHUNKS,
  entryNames: '[name]-[hash]',
  chunkNames: '[name]-[hash]',
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: EXTERNAL,
  // Class and function names as written (error names, constructor.name), not as the bundle renames them.
  keepNames: true,
  sourcemap: true,
  sourcesContent: false,
  metafile: true,
  logLevel: 'warning',
  // The CommonJS packages bundled (commander) call require.
  banner: { js: "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);" },
  plugins: [
    {
      name: 'own-import-meta-url',
      setup(b) {
        b.onLoad({ filter: /\.js$/ }, (args) => {
          if (!args.path.startsWith(`${DIST}${path.sep}`) || args.path.startsWith(`${CHUNKS}${path.sep}`)) return undefined;
          const text = readFileSync(args.path, 'utf8');
          if (/\bimport\.meta\b(?!\.url\b)/.test(text)) throw new Error(`${args.path} reads import.meta beyond its url: the bundle cannot give it that`);
          const url = `new URL(${JSON.stringify(fromChunk(args.path))}, import.meta.url).href`;
          return { contents: text.replace(/\bimport\.meta\.url\b/g, url), loader: 'js', resolveDir: path.dirname(args.path) };
        });
      },
    },
  ],
});

const outputs = Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.mjs'));
const entry = outputs.find((f) => path.resolve(result.metafile.outputs[f].entryPoint ?? '') === ENTRY);
writeFileSync(ENTRY, `#!/usr/bin/env node\n${STUB}\nexport * from './chunks/${path.basename(entry)}';\n`);
chmodSync(ENTRY, 0o755);

// Every package bundled, with its licence.
const packages = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const m = /^(.*node_modules\/)((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (m) packages.set(m[2], path.join(m[1], m[2]));
}
const notices = [...packages]
  .sort(([a], [b]) => a.localeCompare(b))
  .map(([name, dir]) => {
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
    const text = file && existsSync(path.join(dir, file)) ? readFileSync(path.join(dir, file), 'utf8').trim() : `License: ${pkg.license ?? 'see the package'}`;
    return `${name} ${pkg.version}\n\n${text}\n`;
  });
writeFileSync(path.join(CHUNKS, 'LICENSES.txt'), `Packages bundled into these files, with their licences.\n\n${notices.join(`\n${'-'.repeat(72)}\n\n`)}`);
process.stdout.write(`bundle: ${Object.keys(result.metafile.inputs).length} modules (${packages.size} packages) in ${outputs.length} chunks\n`);
