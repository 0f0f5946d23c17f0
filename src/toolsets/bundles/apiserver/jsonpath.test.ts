import { describe, expect, it } from 'vitest';
import { evaluateJsonPath, JsonPathError } from './jsonpath.js';

const cert = {
  metadata: { name: 'c', creationTimestamp: '2025-04-11T18:47:31Z', labels: { 'app.kubernetes.io/name': 'x' } },
  spec: { secretName: 's', issuerRef: { name: 'issuer' }, dnsNames: ['a.example', 'b.example'] },
  status: {
    conditions: [
      { type: 'Issuing', status: 'False' },
      { type: 'Ready', status: 'True', message: 'up to date' },
    ],
  },
};

describe('JSONPath subset for printer columns', () => {
  it('follows fields', () => {
    expect(evaluateJsonPath(cert, '.spec.issuerRef.name')).toEqual(['issuer']);
    expect(evaluateJsonPath(cert, '{.spec.secretName}')).toEqual(['s']);
    expect(evaluateJsonPath(cert, '$.metadata.name')).toEqual(['c']);
  });

  it('filters arrays the way cert-manager columns do', () => {
    expect(evaluateJsonPath(cert, '.status.conditions[?(@.type=="Ready")].status')).toEqual(['True']);
    expect(evaluateJsonPath(cert, ".status.conditions[?(@.type=='Ready')].message")).toEqual(['up to date']);
    expect(evaluateJsonPath(cert, '.status.conditions[?(@.type!="Ready")].type')).toEqual(['Issuing']);
    expect(evaluateJsonPath(cert, '.status.conditions[?(@.type=="Gone")].status')).toEqual([]);
  });

  it('indexes, slices from the end, and expands wildcards', () => {
    expect(evaluateJsonPath(cert, '.spec.dnsNames[0]')).toEqual(['a.example']);
    expect(evaluateJsonPath(cert, '.spec.dnsNames[-1]')).toEqual(['b.example']);
    expect(evaluateJsonPath(cert, '.spec.dnsNames[*]')).toEqual(['a.example', 'b.example']);
    expect(evaluateJsonPath(cert, ".metadata.labels['app.kubernetes.io/name']")).toEqual(['x']);
  });

  it('yields nothing for missing paths and rejects unsupported syntax', () => {
    expect(evaluateJsonPath(cert, '.spec.nope.deeper')).toEqual([]);
    expect(() => evaluateJsonPath(cert, '.spec..name')).toThrow(JsonPathError);
    expect(() => evaluateJsonPath(cert, '.a[1:2]')).toThrow(JsonPathError);
  });
});
