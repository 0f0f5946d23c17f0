import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../config.js';
import { createLogger } from '../mcp/log.js';
import { CAPABILITIES } from '../toolsets/gdb/policy.js';
import { toolsetFactories } from '../toolsets/index.js';
import { hasScope, knownScopes, parseScopes, requiredScopes } from './scopes.js';

const tool = (name: string, toolset: string, readOnly = false, scopes: string[] = []) => ({ name, toolset, readOnly, scopes });

describe('scopes', () => {
  it('parses and validates scope lists', () => {
    expect(parseScopes('python:read, gdb,gdb')).toEqual(['gdb', 'python:read']);
    expect(() => parseScopes('gdb,root')).toThrow(/unknown scope "root": valid scopes are \*, gdb/);
    expect(() => parseScopes(' , ')).toThrow(/no scopes given/);
  });

  it('full covers read, never a capability', () => {
    expect(hasScope(['gdb'], 'gdb:read')).toBe(true);
    expect(hasScope(['gdb'], 'gdb')).toBe(true);
    expect(hasScope(['gdb'], 'gdb:shell')).toBe(false);
    expect(hasScope(['gdb:read'], 'gdb')).toBe(false);
    expect(hasScope(['gdb:*'], 'gdb:shell')).toBe(true);
    expect(hasScope(['gdb:*'], 'python:read')).toBe(false);
    expect(hasScope(['*'], 'mocks:run')).toBe(true);
    expect(hasScope(['python'], 'gdb:read')).toBe(false);
  });

  it('read-only tools need :read, others the toolset, plus the capabilities their spec always needs', () => {
    expect(requiredScopes(tool('list_sessions', 'gdb', true))).toEqual(['gdb:read']);
    expect(requiredScopes(tool('open', 'gdb'))).toEqual(['gdb']);
    expect(requiredScopes(tool('keploy_mock_record', 'mocks', false, ['mocks:run']))).toEqual(['mocks', 'mocks:run']);
    expect(requiredScopes(tool('debugger_attach', 'debugger', false, ['debugger:attach']))).toEqual(['debugger', 'debugger:attach']);
  });

  it("every scope a tool always needs is one its toolset declares, and the keys' scopes are the toolsets' (names, :read, :*, capabilities)", async () => {
    const env = { config: defaultConfig({ root: '/nonexistent-root' }), log: createLogger('error') };
    for (const factory of toolsetFactories) {
      const own = new Set([factory.name, `${factory.name}:read`, ...(factory.capabilities ?? [])]);
      const toolset = factory.create(env);
      try {
        for (const spec of toolset.tools()) for (const scope of spec.scopes?.always ?? []) expect(own, `${spec.name} needs ${scope}`).toContain(scope);
      } finally {
        await toolset.dispose();
      }
    }
    // gdb's command policy asks for its capabilities' scopes by name.
    for (const { scope } of Object.values(CAPABILITIES)) expect(toolsetFactories.find((f) => f.name === 'gdb')!.capabilities).toContain(scope);
    expect(knownScopes()).toEqual([
      '*',
      ...['gdb', 'python', 'bundles', 'mocks', 'debugger'].flatMap((t) => [t, `${t}:read`, `${t}:*`]),
      'gdb:shell',
      'gdb:attach',
      'python:attach',
      'bundles:download',
      'mocks:run',
      'debugger:attach',
    ]);
  });
});
