import { z } from 'zod';
import { CheckedProgram } from '../../../core/paths.js';
import { withText } from '../../../mcp/tools.js';
import { clientKey } from '../../../core/sessions.js';
import { REPLY_TIMEOUT_MS, finishStop, idleTimeout, loadEngine, newSessionId, stopShape, waitSeconds, type DebuggerTool, defineTool } from './common.js';
import { copyDebugFiles, outwardDebugLink } from '../../../core/elf-core.js';
import { DebugkitError } from '../../../core/errors.js';
import { mocksOption } from '../../mocks/option.js';
import type { DebugReplay } from '../../mocks/under.js';

export const launchTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_launch',
    title: 'Launch a program under the debugger, recorded',
    description: 'Start a program under the workspace root; it stops at main with GDB record full on, so debugger_step_backward really executes backwards.',
    input: {
      program: z.string().min(1).describe('executable, relative to the workspace root'),
      args: z.array(z.string().max(4096)).max(256).default([]).describe('its arguments (never seen by a shell)'),
      session_id: newSessionId,
      wait: waitSeconds,
      timeout: idleTimeout,
      mocks: mocksOption.optional(),
    },
    output: { pid: z.number(), session_id: z.string(), history: z.string(), program: z.string(), stop: z.object(stopShape) },
    // Under a mock set the program's calls go through a replay that may reach real services and add to the set: keploy_mock_test's scope.
    scopes: { of: (args) => (args.mocks ? ['mocks:run'] : []) },
    async run({ program, args, session_id, wait, timeout, mocks }, call) {
      // Checked and opened here; gdb gets a private copy (CheckedProgram), removed when gdb exits:
      // the debug links judged are the copy's, and gdb finds debug files only beside the copy,
      // where the checked ones are put (attack atk-p P3, P10).
      const checked = await CheckedProgram.open(ctx.config.root, program, 'program', { copy: true, key: clientKey(call.client) });
      const file = checked.real;
      // gdb would read the debug files the program names by a path, wherever it leads (attack 18r I1, 18s N1/N2).
      let outward;
      try {
        outward = (await outwardDebugLink(checked.path, ctx.config.root)) ?? (await copyDebugFiles(checked.path, file, ctx.config.root));
      } catch (err) {
        checked.close();
        throw err;
      }
      if (outward) {
        checked.close();
        throw new DebugkitError('PATH_OUTSIDE_ROOT', `${program} ${outward}; rebuild it, or link its debug files by name`);
      }
      let replay: DebugReplay | undefined;
      // The registry reserves session_id before gdb starts: a concurrent launch or attach of it is refused.
      try {
        if (mocks) {
          // The replay engine loads with the first session that asks for it.
          const { DebugReplay } = await import('../../mocks/under.js');
          replay = await DebugReplay.start({
            root: ctx.config.root,
            option: mocks,
            owner: clientKey(call.client),
            ownPorts: [ctx.config.http.port],
            // proxychains' name-resolving thread never comes back from record full's stepping.
            proxyDns: false,
            warn: (message) => call.client.notify('warning', `debugger session ${session_id} under mock set '${mocks.set}': ${message}`),
          });
        }
        const underMocks = replay;
        await ctx.sessions.create(
          call.client.owner,
          timeout * 1000,
          async () =>
            (await loadEngine()).DebugSession.launch(
              session_id,
              checked,
              args,
              { gdbPath: ctx.config.gdb.path, root: ctx.config.root, replyTimeoutMs: REPLY_TIMEOUT_MS, key: clientKey(call.client) },
              wait * 1000,
              underMocks,
            ),
          { id: session_id, key: clientKey(call.client), signal: call.signal },
        );
      } catch (err) {
        checked.close();
        // A session that started owns its replay (closed with gdb); one that did not start leaves it here.
        await replay?.close();
        throw err;
      }
      return ctx.sessions.use(call.client.owner, session_id, async (session) => {
        const stop = await finishStop(ctx, session, session.engine.latestStop, '');
        return withText({ pid: session.pid, session_id, history: session.mode, program: file, stop }, `Launched ${file} as process ${session.pid}, stopped at main; history: ${session.modeNote}`);
      });
    },
  });
