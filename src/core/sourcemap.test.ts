import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadSourceMap, SourceMap } from './sourcemap.js';

const BUILT = path.resolve(import.meta.dirname, '../../test/programs/node/built');
const SCRIPT = path.join(BUILT, 'out/stock.js');
const SOURCE = path.join(BUILT, 'src/stock.ts');

describe('SourceMap (issue 24: TypeScript and compiled builds debugged by their own lines)', () => {
  const map = loadSourceMap('stock.js.map', pathToFileURL(SCRIPT).href, (file) => readFileSync(file, 'utf8'))!;

  it("resolves the map's sources against the map's own place", () => {
    expect(map.sources).toEqual([SOURCE]);
    expect(map.has(SOURCE)).toBe(true);
  });

  it('maps an original line to where its code starts in the generated script, and back', () => {
    // stock.ts line 7 (`if (bin.count < under) ...`) is stock.js line 5 (0-based 6 and 4).
    const generated = readFileSync(SCRIPT, 'utf8').split('\n');
    const at = map.generated(SOURCE, 6)!;
    expect(generated[at.line]!.slice(at.column).trimStart()).toMatch(/^if \(bin\.count < under\)/);
    expect(at.originalLine).toBe(6);
    expect(map.original({ line: at.line, column: at.column })).toMatchObject({ source: SOURCE, line: 6 });
    expect(map.original({ line: at.line, column: generated[at.line]!.indexOf('found.push') })).toMatchObject({ source: SOURCE, line: 6, column: 27 });
  });

  it('moves a line with no code (a type, a blank) to the next line that has some, as a debugger does', () => {
    // Line 2 is a type alias, line 3 blank: the first code after them is the function on line 4.
    expect(map.generated(SOURCE, 1)?.originalLine).toBe(3);
    expect(map.generated(SOURCE, 1, 0)).toBeUndefined();
    expect(map.generated('/elsewhere.ts', 6)).toBeUndefined();
  });

  it('decodes negative and multi-digit VLQ numbers', () => {
    // Segments: [0,0,0,0] then [10,0,+16,-4 => line 16, column -4+0]; "gB" is 16, "J" is -4, "U" is 10.
    const m = SourceMap.parse(JSON.stringify({ version: 3, sources: ['a.ts'], mappings: 'AAAA;UAgBJ' }), 'file:///w/out/a.js');
    expect(m.original({ line: 0, column: 0 })).toEqual({ source: '/w/out/a.ts', line: 0, column: 0 });
    expect(m.original({ line: 1, column: 12 })).toEqual({ source: '/w/out/a.ts', line: 16, column: -4 });
  });

  it('refuses what is not a map, without quoting the file it read', () => {
    expect(() => loadSourceMap('secret.map', 'file:///w/a.js', () => 'root:x:0:0:root:/root:/bin/bash')).toThrow(/^the source map is not valid JSON$/);
    expect(() => SourceMap.parse('{"version":3,"sources":["a"],"mappings":"A!"}', 'file:///w/a.js')).toThrow(/bad character/);
    expect(() => SourceMap.parse('{"version":3,"sections":[]}', 'file:///w/a.js')).toThrow(/index source maps/);
  });

  it('reads an inline data: URL map, and no map from a URL that is not a file', () => {
    const inline = `data:application/json;base64,${Buffer.from(JSON.stringify({ version: 3, sources: ['x.ts'], mappings: 'AAAA' })).toString('base64')}`;
    expect(loadSourceMap(inline, 'file:///w/x.js', () => undefined)?.sources).toEqual(['/w/x.ts']);
    expect(loadSourceMap('https://example.com/x.map', 'file:///w/x.js', () => 'never read')).toBeUndefined();
  });

  it('refuses a map past its bounds before decoding it (attack 18aq j2-3: 30 MB held the loop 46 s)', () => {
    const big = `data:application/json,${encodeURIComponent(JSON.stringify({ version: 3, sources: ['x.ts'], mappings: 'A,'.repeat(2_500_000) }))}`;
    expect(() => loadSourceMap(big, 'file:///w/x.js', () => undefined)).toThrow(/larger than 4 MiB/);
    const many = JSON.stringify({ version: 3, sources: ['x.ts'], mappings: 'A,'.repeat(600_000) });
    expect(() => loadSourceMap('x.map', 'file:///w/x.js', () => many)).toThrow(/more than 500000 segments/);
  });
});
