import { describe, expect, it } from 'vitest';
import { BundleError } from '../errors.js';
import { compileGlob } from './glob.js';

const m = (glob: string, p: string) => compileGlob(glob).matches(p);

describe('compileGlob', () => {
  it('a pattern without / matches the file name at any depth', () => {
    expect(m('*.log', 'a.log')).toBe(true);
    expect(m('*.log', 'pods/logs/kube-system/a.log')).toBe(true);
    expect(m('*.log', 'a.log.gz')).toBe(false);
    expect(m('*.log', 'logs/a.json')).toBe(false);
    expect(m('coredns-?.log', 'x/coredns-1.log')).toBe(true);
    expect(m('coredns-?.log', 'x/coredns-10.log')).toBe(false);
  });

  it('a pattern with / matches the path relative to the searched directory', () => {
    expect(m('**/*.json', 'a.json')).toBe(true);
    expect(m('**/*.json', 'pods/default.json')).toBe(true);
    expect(m('**/*.json', 'cluster-resources/pods/logs/x.json')).toBe(true);
    expect(m('pods/*.json', 'pods/default.json')).toBe(true);
    expect(m('pods/*.json', 'pods/logs/x.json')).toBe(false);
    expect(m('pods/**', 'pods/logs/x.json')).toBe(true);
    expect(m('**/logs/**/*.log', 'cluster-resources/pods/logs/kube-system/p/c.log')).toBe(true);
  });

  it('braces, classes, escapes', () => {
    expect(m('*.{log,txt}', 'a.txt')).toBe(true);
    expect(m('*.{log,txt}', 'a.json')).toBe(false);
    expect(m('{pods,events}/*.{json,y{a,}ml}', 'events/x.yml')).toBe(true);
    expect(m('{pods,events}/*.{json,y{a,}ml}', 'events/x.yaml')).toBe(true);
    expect(m('[a-c]*.json', 'b1.json')).toBe(true);
    expect(m('[!a-c]*.json', 'b1.json')).toBe(false);
    expect(m('[^a-c]*.json', 'd1.json')).toBe(true);
    expect(m('\\*.json', '*.json')).toBe(true);
    expect(m('\\*.json', 'a.json')).toBe(false);
    expect(m('a+b(c).json', 'a+b(c).json')).toBe(true);
    expect(m('[unclosed', '[unclosed')).toBe(true);
  });

  it('an unclosed brace is an InvalidPatternError', () => {
    expect(() => compileGlob('*.{log')).toThrow(BundleError);
    try {
      compileGlob('*.{log');
    } catch (err) {
      expect((err as BundleError).name).toBe('InvalidPatternError');
    }
  });
});

describe('compileGlob with picomatch', () => {
  it('a class is parsed, never pasted into a RegExp', () => {
    expect(m('[a-c].log', 'b.log')).toBe(true);
    expect(m('[a-c].log', '-.log')).toBe(false);
    expect(m('[\\]].log', '].log')).toBe(true);
    expect(m('[[:digit:]]*.log', '7x.log')).toBe(true);
    expect(m('[[:digit:]]*.log', 'x7.log')).toBe(false);
    // Characters a RegExp would read as syntax are matched as themselves.
    expect(m('a(b|c).log', 'a(b|c).log')).toBe(true);
    expect(m('a(b|c).log', 'ab.log')).toBe(false);
    expect(m('$x^.log', '$x^.log')).toBe(true);
  });

  it('extglobs and negation are off: +(...) and a leading ! are literal', () => {
    expect(m('+(a|b).log', 'a.log')).toBe(false);
    expect(m('!x.log', 'y.log')).toBe(false);
    expect(m('!x.log', '!x.log')).toBe(true);
  });

  it('dot files match, and * never crosses /', () => {
    expect(m('*.log', '.hidden.log')).toBe(true);
    expect(m('pods/*', 'pods/a/b.json')).toBe(false);
    expect(m('a/**/b.json', 'a/b.json')).toBe(true);
  });
});
