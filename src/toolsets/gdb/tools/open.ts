import { z } from 'zod';
import { DebugkitError } from '../../../core/errors.js';
import { closeSync } from 'node:fs';
import { copyDebugFiles, outwardDebugLink } from '../../../core/elf-core.js';
import { CheckedProgram, descriptorPath, openContained, openContainedDirectory } from '../../../core/paths.js';
import { CAPABILITIES, judgeProgramCopy } from '../policy.js';
import { clientKey } from '../../../core/sessions.js';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { GdbSession } from '../session.js';
import { mocksOption } from '../../mocks/option.js';
import type { DebugReplay } from '../../mocks/under.js';
import type { GdbContext } from './index.js';

const input = {
  timeout: z.number().int().min(1).max(86_400).default(300).describe('Idle seconds before the session closes (default 300)'),
  program: z.string().optional().describe('Executable to load (like "file PROGRAM"), relative to the workspace root'),
  args: z.array(z.string()).optional().describe('Arguments for the program (like "set args")'),
  cwd: z.string().optional().describe('Working directory for gdb and the program, relative to the workspace root (default: the root)'),
  mocks: mocksOption.optional(),
};
const output = { id: z.string().describe('The session id to pass to call/close') };
/** The scopes each call's key was checked for, by its program (scopes.of): loading it must not need more. */
const checkedScopes = new WeakMap<object, string[]>();

export function openTool(ctx: GdbContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'open',
    title: 'Start a GDB session',
    description:
      'Starts a new GDB session (gdb in MI mode) and returns its id. Optionally loads a program with its arguments. ' +
      'The session ends after `timeout` seconds without calls, on close, or when the client disconnects.',
    input,
    output,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    // A program whose debug link leads out of the root makes gdb read outside it: that needs the
    // key's shell scope as well as the operator's flag, as `call file ...` does. Read here on the
    // opened file; the copy gdb loads is checked again, against the scopes checked here.
    scopes: {
      of: async (args) => {
        // Under a mock set the program's calls go through a replay that may reach real services and add to the set:
        // keploy_mock_test's scope, asked whatever the program (attack 18z Y1: a program missing at this check, there
        // when the session started, skipped it).
        const replay = args.mocks ? ['mocks:run'] : [];
        let scopes: string[] = [];
        if (args.program) {
          let opened;
          try {
            opened = openContained(ctx.config.root, args.program, { what: 'program', type: 'file' });
          } catch {
            checkedScopes.set(args, scopes);
            return replay; // run says what is wrong with the path
          }
          try {
            const file = descriptorPath(opened.fd);
            const root = ctx.config.root;
            if ((await outwardDebugLink(file, root)) ?? (await copyDebugFiles(file, opened.real, root, { judgeOnly: true }))) scopes = [CAPABILITIES.shell.scope];
          } finally {
            closeSync(opened.fd);
          }
        }
        checkedScopes.set(args, scopes);
        return [...scopes, ...replay];
      },
    },
    async run(args, call) {
      const root = ctx.config.root;
      // What gdb loads, and the directory it starts in, are opened here and checked inside the root;
      // gdb gets a private copy of the opened program and starts in the opened directory, never a
      // workspace path a writer could swap for a link meanwhile.
      // Always a copy: its debug links are judged on the copy gdb reads, and gdb finds its debug
      // files only beside the copy, where the checked ones are put (attack atk-p P3, P10).
      const program = args.program ? await CheckedProgram.open(root, args.program, 'program', { copy: true, key: clientKey(call.client) }) : undefined;
      let dir;
      try {
        if (program) await judgeProgramCopy(program, `program ${args.program}`, { root, cwd: root, ownPids: new Set(), ...ctx.config.gdb }, checkedScopes.get(args));
        dir = args.cwd ? openContainedDirectory(root, args.cwd) : undefined;
      } catch (err) {
        program?.close();
        throw err;
      }
      const cwd = dir?.real ?? root;
      let info;
      let replay: DebugReplay | undefined;
      try {
        if (args.mocks) {
          // The replay engine loads with the first session that asks for it.
          const { DebugReplay } = await import('../../mocks/under.js');
          replay = await DebugReplay.start({
            root,
            option: args.mocks,
            owner: clientKey(call.client),
            ownPorts: [ctx.config.http.port],
            warn: (message) => call.client.notify('warning', `gdb session under mock set '${args.mocks!.set}': ${message}`),
          });
        }
        info = await ctx.registry.create(
          call.client.owner,
          args.timeout * 1000,
          async (id) => {
            // The gdb engine (MI session, command policy, output collector) loads on the first open, not at start.
            const { GdbSession } = await import('../session.js');
            const session = await GdbSession.start({
              gdbPath: ctx.config.gdb.path,
              cwd,
              ...(dir ? { startIn: dir.path } : {}),
              execWrapper: ctx.execWrapper,
              replyTimeoutMs: 60_000,
              policy: { root, allowShell: ctx.config.gdb.allowShell, allowAttach: ctx.config.gdb.allowAttach, key: clientKey(call.client) },
              onEngineExit: (message) => {
                ctx.log.warn(`gdb session ${id}: ${message}`);
                call.client.notify('warning', `gdb session ${id}: ${message}`);
                ctx.registry.forget(id, message);
              },
            });
            // The program's copy stays while it is gdb's program, and goes with gdb; a run after the
            // file was rebuilt loads a fresh copy first.
            if (program) session.adoptProgram(program);
            if (replay) {
              // The session owns the replay from here: it closes it when gdb ends.
              const underMocks = replay;
              replay = undefined;
              await session.underMocks(underMocks).catch(async (err: unknown) => {
                await session.dispose('the mock set could not be set up');
                throw err;
              });
            }
            call.client.notify('info', `gdb session ${id} started (gdb pid ${session.pid}, cwd ${cwd})`);
            try {
              if (program) await loadProgram(session, program, args.args ?? []);
            } catch (err) {
              await session.dispose('loading the program failed');
              throw err;
            }
            return session;
          },
          { key: clientKey(call.client), signal: call.signal },
        );
      } catch (err) {
        program?.close();
        throw err;
      } finally {
        dir?.close();
        await replay?.close();
      }
      return { id: info.id };
    },
  };
}

/**
 * Loads a checked program (CheckedProgram.open: checked and opened inside the root) into gdb: gdb
 * reads, and every `run` executes, the private copy of the checked file, never the workspace path,
 * which a writer could have swapped for a link by then.
 */
export async function loadProgram(session: GdbSession, program: CheckedProgram, args: string[]): Promise<void> {
  const opts = { waitMs: 0, trusted: true };
  const { quoteMiString } = await import('../../../core/mi/connection.js');
  try {
    await session.call(`-file-exec-and-symbols ${quoteMiString(program.path)}`, opts);
    if (args.length > 0) await session.call(`-exec-arguments ${args.map(shellQuote).join(' ')}`, opts);
  } catch (err) {
    throw new DebugkitError('INVALID_ARGUMENT', `cannot load program ${program.real}: ${(err as Error).message}`, { cause: err });
  }
}

/** gdb hands program arguments to /bin/sh (startup-with-shell), so each is single-quoted. */
function shellQuote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}
