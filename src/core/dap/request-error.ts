import type { DebugProtocol } from '@vscode/debugprotocol';
import { DebugkitError } from '../errors.js';

/**
 * The adapter answered a request with `success: false`. Code ENGINE_FAILED: the refusal comes
 * from the debug engine, and this layer cannot tell a bad argument (wrong program path) from a
 * state problem (`notStopped`) or an engine fault; the message carries the adapter's own words,
 * and a toolset that knows better can map `command` / `reason` to a more specific code.
 */
export class DapRequestError extends DebugkitError {
  override name = 'DapRequestError';
  /** The request's command, e.g. "launch". */
  readonly command: string;
  /** The response's short `message` ('cancelled', 'notStopped', or free text), if any. */
  readonly reason: string | undefined;
  /** `body.error.id`, if the adapter sent a structured error. */
  readonly errorId: number | undefined;
  /** The response's body, for adapter-specific details. */
  readonly body: unknown;

  constructor(adapterName: string, response: DebugProtocol.Response) {
    super('ENGINE_FAILED', `${adapterName} failed the "${response.command}" request: ${describeFailure(response)}`);
    this.command = response.command;
    this.reason = typeof response.message === 'string' ? response.message : undefined;
    const error = structuredError(response);
    this.errorId = typeof error?.id === 'number' ? error.id : undefined;
    this.body = response.body;
  }
}

/** Prefers the structured error (formatted) and keeps the short message when it adds something. */
export function describeFailure(response: DebugProtocol.Response): string {
  const error = structuredError(response);
  const formatted = error ? formatMessage(error.format, error.variables) : undefined;
  const short = typeof response.message === 'string' && response.message.length > 0 ? response.message : undefined;
  if (formatted && short && !formatted.includes(short)) return `${formatted} (${short})`;
  return formatted ?? short ?? 'no reason given';
}

/** Fills `{name}` placeholders from `variables`; unknown names stay visible as they are. */
export function formatMessage(format: string, variables: Record<string, unknown> | undefined): string {
  return format.replace(/\{([^{}]+)\}/g, (whole, name: string) => {
    // hasOwn: a placeholder like {constructor} must not pick up Object.prototype members.
    return variables && Object.hasOwn(variables, name) ? String(variables[name]) : whole;
  });
}

function structuredError(response: DebugProtocol.Response): DebugProtocol.Message | undefined {
  const error: unknown = (response.body as { error?: unknown } | undefined)?.error;
  if (typeof error !== 'object' || error === null) return undefined;
  const format = (error as { format?: unknown }).format;
  return typeof format === 'string' ? (error as DebugProtocol.Message) : undefined;
}
