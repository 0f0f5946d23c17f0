import { describe, expect, it } from 'vitest';
import { gdbCommandScopes, hasScope, parseScopes, requiredScopes } from './scopes.js';

const tool = (name: string, toolset: string, readOnly = false) => ({ name, toolset, readOnly });

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

  it('read-only tools need :read, others the toolset, some a capability', () => {
    expect(requiredScopes(tool('list_sessions', 'gdb', true), {})).toEqual(['gdb:read']);
    expect(requiredScopes(tool('open', 'gdb'), {})).toEqual(['gdb']);
    expect(requiredScopes(tool('keploy_mock_record', 'mocks'), { command: 'npm start' })).toEqual(['mocks', 'mocks:run']);
    expect(requiredScopes(tool('initialize_bundle', 'bundles'), { source: 'https://x/b.tgz' })).toEqual(['bundles', 'bundles:download']);
    expect(requiredScopes(tool('initialize_bundle', 'bundles'), { source: 'bundles/b.tgz' })).toEqual(['bundles']);
    expect(requiredScopes(tool('debugger_attach', 'debugger'), { pid: 1 })).toEqual(['debugger', 'debugger:attach']);
    expect(requiredScopes(tool('call', 'gdb'), { id: 's', command: 'shell id' })).toEqual(['gdb', 'gdb:shell']);
  });
});

describe('gdb commands that reach outside the session', () => {
  const shell = [
    'shell id', 'she id', '!id', '! id', '|ls', 'pipe bt | grep x', 'python import os', 'py print(1)', 'pi', 'source /tmp/x.gdb',
    'so /tmp/x', 'eval "shell %s", "id"', 'define x', 'alias s2 = shell', 'make', 'dump memory /tmp/x 0 1', 'cd /', 'compile code 1',
    '-interpreter-exec console "shell id"', '12-interpreter-exec console "bt"', 'set exec-wrapper /bin/sh -c', 'set logging file /tmp/x',
    'set startup-with-shell off', 'run; id', 'run $(id)', 'r `id`', 'start > /etc/x', 'set args a;id', '-exec-arguments $(id)',
    // Any variable: a list of dangerous names always misses one (SHELLOPTS=xtrace with PS4='$(id)' runs code in the start-up shell).
    'set env FOO=bar', 'set env LD_PRELOAD=/tmp/x.so', 'set enviro BASH_ENV=/w/x.sh', 'set environment FOO=1', '-gdb-set environment BASH_ENV=x',
    'path /tmp', '-environment-path /tmp', 'guile (system "id")', 'file `id`', '-gdb-set exec-wrapper x', 'gcore /tmp/core', 'save breakpoints /tmp/b',
  ];
  for (const cmd of shell) it(`needs gdb:shell: ${cmd}`, () => expect(gdbCommandScopes(cmd)).toContain('gdb:shell'));

  const attach = ['attach 1234', 'att 1', 'target remote :1234', 'tar extended-remote x:1', '-target-attach 1234', '5-target-select remote x'];
  for (const cmd of attach) it(`needs gdb:attach: ${cmd}`, () => expect(gdbCommandScopes(cmd)).toContain('gdb:attach'));

  const inside = [
    'break main', 'b main', 'run', 'r', 'run arg1 arg2', 'start', 'continue', 'c', 'next', 'step', 's', 'bt', 'info locals', 'print x',
    'p argv[1]', 'set var x = 3', 'set variable y=1', 'x/4x $sp', 'finish', '-exec-run', '-break-insert main', '-stack-list-frames',
    '12-exec-continue', 'info registers', 'watch x', 'display i', 'frame 1', 'up', 'down', 'list', 'file ./prog',
    'delete', 'disassemble', 'checkpoint', 'reverse-next', 'record full',
  ];
  for (const cmd of inside) it(`stays inside: ${cmd}`, () => expect(gdbCommandScopes(cmd)).toEqual([]));
});
