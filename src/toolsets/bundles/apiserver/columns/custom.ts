import { since } from '../duration.js';
import { evaluateJsonPath } from '../jsonpath.js';
import type { K8sObject } from '../json.js';
import type { PrinterColumn } from '../resources.js';
import type { Column, Printer } from '../table.js';
import { ageColumn, nameColumn } from './common.js';

/**
 * Custom resources print their CRD's additionalPrinterColumns, like the apiextensions
 * server does: the first JSONPath result per cell, dates as ages, `<none>` when empty.
 */
function cellValue(type: string, value: unknown, now: Date): unknown {
  if (value === undefined || value === null) return null;
  switch (type) {
    case 'integer':
      return typeof value === 'number' ? Math.trunc(value) : null;
    case 'number':
      return typeof value === 'number' ? value : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'date':
      return typeof value === 'string' ? since(value, now) : null;
    default:
      // Strings print as they are; other JSON values as compact JSON, like kubectl's jsonpath printer,
      // each cut at MAX_CELL: a column naming a large value (`.spec` of a 100 MB object) made one
      // whole copy of it on the event loop per column and row.
      return typeof value === 'string' ? (value.length > MAX_CELL ? `${value.slice(0, MAX_CELL)}…` : value) : boundedJson(value, MAX_CELL);
  }
}

/** The most characters of one cell. */
export const MAX_CELL = 64 * 1024;

/** `value` as compact JSON, written only until `max` characters (then "…"), at most 64 levels deep. */
export function boundedJson(value: unknown, max: number): string {
  let out = '';
  /** Appends `text`, or what room is left of it: false once something did not fit. */
  const put = (text: string) => {
    const room = max - out.length;
    const fits = text.length <= room;
    out += fits ? text : text.slice(0, Math.max(0, room));
    return fits;
  };
  const walk = (v: unknown, depth: number): boolean => {
    if (typeof v === 'string') return put(JSON.stringify(v.length > max ? v.slice(0, max) : v));
    if (v === null || typeof v !== 'object') return put(JSON.stringify(v) ?? 'null');
    if (depth >= 64) return put('…');
    // Item by item, nothing made of the whole first: a value of a million items stops at `max` too.
    if (Array.isArray(v)) {
      if (!put('[')) return false;
      for (let i = 0; i < v.length; i++) if ((i > 0 && !put(',')) || !walk(v[i] ?? null, depth + 1)) return false;
      return put(']');
    }
    if (!put('{')) return false;
    let first = true;
    for (const key in v) {
      const x = (v as Record<string, unknown>)[key];
      if (!Object.hasOwn(v, key) || x === undefined) continue;
      if ((!first && !put(',')) || !put(`${JSON.stringify(key)}:`) || !walk(x, depth + 1)) return false;
      first = false;
    }
    return put('}');
  };
  return walk(value, 0) ? out : `${out}…`;
}

function printerColumn(c: PrinterColumn): Column {
  return {
    name: c.name,
    type: c.type,
    format: c.format,
    description: c.description,
    priority: c.priority ?? 0,
    cell: (o: K8sObject, ctx) => {
      let results: unknown[];
      try {
        results = evaluateJsonPath(o, c.jsonPath);
      } catch {
        return null;
      }
      return cellValue(c.type, results[0], ctx.now);
    },
  };
}

/** With no printer columns a CRD shows NAME and AGE, the apiextensions default. */
export function customResourcePrinter(columns: PrinterColumn[] | undefined): Printer {
  if (!columns || columns.length === 0) return { columns: [nameColumn, ageColumn] };
  return { columns: [nameColumn, ...columns.map(printerColumn)] };
}
