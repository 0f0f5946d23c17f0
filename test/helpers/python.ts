import path from 'node:path';
import type { TestClient } from './client.js';

/** The Python programs the tests debug; the server's --root in python tests. */
export const PY_ROOT = path.resolve(import.meta.dirname, '../programs/python');

/** Calls a plain-format tool and returns its structured result, failing loudly on an error. */
export async function pyOk(dk: TestClient, name: string, args: Record<string, unknown>): Promise<any> {
  const r = await dk.tool(name, args);
  if (r.isError) throw new Error(`${name} ${JSON.stringify(args)} failed: ${r.text}`);
  return r.structured;
}

/** Calls a tool that must fail; returns its error text. */
export async function pyFails(dk: TestClient, name: string, args: Record<string, unknown>): Promise<string> {
  const r = await dk.tool(name, args);
  if (!r.isError) throw new Error(`${name} ${JSON.stringify(args)} should have failed: ${r.text}`);
  return r.text;
}

/** A client of the python REST contract (POST /sessions, ...) at `origin`, with `key`: each call's status and JSON body. */
export function restApi(origin: string, key: string): (method: string, route: string, body?: unknown) => Promise<{ status: number; json: any }> {
  return async (method, route, body) => {
    const res = await fetch(`${origin}${route}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as any };
  };
}
