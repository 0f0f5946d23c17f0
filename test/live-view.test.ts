// The live view (issue 23): `/ui` on `debugkit serve`, in a real browser (Debian's chromium driven
// by playwright-core). An agent steps a gdb session over MCP while the page, given the agent's key,
// shows where the program stopped and follows it; another key sees nothing of it; the operator's
// key (every scope) sees it. The page loads with no console error under its strict CSP.
// Screenshots are kept in .artifacts/live-view/ (not compared: artefacts for a person to look at).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type TestClient } from './helpers/client.js';
import { createKey, startNode, tempDataDir, type Node } from './helpers/control.js';
import { compileCInside, tempDir } from './helpers/programs.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTEFACTS = path.resolve(import.meta.dirname, '../.artifacts/live-view');

let data: Awaited<ReturnType<typeof tempDataDir>>;
let node: Node;
let browser: Browser;
let agentKey: { key: string; id: string };
let otherKey: { key: string; id: string };
let operatorKey: { key: string; id: string };
let agent: TestClient;

beforeAll(async () => {
  data = await tempDataDir();
  const store = ['--data-dir', data.dir];
  const root = tempDir('debugkit-live-');
  compileCInside(root, 'basic'); // its source inside the root: the view shows the lines around a stop
  agentKey = await createKey(store, 'agent', 'gdb');
  otherKey = await createKey(store, 'other', 'gdb:read');
  operatorKey = await createKey(store, 'operator', '*');
  node = await startNode([...store, '--root', root, '--toolsets', 'gdb']);
  agent = await connectHttp(node.url, agentKey.key);
  // Running as root needs --no-sandbox; the page itself is held by its CSP.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  mkdirSync(ARTEFACTS, { recursive: true });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await agent?.close();
  await node?.stop();
  await data?.cleanup();
});

/** A page of /ui given `key`, with every console error and page error it raised. */
async function openView(key: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  const answer = await page.goto(node.url.replace(/\/mcp$/, '/ui'));
  expect(answer?.status()).toBe(200);
  expect(answer?.headers()['content-security-policy']).toMatch(/default-src 'none'; script-src 'self'/);
  await page.fill('#key', key);
  await page.click('button[type=submit]');
  await expect.poll(() => page.textContent('#status'), { timeout: 10_000 }).toMatch(/updated/);
  return { page, errors };
}

const stopCell = (page: Page, session: string) => page.locator(`#sessions tr[data-session="${session}"] td.stop`);

describe('the live view (/ui)', () => {
  it("shows the agent's gdb session where it stopped, follows it as it steps, and shows it to no other key", async () => {
    const view = await openView(agentKey.key);
    const other = await openView(otherKey.key);
    const operator = await openView(operatorKey.key);
    const { id } = await agent.ok('open', { program: 'basic' });
    await agent.ok('call', { id, command: 'break main' });
    await agent.ok('call', { id, command: 'run' });
    // The page polls: it shows the stop once the agent's call has answered.
    await expect.poll(() => stopCell(view.page, id).textContent(), { timeout: 10_000 }).toMatch(/^main at \S*basic\.c:12$/);
    await expect.poll(() => view.page.locator(`#sessions tr[data-source-of="${id}"] span.current`).textContent(), { timeout: 10_000 }).toMatch(/^\s+12 {2}\s*struct point origin = \{ 3, 4 \};/);
    await view.page.screenshot({ path: path.join(ARTEFACTS, 'stopped-at-main.png'), fullPage: true });
    await agent.ok('call', { id, command: 'next' });
    await expect.poll(() => stopCell(view.page, id).textContent(), { timeout: 10_000 }).toMatch(/basic\.c:13$/);
    await expect.poll(() => view.page.locator(`#sessions tr[data-source-of="${id}"] span.current`).textContent(), { timeout: 10_000 }).toMatch(/^\s+13 {2}\s*const char \*greeting = "hello";/);
    await expect.poll(() => view.page.locator(`#sessions tr[data-source-of="${id}"] p.trail`).textContent(), { timeout: 10_000 }).toBe('Stops: main:12 → main:13');
    // A call that does not move the program keeps the stop shown.
    await agent.ok('call', { id, command: 'info locals' });
    await expect.poll(() => view.page.locator('#calls tbody tr').count(), { timeout: 10_000 }).toBe(5); // open, break, run, next, info locals
    expect(await stopCell(view.page, id).textContent()).toMatch(/basic\.c:13$/);
    await view.page.screenshot({ path: path.join(ARTEFACTS, 'stepped.png'), fullPage: true });
    // The operator sees it too; another key sees neither the session nor its calls.
    await expect.poll(() => stopCell(operator.page, id).textContent(), { timeout: 10_000 }).toMatch(/basic\.c:13$/);
    // One more poll of the other key's page after the operator's showed the session.
    const seen = await other.page.textContent('#status');
    await expect.poll(() => other.page.textContent('#status'), { timeout: 10_000 }).not.toBe(seen);
    expect(await other.page.locator('#sessions tbody tr').count()).toBe(0);
    expect(await other.page.locator('#calls tbody tr').count()).toBe(0);
    expect(await other.page.textContent('body')).not.toContain(id);
    await other.page.screenshot({ path: path.join(ARTEFACTS, 'other-key.png'), fullPage: true });
    // Limits: a key sees its own; the operator sees every key's, and the audit's tail and its verification.
    await expect.poll(() => view.page.locator('#keys tbody tr').allTextContents(), { timeout: 10_000 }).toEqual([expect.stringContaining(agentKey.id)]);
    expect(await view.page.locator('#audit').isHidden()).toBe(true);
    await expect.poll(() => operator.page.locator('#keys tbody tr').count(), { timeout: 10_000 }).toBe(3);
    await expect.poll(() => operator.page.textContent('#verification'), { timeout: 10_000 }).toMatch(/^The chain verifies: \d+ entries/);
    await expect.poll(() => operator.page.locator('#audit-tail tbody').textContent(), { timeout: 10_000 }).toContain(agentKey.id);
    await operator.page.screenshot({ path: path.join(ARTEFACTS, 'operator.png'), fullPage: true });
    // The session ends: it leaves the view.
    await agent.ok('close', { id });
    await expect.poll(() => view.page.locator(`#sessions tr[data-session="${id}"]`).count(), { timeout: 10_000 }).toBe(0);
    expect([...view.errors, ...other.errors, ...operator.errors]).toEqual([]);
  }, 60_000);

  it('answers /ui/state only with a valid key, and the page says why it shows nothing', async () => {
    const state = node.url.replace(/\/mcp$/, '/ui/state');
    expect((await fetch(state)).status).toBe(401);
    expect((await fetch(state, { headers: { Authorization: 'Bearer not-a-key' } })).status).toBe(401);
    const page = await browser.newPage();
    await page.goto(node.url.replace(/\/mcp$/, '/ui'));
    await page.fill('#key', 'not-a-key');
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('#status'), { timeout: 10_000 }).toMatch(/^HTTP 401: /);
    expect(await page.locator('#sessions tbody tr').count()).toBe(0);
  }, 30_000);
});
