import { describe, expect, it } from 'vitest';
import { checkKubectlArgs, hasOutputFlag, splitCommand } from './command.js';

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

describe('checkKubectlArgs', () => {
  it.each([
    ['get pods -A', 'get'],
    ['kubectl get pods', 'get'],
    ['-n kube-system get pods', 'get'],
    ['--namespace kube-system describe pod x', 'describe'],
    ['--namespace=kube-system logs x -c y', 'logs'],
    ['api-resources', 'api-resources'],
    ['version', 'version'],
    ['cluster-info', 'cluster-info'],
    ['explain pods', 'explain'],
    ['events -A', 'events'],
  ])('accepts %s', (line, verb) => {
    expect(checkKubectlArgs(splitCommand(line)).verb).toBe(verb);
  });

  it.each(['exec', 'apply', 'delete', 'edit', 'patch', 'cp', 'port-forward', 'attach', 'replace', 'create', 'run', 'scale', 'label', 'annotate', 'drain', 'debug', 'proxy', 'rollout', 'config', 'auth', 'wait'])(
    'refuses kubectl %s',
    (verb) => {
      expect(() => checkKubectlArgs(splitCommand(`${verb} pod x`))).toThrow(`Command 'kubectl ${verb}' is not supported in bundle context`);
    },
  );

  it.each(['--kubeconfig /etc/k', '--server=https://evil', '-s https://evil', '--token abc', '--context other', '-f /etc/passwd', '--filename=x.yaml', '-k dir'])(
    'refuses the flag in get pods %s',
    (flags) => {
      expect(() => checkKubectlArgs(splitCommand(`get pods ${flags}`))).toThrow(/is not supported in bundle context: debugkit points kubectl at the bundle/);
    },
  );

  it('does not take a flag value for the verb', () => {
    expect(checkKubectlArgs(splitCommand('-n delete get pods')).verb).toBe('get');
    expect(() => checkKubectlArgs(splitCommand('-n get delete pods'))).toThrow(/kubectl delete/);
  });

  it('asks for a command when there is none', () => {
    expect(() => checkKubectlArgs([])).toThrow(/No kubectl command given/);
    expect(() => checkKubectlArgs(['kubectl', '-A'])).toThrow(/No kubectl command given/);
  });
});

describe('hasOutputFlag', () => {
  it.each([
    [['get', 'pods', '-o', 'wide'], true],
    [['get', 'pods', '-owide'], true],
    [['get', 'pods', '--output=json'], true],
    [['get', 'pods', '--output', 'yaml'], true],
    [['get', 'pods', '-A'], false],
  ])('%j -> %s', (args, expected) => {
    expect(hasOutputFlag(args)).toBe(expected);
  });
});
