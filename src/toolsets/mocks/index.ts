import { defineToolset } from '../../mcp/define.js';
import { plainFormat } from '../../mcp/result-formats.js';
import type { MocksContext } from './tools/context.js';
import { listMocksTool } from './tools/list-mocks.js';
import { mockRecordTool } from './tools/mock-record.js';
import { mockTestTool } from './tools/mock-test.js';

export const mocksToolset = defineToolset<MocksContext>({
  name: 'mocks',
  capabilities: ['mocks:run'],
  summary: "Record a program's outgoing HTTP(S), PostgreSQL and TCP calls into Keploy mock sets and replay them while its tests run",
  instructions:
    'mocks: keploy_mock_record runs a command and records its outgoing HTTP(S), PostgreSQL and TCP calls into a mock set; ' +
    'keploy_mock_test replays them while the tests run; keploy_list_mocks lists the sets.',
  context: (env) => ({ config: env.config, log: env.log }),
  tools: [listMocksTool, mockRecordTool, mockTestTool],
  format: plainFormat,
  // Recording and replay live inside one call: its processes end with it (cancellation too).
  releaseClient: async () => undefined,
  dispose: async () => undefined,
});
