import { describe, expect, it } from 'vitest';
import { parseCommand, splitCommand } from './command.js';

describe('splitCommand', () => {
  it.each([
    ['get pods -A', ['get', 'pods', '-A']],
    ['  get   pods  ', ['get', 'pods']],
    ["get pods -l 'app in (web, api)'", ['get', 'pods', '-l', 'app in (web, api)']],
    ['get pods -o "jsonpath={.items[*].metadata.name}"', ['get', 'pods', '-o', 'jsonpath={.items[*].metadata.name}']],
    ['get pods -o jsonpath=\'{range .items[*]}{.metadata.name}{"\\n"}{end}\'', ['get', 'pods', '-o', 'jsonpath={range .items[*]}{.metadata.name}{"\\n"}{end}']],
    ['logs my\\ pod', ['logs', 'my pod']],
    ['get "a\\"b"', ['get', 'a"b']],
    ["get ''", ['get', '']],
    ['get a"b c"d', ['get', 'ab cd']],
  ])('%s', (line, words) => {
    expect(splitCommand(line)).toEqual(words);
  });

  it.each([
    ['get pods | grep web', /shell syntax "\|"/],
    ['get pods > out.txt', /shell syntax ">"/],
    ['get pods; rm -rf /', /shell syntax ";"/],
    ['get pods && echo', /shell syntax "&"/],
    ['get $(whoami)', /shell syntax "\$"/],
    ['get `whoami`', /shell syntax "`"/],
    ['get "$HOME"', /substitution inside double quotes/],
    ["get 'pods", /unterminated single quote/],
    ['get "pods', /unterminated double quote/],
    ['get pods -l (x)', /shell syntax "\("/],
  ])('refuses %s', (line, message) => {
    expect(() => splitCommand(line)).toThrow(message);
  });

  it('names the error type of the contract', () => {
    try {
      splitCommand('get pods | wc');
      expect.unreachable();
    } catch (err) {
      expect((err as Error).name).toBe('CommandNotSupportedError');
    }
  });
});

describe('parseCommand', () => {
  it('rebuilds the argv from the parse, verb first', () => {
    expect(parseCommand('-n kube-system get pods').argv).toEqual(['get', 'pods', '-n', 'kube-system']);
    expect(parseCommand('kubectl get pods -n kube-system').argv).toEqual(['get', 'pods', '-n', 'kube-system']);
  });
});
