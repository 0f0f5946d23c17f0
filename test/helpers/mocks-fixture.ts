import { afterAll, beforeAll } from 'vitest';
import { connectStdio, type TestClient } from './client.js';
import { mocksWorkspace } from './programs.js';

/** What a mocks e2e file works with once its set-up ran: the workspace, the real service it depends on, and debugkit. */
export interface MocksFixture<S> {
  root: string;
  /** The real service (a MariaDB, a PostgreSQL) the programs call; a test may stop it to replay without it. */
  db: S;
  /** A debugkit server (stdio, the mocks toolset) whose root is the workspace. */
  dk: TestClient;
}

/**
 * The set-up the mocks e2e files share: before their tests, a workspace of the mocks test programs
 * (`prefix`; `nodeModules` for the Node ones), `prepare` writing the file's own programs into it,
 * the service `start` starts, then debugkit; after them, debugkit and the service stopped. The
 * fields are there once the tests run.
 */
export function mocksFixture<S extends { stop(): Promise<void> }>(
  prefix: string,
  start: () => Promise<S>,
  { nodeModules = false, prepare }: { nodeModules?: boolean; prepare?: (root: string, db: S) => void | Promise<void> } = {},
): MocksFixture<S> {
  const fixture = {} as MocksFixture<S>;
  beforeAll(async () => {
    fixture.root = mocksWorkspace(prefix, { nodeModules });
    fixture.db = await start();
    await prepare?.(fixture.root, fixture.db);
    fixture.dk = await connectStdio({ root: fixture.root, args: ['--toolsets', 'mocks'] });
  }, 120_000);
  afterAll(async () => {
    await fixture.dk?.close();
    await fixture.db?.stop();
  });
  return fixture;
}
