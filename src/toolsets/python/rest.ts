import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { DebugkitError } from '../../core/errors.js';
import { sendJson, sendRestError } from '../../server/rest.js';
import type { RestRoute } from '../../mcp/toolset.js';
import { line, projectFile, startInput } from './schemas.js';
import type { PythonService } from './service.js';
import type { RunOutcome } from './session.js';

/** REST sessions belong to the API key holder, apart from any MCP client's. */
const OWNER = 'rest';

const startBody = z.object(startInput);
const breakpointBody = z.object({ file: projectFile, line });

/**
 * The OpenAPI contract, route for route: the same service as the MCP tools, with the contract's
 * exact response shapes (run answers carry only hit, frameInfo, locals, completed, error).
 */
export function pythonRoutes(service: PythonService): RestRoute[] {
  const handle =
    (fn: (params: Record<string, string>, body: unknown) => Promise<unknown>) =>
    async (params: Record<string, string>, body: unknown, _req: unknown, res: ServerResponse) => {
      try {
        sendJson(res, 200, await fn(params, body));
      } catch (err) {
        sendRestError(res, err);
      }
    };
  const run = async (id: string, body: unknown) => {
    const { file, line: at } = parse(breakpointBody, body);
    return contractShape(await service.runTo(OWNER, id, file, { line: at }, { timeoutMs: 30_000 }));
  };
  return [
    { method: 'POST', path: '/sessions', handle: handle((_p, body) => service.start(OWNER, parse(startBody, body))) },
    { method: 'POST', path: '/sessions/:id/breakpoint', handle: handle((p, body) => run(p.id!, body)) },
    { method: 'POST', path: '/sessions/:id/continue', handle: handle((p, body) => run(p.id!, body)) },
    { method: 'GET', path: '/sessions/:id', handle: handle(async (p) => service.registry.get(OWNER, p.id!).state()) },
    { method: 'DELETE', path: '/sessions/:id', handle: handle((p) => service.end(OWNER, p.id!)) },
  ];
}

function contractShape(o: RunOutcome) {
  return { hit: o.hit, frameInfo: o.frameInfo, locals: o.locals, completed: o.completed, error: o.error };
}

/** Parses a body with zod; the error names the field and what is valid. */
function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
  throw new DebugkitError('INVALID_ARGUMENT', `invalid request body: ${issues}`);
}
