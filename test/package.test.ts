import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI } from './helpers/client.js';

/** What a stranger finds in the repository: the licence, and the MCP registry's description of debugkit. */
const repo = path.resolve(import.meta.dirname, '..');
const read = (file: string) => readFileSync(path.join(repo, file), 'utf8');
const pkg = JSON.parse(read('package.json')) as { name: string; version: string; license: string; mcpName?: string };

describe('LICENSE', () => {
  it('is the full Apache License 2.0 that package.json names', () => {
    expect(pkg.license).toBe('Apache-2.0');
    expect(existsSync(path.join(repo, 'LICENSE')), 'no LICENSE file at the root').toBe(true);
    const text = read('LICENSE');
    expect(text).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
    expect(text).toContain('TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION');
    // All nine sections and the end of the terms: the whole licence, not a pointer to it.
    for (let n = 1; n <= 9; n++) expect(text).toMatch(new RegExp(`^\\s*${n}\\. [A-Z]`, 'm'));
    expect(text).toContain('END OF TERMS AND CONDITIONS');
  });

  it('third-party test data keeps its own licence beside it', () => {
    expect(existsSync(path.join(repo, 'test/fixtures/LICENSE-Apache-2.0.txt'))).toBe(true);
    expect(read('test/fixtures/README.md')).toContain('LICENSE-Apache-2.0.txt');
  });
});

/**
 * server.json against the MCP registry's rules, written down here (the schema file is not copied
 * into this repository). Sources:
 * - SCHEMA: https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json, the
 *   current schema (`$id` of docs/reference/server-json/server.schema.json in
 *   modelcontextprotocol/registry), draft-07: definitions ServerDetail, Package, NamedArgument,
 *   StdioTransport.
 * - OFFICIAL: docs/reference/server-json/official-registry-requirements.md (same repository):
 *   npm packages only from https://registry.npmjs.org; _meta only under publisher-provided.
 * - NPM: the registry's "package types" page (modelcontextprotocol.io/registry/package-types):
 *   an npm package proves ownership by `mcpName` in its package.json, which MUST equal the
 *   server name.
 */
const SCHEMA_URL = 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json';

describe('server.json for the MCP registry', () => {
  const server = JSON.parse(read('server.json')) as Record<string, any>;

  it('names the current schema and has what ServerDetail requires (SCHEMA)', () => {
    expect(server.$schema).toBe(SCHEMA_URL);
    // ServerDetail.required
    for (const field of ['name', 'description', 'version']) expect(server, field).toHaveProperty(field);
    // ServerDetail.properties: any other key is a typo the registry would not read.
    const known = ['$schema', '_meta', 'name', 'title', 'description', 'version', 'websiteUrl', 'repository', 'icons', 'packages', 'remotes'];
    expect(Object.keys(server).filter((k) => !known.includes(k))).toEqual([]);
    // description: string, minLength 1, maxLength 100; title likewise when present.
    expect(typeof server.description).toBe('string');
    expect(server.description.length).toBeGreaterThanOrEqual(1);
    expect(server.description.length).toBeLessThanOrEqual(100);
    if (server.title !== undefined) {
      expect(server.title.length).toBeGreaterThanOrEqual(1);
      expect(server.title.length).toBeLessThanOrEqual(100);
    }
    // _meta: only io.modelcontextprotocol.registry/publisher-provided is kept (OFFICIAL).
    if (server._meta !== undefined) expect(Object.keys(server._meta)).toEqual(['io.modelcontextprotocol.registry/publisher-provided']);
  });

  it('has a reverse-DNS name, the one package.json gives as mcpName (SCHEMA, NPM)', () => {
    // ServerDetail.name: pattern ^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$, minLength 3, maxLength 200.
    expect(server.name).toMatch(/^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/);
    expect(server.name.length).toBeGreaterThanOrEqual(3);
    expect(server.name.length).toBeLessThanOrEqual(200);
    expect(pkg.mcpName, 'package.json has no mcpName').toBeDefined();
    expect(server.name).toBe(pkg.mcpName);
  });

  it("carries package.json's version, as one exact version (SCHEMA)", () => {
    // ServerDetail.version: maxLength 255; version ranges are rejected.
    expect(server.version).toBe(pkg.version);
    expect(server.version.length).toBeLessThanOrEqual(255);
    expect(server.version).not.toMatch(/^[\^~<>=]|\.(x|\*)(\.|$)|\s|\|\|/);
  });

  it('names this npm package, its version and stdio (SCHEMA, OFFICIAL)', () => {
    expect(Array.isArray(server.packages)).toBe(true);
    const npm = (server.packages as Array<Record<string, any>>).filter((p) => p.registryType === 'npm');
    expect(npm).toHaveLength(1);
    const entry = npm[0]!;
    // Package.required: registryType, identifier, transport; Package.properties for the rest.
    for (const field of ['registryType', 'identifier', 'transport']) expect(entry, field).toHaveProperty(field);
    const known = ['registryType', 'registryBaseUrl', 'identifier', 'version', 'fileSha256', 'runtimeHint', 'transport', 'runtimeArguments', 'packageArguments', 'environmentVariables'];
    expect(Object.keys(entry).filter((k) => !known.includes(k))).toEqual([]);
    expect(entry.identifier).toBe(pkg.name);
    // Package.version: minLength 1, not "latest"; here the very version packed.
    expect(entry.version).toBe(pkg.version);
    // registryBaseUrl: npm only from the public registry (OFFICIAL).
    if (entry.registryBaseUrl !== undefined) expect(entry.registryBaseUrl).toBe('https://registry.npmjs.org');
    // StdioTransport: {type: "stdio"}, which is what `debugkit` with no command serves.
    expect(entry.transport).toEqual({ type: 'stdio' });
  });

  it('passes only arguments the command accepts (SCHEMA NamedArgument: type "named", name with its dashes)', () => {
    const help = execFileSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
    for (const pkgEntry of server.packages as Array<Record<string, any>>) {
      for (const arg of [...(pkgEntry.packageArguments ?? []), ...(pkgEntry.runtimeArguments ?? [])]) {
        expect(['named', 'positional']).toContain(arg.type);
        if (arg.type === 'named') {
          expect(arg.name).toMatch(/^--?[a-z]/);
          expect(help).toContain(`${arg.name} `);
        } else {
          // PositionalArgument: valueHint or value required.
          expect(arg.valueHint ?? arg.value).toBeDefined();
        }
        if (arg.format !== undefined) expect(['string', 'number', 'boolean', 'filepath']).toContain(arg.format);
      }
    }
  });
});
