import { describe, expect, it } from 'vitest';
import { customResourcePrinter } from './columns/custom.js';
import { eventPrinter, nodePrinter, servicePrinter } from './columns/core.js';
import { printerFor } from './columns/index.js';
import { deploymentPrinter } from './columns/workloads.js';
import type { K8sObject } from './json.js';
import { builtinTypes } from './resources.js';
import { buildTable, parseIncludeObject, wantsPartialMetadata, wantsTable, type Printer } from './table.js';

const now = new Date('2025-04-11T19:06:18Z');
const KUBECTL_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

function cells(printer: Printer, o: K8sObject): Record<string, unknown> {
  const t = buildTable(printer, [o], { now, includeObject: 'None', version: 'v1', resourceVersion: '1' });
  const defs = t.columnDefinitions as { name: string }[];
  const row = (t.rows as { cells: unknown[] }[])[0]!;
  return Object.fromEntries(defs.map((d, i) => [d.name, row.cells[i]]));
}

describe('content negotiation', () => {
  it('recognises the Table kubectl asks for', () => {
    expect(wantsTable(KUBECTL_ACCEPT)).toBe('v1');
    expect(wantsTable('application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json')).toBe('v1beta1');
    expect(wantsTable('application/json')).toBeUndefined();
    expect(wantsTable(undefined)).toBeUndefined();
  });

  it('recognises metadata-only requests and includeObject', () => {
    expect(wantsPartialMetadata('application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io')).toBe(true);
    expect(wantsPartialMetadata(KUBECTL_ACCEPT)).toBe(false);
    expect(parseIncludeObject('Object')).toBe('Object');
    expect(parseIncludeObject(null)).toBe('Metadata');
  });
});

describe('buildTable', () => {
  const pod = { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p', namespace: 'ns', labels: { a: 'b' } }, spec: {}, status: { phase: 'Succeeded' } };
  const podPrinter = printerFor(builtinTypes().find((t) => t.plural === 'pods')!);

  it('has the meta.k8s.io Table shape with wide columns marked priority 1', () => {
    const t = buildTable(podPrinter, [pod], { now, includeObject: 'Metadata', version: 'v1', resourceVersion: '7' });
    expect(t).toMatchObject({ kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: '7' } });
    const defs = t.columnDefinitions as { name: string; priority: number; format: string }[];
    expect(defs.map((d) => d.name)).toEqual(['Name', 'Ready', 'Status', 'Restarts', 'Age', 'IP', 'Node', 'Nominated Node', 'Readiness Gates']);
    expect(defs.filter((d) => d.priority === 1).map((d) => d.name)).toEqual(['IP', 'Node', 'Nominated Node', 'Readiness Gates']);
    expect(defs[0]!.format).toBe('name');
    const row = (t.rows as K8sObject[])[0]!;
    expect(row.object).toEqual({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: pod.metadata });
    expect(row.conditions).toEqual([expect.objectContaining({ type: 'Completed', status: 'True' })]);
  });

  it('embeds the full object for includeObject=Object and none for None', () => {
    const full = buildTable(podPrinter, [pod], { now, includeObject: 'Object', version: 'v1', resourceVersion: '1' });
    expect((full.rows as K8sObject[])[0]!.object).toBe(pod);
    const none = buildTable(podPrinter, [pod], { now, includeObject: 'None', version: 'v1beta1', resourceVersion: '1' });
    expect((none.rows as K8sObject[])[0]!.object).toBeUndefined();
    expect(none.apiVersion).toBe('meta.k8s.io/v1beta1');
  });

  it('turns a failing cell into <unknown> and a missing one into null', () => {
    const printer: Printer = {
      columns: [
        {
          name: 'Boom',
          type: 'string',
          cell: () => {
            throw new Error('x');
          },
        },
        { name: 'Missing', type: 'string', cell: () => undefined },
      ],
    };
    expect(cells(printer, pod)).toEqual({ Boom: '<unknown>', Missing: null });
  });
});

describe('printers', () => {
  it('prints a LoadBalancer service like kubectl', () => {
    const svc = {
      metadata: { name: 'traefik', creationTimestamp: '2025-04-11T18:47:00Z' },
      spec: {
        type: 'LoadBalancer',
        clusterIP: '10.43.0.5',
        clusterIPs: ['10.43.0.5'],
        ports: [
          { port: 80, nodePort: 30080, protocol: 'TCP' },
          { port: 443, protocol: 'TCP' },
        ],
        selector: { app: 't' },
      },
      status: { loadBalancer: { ingress: [{ ip: '172.19.0.2' }] } },
    };
    expect(cells(servicePrinter, svc)).toEqual({
      Name: 'traefik',
      Type: 'LoadBalancer',
      'Cluster-IP': '10.43.0.5',
      'External-IP': '172.19.0.2',
      'Port(s)': '80:30080/TCP,443/TCP',
      Age: '19m',
      Selector: 'app=t',
    });
    expect(cells(servicePrinter, { metadata: { name: 'x' }, spec: { type: 'LoadBalancer' } })['External-IP']).toBe('<pending>');
  });

  it('prints node status and roles', () => {
    const node = {
      metadata: { name: 'n1', creationTimestamp: '2025-04-11T18:17:17Z', labels: { 'node-role.kubernetes.io/master': 'true', 'node-role.kubernetes.io/control-plane': 'true' } },
      spec: { unschedulable: true },
      status: { conditions: [{ type: 'Ready', status: 'False' }], nodeInfo: { kubeletVersion: 'v1.32.2' }, addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] },
    };
    expect(cells(nodePrinter, node)).toMatchObject({
      Status: 'NotReady,SchedulingDisabled',
      Roles: 'control-plane,master',
      Age: '49m',
      Version: 'v1.32.2',
      'Internal-IP': '10.0.0.1',
      'External-IP': '<none>',
    });
  });

  it('prints events with a fallback to eventTime', () => {
    const ev = {
      metadata: { name: 'e' },
      type: 'Normal',
      reason: 'Scheduled',
      involvedObject: { kind: 'Pod', name: 'web' },
      message: ' hi ',
      eventTime: '2025-04-11T19:06:00.5Z',
      reportingComponent: 'default-scheduler',
    };
    expect(cells(eventPrinter, ev)).toMatchObject({ 'Last Seen': '17s', Object: 'pod/web', Message: 'hi', Source: 'default-scheduler', Count: 1 });
  });

  it('prints deployments with their selector', () => {
    const d = {
      metadata: { name: 'web', creationTimestamp: '2025-04-06T19:06:18Z' },
      spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template: { spec: { containers: [{ name: 'c', image: 'nginx:1' }] } } },
      status: { readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 },
    };
    expect(cells(deploymentPrinter, d)).toEqual({ Name: 'web', Ready: '2/3', 'Up-to-date': 3, Available: 2, Age: '5d', Containers: 'c', Images: 'nginx:1', Selector: 'app=web' });
  });

  it('prints CRD additionalPrinterColumns, NAME AGE without them', () => {
    const printer = customResourcePrinter([
      { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
      { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
      { name: 'Issuer', type: 'string', jsonPath: '.spec.issuerRef.name', priority: 1 },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ]);
    const cr = { metadata: { name: 'c', creationTimestamp: '2025-04-11T18:47:31Z' }, spec: { replicas: 2 }, status: { conditions: [{ type: 'Ready', status: 'True' }] } };
    expect(cells(printer, cr)).toEqual({ Name: 'c', Ready: 'True', Replicas: 2, Issuer: null, Age: '18m' });
    expect(customResourcePrinter([]).columns.map((c) => c.name)).toEqual(['Name', 'Age']);
  });
});
