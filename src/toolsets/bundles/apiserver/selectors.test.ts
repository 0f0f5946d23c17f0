import { describe, expect, it } from 'vitest';
import { formatLabelMap, formatLabelSelector, matchesFields, matchesLabels, MAX_SET_VALUES, parseFieldSelector, parseLabelSelector, SelectorError } from './selectors.js';

const labels = { app: 'nginx', tier: 'web', 'app.kubernetes.io/name': 'traefik', rev: '7' };
const match = (sel: string) => matchesLabels(labels, parseLabelSelector(sel));

describe('label selectors', () => {
  it('matches equality forms', () => {
    expect(match('app=nginx')).toBe(true);
    expect(match('app==nginx')).toBe(true);
    expect(match('app!=nginx')).toBe(false);
    expect(match('app=redis')).toBe(false);
    expect(match('missing!=x')).toBe(true);
    expect(match('app.kubernetes.io/name=traefik')).toBe(true);
  });

  it('matches set forms', () => {
    expect(match('app in (redis, nginx)')).toBe(true);
    expect(match('app in (redis)')).toBe(false);
    expect(match('app notin (redis)')).toBe(true);
    expect(match('missing notin (redis)')).toBe(true);
    expect(match('missing in (redis)')).toBe(false);
  });

  it('matches existence and comparisons', () => {
    expect(match('tier')).toBe(true);
    expect(match('!tier')).toBe(false);
    expect(match('!missing')).toBe(true);
    expect(match('rev>5')).toBe(true);
    expect(match('rev<5')).toBe(false);
  });

  it('ANDs comma-separated requirements, commas inside sets included', () => {
    expect(match('app in (nginx,redis),tier=web')).toBe(true);
    expect(match('app in (nginx,redis),tier=db')).toBe(false);
    expect(match('')).toBe(true);
  });

  // Attack 18s residual: `in (...)` sets were unbounded and searched value by value on every object.
  it("an in/notin set is looked up in one step, and a selector's sets hold at most MAX_SET_VALUES values", () => {
    const values = Array.from({ length: 5000 }, (_, i) => `v${i}`);
    const [big] = parseLabelSelector(`app in (${values.join(',')},nginx)`);
    expect(big!.set?.size).toBe(5001);
    expect(matchesLabels({ app: 'nginx' }, [big!])).toBe(true);
    const over = Array.from({ length: MAX_SET_VALUES + 1 }, (_, i) => `v${i}`);
    expect(() => parseLabelSelector(`app in (${over.join(',')})`)).toThrow(/10001 values in its in\/notin sets: at most 10000/);
    expect(() => parseLabelSelector(`a in (${over.slice(0, 6000).join(',')}),b notin (${over.slice(0, 6000).join(',')})`)).toThrow(SelectorError);
  });

  it('rejects what it cannot parse', () => {
    expect(() => parseLabelSelector('app in (a')).toThrow(SelectorError);
    expect(() => parseLabelSelector('a=b,,c=d')).toThrow(SelectorError);
    expect(() => parseLabelSelector('=x')).toThrow(SelectorError);
  });
});

describe('field selectors', () => {
  const event = { type: 'Warning', involvedObject: { kind: 'Pod', name: 'web-1', namespace: 'shop', uid: 'u1' }, count: 3 };
  const fmatch = (sel: string) => matchesFields(event, parseFieldSelector(sel));

  it('matches dotted paths with =, == and !=', () => {
    expect(fmatch('involvedObject.name=web-1,involvedObject.namespace=shop')).toBe(true);
    expect(fmatch('involvedObject.kind==Pod,involvedObject.uid=u1')).toBe(true);
    expect(fmatch('type!=Normal')).toBe(true);
    expect(fmatch('type=Normal')).toBe(false);
    expect(fmatch('count=3')).toBe(true);
  });

  it('treats a missing field as the empty string', () => {
    expect(fmatch('spec.nodeName=')).toBe(true);
    expect(fmatch('spec.nodeName!=node-1')).toBe(true);
  });

  it('unescapes values and rejects garbage', () => {
    expect(parseFieldSelector('metadata.name=a\\,b')).toEqual([{ path: 'metadata.name', parts: ['metadata', 'name'], negate: false, value: 'a,b' }]);
    expect(() => parseFieldSelector('metadata.name')).toThrow(SelectorError);
  });
});

describe('formatting selectors for columns', () => {
  it('writes a LabelSelector sorted by key', () => {
    const sel = {
      matchLabels: { tier: 'web', app: 'x' },
      matchExpressions: [
        { key: 'env', operator: 'In', values: ['prod', 'dev'] },
        { key: 'zz', operator: 'DoesNotExist' },
        { key: 'canary', operator: 'Exists' },
      ],
    };
    expect(formatLabelSelector(sel)).toBe('app=x,canary,env in (dev,prod),tier=web,!zz');
    expect(formatLabelSelector(undefined)).toBe('');
  });

  it('writes a plain map or <none>', () => {
    expect(formatLabelMap({ b: '2', a: '1' })).toBe('a=1,b=2');
    expect(formatLabelMap({})).toBe('<none>');
  });
});
