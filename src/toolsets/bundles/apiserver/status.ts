import type { ServerResponse } from 'node:http';
import { sendJson } from '../../../mcp/rest.js';

/**
 * Kubernetes `Status` objects. kubectl turns these into its familiar one-line errors
 * ("Error from server (NotFound): pods "x" not found"), so every failure of this server is
 * one, never a bare HTTP error page.
 */
export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  details?: { name?: string; group?: string; kind?: string };
  code: number;
}

export function failure(code: number, reason: string, message: string, details?: Status['details']): Status {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
}

/** The NotFound a real API server gives for a missing object: `pods "x" not found`. */
export function notFound(plural: string, name: string, group = ''): Status {
  const what = group ? `${plural}.${group}` : plural;
  return failure(404, 'NotFound', `${what} "${name}" not found`, { name, ...(group ? { group } : {}), kind: plural });
}

/** The NotFound for a path that names no resource at all. */
export function pathNotFound(): Status {
  return failure(404, 'NotFound', 'the server could not find the requested resource');
}

export function methodNotAllowed(detail: string): Status {
  return failure(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource (${detail})`);
}

export function badRequest(message: string): Status {
  return failure(400, 'BadRequest', message);
}

export function internalError(message: string): Status {
  return failure(500, 'InternalError', `an error on the server ("${message}") has prevented the request from succeeding`);
}

export function timeout(): Status {
  return failure(504, 'Timeout', 'the request did not complete in time on this support-bundle API server');
}

/** `299 - "text"`, kubectl prints it as "Warning: text"; header values must stay printable ASCII. */
export function warningHeader(text: string): string {
  return `299 - ${JSON.stringify(text.replace(/[^\x20-\x7e]/g, '?'))}`;
}

export function sendStatus(res: ServerResponse, status: Status): void {
  sendJson(res, status.code, status);
}
