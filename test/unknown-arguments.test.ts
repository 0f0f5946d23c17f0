import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from './helpers/client.js';
import { PY_ROOT } from './helpers/python.js';

/**
 * Issue 21: an argument a tool does not take was dropped silently, so a misnamed one looked taken
 * (debugger_get_variables {"expression": ...} answered every local). Every toolset now refuses it
 * with a result the model sees (isError), naming the valid arguments.
 */
let dk: TestClient;

beforeAll(async () => {
  dk = await connectStdio({ root: PY_ROOT });
});
afterAll(async () => {
  await dk?.close();
});

describe('an argument the tool does not take', () => {
  it.each([
    ['debugger_get_variables', { session_id: 's', expression: 'j->payload[8]' }, /unknown field "expression"; valid fields: .*session_id/],
    ['python_get_session', { sessionId: 's', frame: 2 }, /unknown field "frame"; valid fields: sessionId$/],
    ['call', { id: 's', command: 'bt', verbose: true }, /unknown field "verbose"; valid fields: id, command, commands, wait, raw/],
    ['read_file', { path: '/x', lines: 3 }, /unknown field "lines"; valid fields: .*start_line/],
    ['keploy_list_mocks', { path: '.', recursive: true }, /unknown field "recursive"/],
    ['list_sessions', { all: true }, /unknown field "all"; this tool takes no arguments/],
  ])('%s is refused, naming the valid ones', async (tool, args, message) => {
    const r = await dk.tool(tool, args);
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(message);
  });
});
