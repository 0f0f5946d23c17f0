import { since } from '../duration.js';
import { at, list, nameOf, str, type K8sObject } from '../json.js';
import { formatLabelSelector } from '../selectors.js';
import type { Column, Printer } from '../table.js';

/** Column building blocks shared by the per-kind printers, mirroring kubectl's printers.go. */

export const nameColumn: Column = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace.',
  cell: (o) => nameOf(o),
};

export const ageColumn: Column = {
  name: 'Age',
  type: 'string',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
  cell: (o, ctx) => since(at(o, 'metadata', 'creationTimestamp'), ctx.now),
};

/** The API server's default for kinds without a printer (roles, CRDs...): `CREATED AT` in RFC 3339. */
export const createdAtColumn: Column = {
  name: 'Created At',
  type: 'date',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
  cell: (o) => {
    const t = Date.parse(str(at(o, 'metadata', 'creationTimestamp')));
    return Number.isNaN(t) ? null : new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
  },
};

export function col(name: string, type: string, cell: Column['cell'], priority = 0): Column {
  return { name, type, cell, priority };
}

export function wide(name: string, cell: Column['cell']): Column {
  return col(name, 'string', cell, 1);
}

/** Containers of a pod template (`spec.template.spec.containers`) or, with `path`, elsewhere. */
function templateContainers(o: K8sObject, path: string[]): unknown[] {
  return list(at(o, ...path, 'containers'));
}

export function containerColumns(path: string[] = ['spec', 'template', 'spec']): Column[] {
  return [
    wide('Containers', (o) =>
      templateContainers(o, path)
        .map((c) => str(at(c, 'name')))
        .join(','),
    ),
    wide('Images', (o) =>
      templateContainers(o, path)
        .map((c) => str(at(c, 'image')))
        .join(','),
    ),
  ];
}

export const selectorColumn: Column = wide('Selector', (o) => formatLabelSelector(at(o, 'spec', 'selector')) || '<none>');

export function int(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? Math.trunc(v) : 0;
}

/** `text` or `<none>` when empty: kubectl's placeholder for an unset value. */
export function orNone(text: string): string {
  return text === '' ? '<none>' : text;
}

export const genericPrinter: Printer = { columns: [nameColumn, ageColumn] };
export const createdAtPrinter: Printer = { columns: [nameColumn, createdAtColumn] };
