import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { DebugkitError } from '../../core/errors.js';
import { formatZodIssuesPlain } from '../../mcp/input-errors.js';
import { redactValue } from '../../mcp/redact-answers.js';
import { sendJson, sendRestError } from '../../mcp/rest.js';
import type { RestRoute, RouteClient } from '../../mcp/toolset.js';
import { line, projectFile, startInput } from './schemas.js';
import { mocksOption } from '../mocks/option.js';
import type { PythonService } from './service.js';
import type { RunOutcome } from './session.js';

// The contract's fields, and debugkit's own `mocks` (debug under a mock set), which the contract's clients never send.
const startBody = z.object({ ...startInput, mocks: mocksOption.optional() });
const breakpointBody = z.object({ file: projectFile, line });

/**
 * The OpenAPI contract, route for route: the same service as the MCP tools, with the contract's
 * exact response shapes (run answers carry only hit, frameInfo, locals, completed, error).
 */
export function pythonRoutes(service: PythonService): RestRoute[] {
  // REST sessions belong to the calling key (owner `rest:<key id>`), apart from any MCP client's:
  // another key's session id answers exactly like an unknown one, and the caps count per key.
  const handle =
    (fn: (owner: string, params: Record<string, string>, body: unknown, client: RouteClient) => Promise<unknown>) =>
    async (params: Record<string, string>, body: unknown, _req: unknown, res: ServerResponse, client: RouteClient) => {
      try {
        const answer = await fn(client.owner, params, body, client);
        // Secrets in answers: hidden as the MCP tools hide them (a local `password`'s repr, a token's
        // shape), off with --no-redact; only strings change, so the contract's shape holds.
        sendJson(res, 200, service.config.redact === false ? answer : withinStopBudget(redactValue(answer), answer));
      } catch (err) {
        sendRestError(res, err);
      }
    };
  const run = async (owner: string, id: string, body: unknown, signal?: AbortSignal) => {
    const { file, line: at } = parse(breakpointBody, body);
    return contractShape(await service.runTo(owner, id, file, { line: at }, { timeoutMs: 30_000, signal }));
  };
  return [
    {
      method: 'POST',
      path: '/sessions',
      handle: handle((owner, _p, body, client) => {
        // Attaching is python_start_session's (an MCP tool, with its scope): here it would be dropped, and a second copy of
        // the program started in place of the one asked for (attack m2-4).
        if (body && typeof body === 'object' && 'attach' in body) {
          throw new DebugkitError('INVALID_ARGUMENT', 'attach is not part of the REST API: attach to a running program with the MCP tool python_start_session (attach)');
        }
        return service.start(owner, parse(startBody, body), client.principal.id, client.signal);
      }),
      // As python_start_session: a program under a mock set needs keploy_mock_test's scope.
      scopes: (body) => (body && typeof body === 'object' && 'mocks' in body && (body as { mocks?: unknown }).mocks != null ? ['mocks:run'] : []),
    },
    { method: 'POST', path: '/sessions/:id/breakpoint', handle: handle((owner, p, body, client) => run(owner, p.id!, body, client.signal)) },
    { method: 'POST', path: '/sessions/:id/continue', handle: handle((owner, p, body, client) => run(owner, p.id!, body, client.signal)) },
    { method: 'GET', path: '/sessions/:id', handle: handle(async (owner, p) => service.registry.get(owner, p.id!).state()) },
    { method: 'DELETE', path: '/sessions/:id', handle: handle((owner, p) => service.end(owner, p.id!)) },
  ];
}

function contractShape(o: RunOutcome) {
  return { hit: o.hit, frameInfo: o.frameInfo, locals: o.locals, completed: o.completed, error: o.error };
}

/**
 * A stop's locals, once hidden, within what they cost before: a label can be longer than what it
 * hides (`token=a ` reads `token=[redacted token] `), so redaction may grow reprs localsView had
 * kept within TREE_BUDGET_CHARS (attack 18y X4: 28,737 bytes for a 12,000-character stop). Counted
 * as localsView counts (a repr, its name and 50 each), the hidden locals get no more than the shown
 * ones cost: every entry stays with at least "..." (the contract counts no locals left out, so none
 * is dropped), and the rest goes to the reprs in order, the ones past it cut ("...", isTruncated).
 * It only cuts, so nothing hidden comes back, and a stop redaction did not grow is left as it was.
 */
function withinStopBudget(hidden: unknown, shown: unknown): unknown {
  const before = reprsOf(shown);
  const after = reprsOf(hidden);
  if (!before || !after) return hidden;
  const cost = (views: [string, { repr: string }][]) => views.reduce((n, [name, v]) => n + v.repr.length + name.length + 50, 0);
  const budget = cost(before);
  if (cost(after) <= budget) return hidden;
  const CUT = '...';
  // What every entry costs at least, then what is left for the reprs, given in order.
  let left = budget - after.reduce((n, [name, v]) => n + name.length + 50 + Math.min(v.repr.length, CUT.length), 0);
  const locals = { ...((hidden as { locals: object }).locals as Record<string, unknown>) };
  for (const [name, v] of after) {
    const room = Math.max(0, left) + CUT.length;
    const cut = v.repr.length > room;
    const repr = cut ? `${v.repr.slice(0, room - CUT.length)}${CUT}` : v.repr;
    left -= repr.length - Math.min(v.repr.length, CUT.length);
    if (cut) locals[name] = { ...v, repr, isTruncated: true };
  }
  return { ...(hidden as object), locals };
}

/** A stop answer's locals that are value views (`{type, repr, isTruncated}`), in order; none for other answers. */
function reprsOf(answer: unknown): [string, { repr: string }][] | undefined {
  const locals = (answer as { locals?: unknown } | null)?.locals;
  if (locals === null || typeof locals !== 'object') return undefined;
  return Object.entries(locals as Record<string, unknown>).filter((e): e is [string, { repr: string }] => typeof (e[1] as { repr?: unknown } | null)?.repr === 'string');
}

/** Parses a body with zod; the error names the field and what is valid. */
function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  throw new DebugkitError('INVALID_ARGUMENT', `invalid request body: ${formatZodIssuesPlain(result.error.issues, 'body')}`);
}
