// Start to the first breakpoint hit through debugkit's python tools, for any language an entry names (go.ts, node.ts):
// python_start_session, then python_run_to_breakpoint to its answer (the compact stop), then the session ended.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

export async function firstHitThroughDebugkit(client: Client, entry: string, file: string, line: number, timeoutMs: number): Promise<number> {
  const started = performance.now();
  const start = await client.callTool({ name: 'python_start_session', arguments: { entry } }, undefined, { timeout: timeoutMs });
  if (start.isError) throw new Error(`python_start_session failed: ${JSON.stringify(start.content)}`);
  const sessionId = (start.structuredContent as { sessionId: string }).sessionId;
  const stop = await client.callTool({ name: 'python_run_to_breakpoint', arguments: { sessionId, file, line, timeout: 60 } }, undefined, { timeout: timeoutMs });
  const elapsed = performance.now() - started;
  if (stop.isError || (stop.structuredContent as { hit?: boolean }).hit !== true) throw new Error(`no hit: ${JSON.stringify(stop.content).slice(0, 300)}`);
  await client.callTool({ name: 'python_end_session', arguments: { sessionId } });
  return elapsed;
}
