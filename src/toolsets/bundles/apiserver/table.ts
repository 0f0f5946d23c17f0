import { at, rec, type K8sObject } from './json.js';

/**
 * Server-side printing: the `meta.k8s.io Table` that kubectl asks for with
 * `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...` and prints as its columns.
 * Cells are computed here (as the real API server does), so AGE and STATUS are relative to
 * the bundle's collection time rather than to whenever kubectl runs.
 */

export interface CellContext {
  /** The reference time for ages: when the bundle was collected. */
  now: Date;
}

export interface Column {
  name: string;
  /** string, integer, number, boolean or date, as in TableColumnDefinition. */
  type: string;
  format?: string;
  description?: string;
  /** 0: always shown; 1: shown by `kubectl get -o wide` only. */
  priority?: number;
  cell(o: K8sObject, ctx: CellContext): unknown;
}

export interface RowCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface Printer {
  columns: Column[];
  /** Row conditions, e.g. pods that ran to completion (kubectl greys nothing today, but keeps them). */
  conditions?(o: K8sObject): RowCondition[];
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

interface MediaType {
  type: string;
  params: Record<string, string>;
}

export function parseAccept(accept: string | undefined): MediaType[] {
  if (!accept) return [];
  return accept.split(',').map((part) => {
    const [type = '', ...rest] = part.split(';').map((s) => s.trim());
    const params: Record<string, string> = {};
    for (const p of rest) {
      const eq = p.indexOf('=');
      if (eq > 0) params[p.slice(0, eq).trim()] = p.slice(eq + 1).trim();
    }
    return { type: type.toLowerCase(), params };
  });
}

/**
 * The meta.k8s.io version of the first Table the client accepts, or undefined when it wants
 * plain objects. Clients list v1 first and v1beta1 as a fallback.
 */
export function wantsTable(accept: string | undefined): 'v1' | 'v1beta1' | undefined {
  for (const m of parseAccept(accept)) {
    if (m.params.as === 'Table' && m.params.g === 'meta.k8s.io' && (m.params.v === 'v1' || m.params.v === 'v1beta1')) return m.params.v;
  }
  return undefined;
}

/** `as=PartialObjectMetadata[List]`: metadata-only answers some clients (and `kubectl get --raw`) ask for. */
export function wantsPartialMetadata(accept: string | undefined): boolean {
  return parseAccept(accept).some((m) => m.params.g === 'meta.k8s.io' && (m.params.as ?? '').startsWith('PartialObjectMetadata'));
}

export function partialObjectMetadata(o: K8sObject): K8sObject {
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: rec(at(o, 'metadata')) };
}

function rowObject(o: K8sObject, include: IncludeObject): K8sObject | undefined {
  if (include === 'None') return undefined;
  return include === 'Object' ? o : partialObjectMetadata(o);
}

export function parseIncludeObject(value: string | null): IncludeObject {
  return value === 'None' || value === 'Object' ? value : 'Metadata';
}

export interface TableOptions {
  now: Date;
  includeObject: IncludeObject;
  version: 'v1' | 'v1beta1';
  resourceVersion: string;
}

/** Wide columns are always included: kubectl drops priority>0 ones unless `-o wide`. */
export function buildTable(printer: Printer, objects: K8sObject[], opts: TableOptions): K8sObject {
  return { ...tableHead(printer, opts), rows: objects.map((o) => tableRow(printer, o, opts)) };
}

/** A Table without its rows (written after it, a row at a time, for long listings). */
export function tableHead(printer: Printer, opts: TableOptions): K8sObject {
  return {
    kind: 'Table',
    apiVersion: `meta.k8s.io/${opts.version}`,
    metadata: { resourceVersion: opts.resourceVersion },
    columnDefinitions: printer.columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.description ?? '',
      priority: c.priority ?? 0,
    })),
  };
}

/** One object's row of a Table. */
export function tableRow(printer: Printer, o: K8sObject, opts: TableOptions): K8sObject {
  const ctx: CellContext = { now: opts.now };
  const conditions = printer.conditions?.(o) ?? [];
  const object = rowObject(o, opts.includeObject);
  return {
    cells: printer.columns.map((c) => safeCell(c, o, ctx)),
    ...(conditions.length > 0 ? { conditions } : {}),
    ...(object ? { object } : {}),
  };
}

/** One odd object must not fail a whole listing: a cell that throws prints as <unknown>. */
function safeCell(c: Column, o: K8sObject, ctx: CellContext): unknown {
  try {
    const v = c.cell(o, ctx);
    return v === undefined ? null : v;
  } catch {
    return '<unknown>';
  }
}
