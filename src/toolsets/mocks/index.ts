import type { McpServer } from '../../mcp/toolset.js';
import type { Config } from '../../config.js';
import { plainFormat } from '../../mcp/result-formats.js';
import { registerTool, type ToolSpec } from '../../mcp/tools.js';
import type { ClientContext, Toolset, ToolsetEnv, ToolsetFactory } from '../../mcp/toolset.js';
import { listMocksTool } from './tools/list-mocks.js';
import { mockRecordTool } from './tools/mock-record.js';
import { mockTestTool } from './tools/mock-test.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const TOOLS: Array<(config: Config, warn: (m: string) => void) => ToolSpec<any, any>> = [listMocksTool, mockRecordTool, mockTestTool];

class MocksToolset implements Toolset {
  readonly name = 'mocks';

  constructor(private readonly env: ToolsetEnv) {}

  register(server: McpServer, client: ClientContext): void {
    const warn = (message: string) => {
      this.env.log.warn(`mocks: ${message}`);
      client.notify('warning', message);
    };
    for (const tool of TOOLS) registerTool(server, client, plainFormat, tool(this.env.config, warn));
  }

  // Recording and replay live inside one call: its processes end with it (cancellation too).
  async releaseClient(): Promise<void> {}

  async dispose(): Promise<void> {}
}

export const mocksToolset: ToolsetFactory = {
  name: 'mocks',
  summary: "Record a program's outgoing HTTP(S), PostgreSQL and TCP calls into Keploy mock sets and replay them while its tests run",
  create: (env) => new MocksToolset(env),
};
