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
      // Strings print as they are; other JSON values as compact JSON, like kubectl's jsonpath printer.
      return typeof value === 'string' ? value : JSON.stringify(value);
  }
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
