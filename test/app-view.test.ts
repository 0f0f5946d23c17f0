// The MCP Apps view (issue 23): a client that declares io.modelcontextprotocol/ui sees the debug
// tools name ui://debugkit/stop.html in their _meta, reads the view, and a host renders it beside a
// real gdb answer. The host here is a page in Debian's chromium (playwright-core) that speaks the
// view's side of the protocol (ui/initialize, ui/notifications/tool-result) as MCP Apps hosts do.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, startHttpServer, type HttpServer, type TestClient } from './helpers/client.js';
import { rpc } from './helpers/control.js';
import { compileC, compileCInside, tempDir } from './helpers/programs.js';

const UI = 'io.modelcontextprotocol/ui';
const APP_MIME = 'text/html;profile=mcp-app';
const VIEW = 'ui://debugkit/stop.html';
const ARTEFACTS = path.resolve(import.meta.dirname, '../.artifacts/live-view');

let server: HttpServer;
let browser: Browser;
let agent: TestClient;

beforeAll(async () => {
  const root = tempDir('debugkit-app-view-');
  compileC(root, 'basic');
  compileCInside(root, 'dbg_timetravel'); // its source inside the root: the stop shows it
  server = await startHttpServer(['--root', root]);
  agent = await connectHttp(server.url, server.key);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  mkdirSync(ARTEFACTS, { recursive: true });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await agent?.close();
  await server?.stop();
});

/** The host's side, run in the page: answers ui/initialize, then sends the tool's result once the view is initialized. */
const HOST = `({ html, answer }) => {
  const frame = document.getElementById('view');
  window.addEventListener('message', (event) => {
    const m = event.data;
    if (m && m.method === 'ui/initialize') {
      frame.contentWindow.postMessage({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2026-01-26', hostInfo: { name: 'test-host', version: '1' }, hostCapabilities: {}, hostContext: {} } }, '*');
    }
    if (m && m.method === 'ui/notifications/initialized') {
      frame.contentWindow.postMessage({ jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: answer }, '*');
    }
  });
  frame.srcdoc = html;
}`;

/** A page playing an MCP Apps host: an iframe holding the view, sent `answer` once the view is initialized; the page's errors. */
async function host(html: string, answer: unknown) {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.setContent('<!doctype html><html><body><iframe id="view" sandbox="allow-scripts" width="900" height="900"></iframe></body></html>');
  await page.evaluate(`(${HOST})(${JSON.stringify({ html, answer })})`);
  return { page, errors };
}

/** A 2025 session whose client declares (or not) that it renders MCP Apps; its tools/list. */
async function listedWith(capabilities: Record<string, unknown>): Promise<Array<{ name: string; _meta?: Record<string, unknown> }>> {
  const init = await rpc(server.url, server.key, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities, clientInfo: { name: 'host', version: '1' } } });
  const sid = init.headers.get('mcp-session-id')!;
  const headers = { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' };
  await rpc(server.url, server.key, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  const list = await rpc(server.url, server.key, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, headers);
  return list.body.result.tools;
}

describe('the MCP Apps stop view', () => {
  it('is named by the debug tools only for a client that renders apps, and read as an app resource', async () => {
    const apps = await listedWith({ extensions: { [UI]: { mimeTypes: [APP_MIME] } } });
    const named = apps.filter((t) => (t._meta?.ui as { resourceUri?: string } | undefined)?.resourceUri === VIEW).map((t) => t.name);
    expect(named).toEqual(expect.arrayContaining(['call', 'python_continue', 'debugger_step_forward', 'debugger_export_trace', 'keploy_mock_test', 'keploy_mock_record', 'bundle_summary']));
    expect(named).not.toContain('list_sessions'); // no session to show
    expect(named).not.toContain('keploy_list_mocks');
    const plain = await listedWith({});
    expect(plain.filter((t) => t._meta !== undefined)).toEqual([]);
    const read = await agent.client.readResource({ uri: VIEW });
    expect(read.contents[0]).toMatchObject({ uri: VIEW, mimeType: APP_MIME, text: expect.stringContaining('ui/initialize') });
  });

  it('a host renders a real debugger stop: the source with its line marked, the variables that changed, the frames; then the timeline of positions', async () => {
    const html = ((await agent.client.readResource({ uri: VIEW })).contents[0] as { text: string }).text;
    expect(html).not.toContain('DEBUGKIT_ANSWER_READER');
    expect((await agent.tool('debugger_launch', { program: 'dbg_timetravel', session_id: 'view' })).isError).toBe(false);
    expect((await agent.tool('debugger_set_breakpoint', { address: 'bump', condition: 'by == 3', session_id: 'view' })).isError).toBe(false);
    const stop = await agent.client.callTool({ name: 'debugger_continue', arguments: { session_id: 'view' } });
    expect((await agent.tool('debugger_bookmark', { name: 'third-bump', session_id: 'view' })).isError).toBe(false);
    const trace = await agent.client.callTool({ name: 'debugger_export_trace', arguments: { session_id: 'view', format: 'json' } });
    expect((await agent.tool('debugger_detach', { session_id: 'view' })).isError).toBe(false);
    const { page, errors } = await host(html, stop);
    const view = page.frameLocator('#view');
    await expect.poll(() => view.locator('#where').textContent(), { timeout: 10_000 }).toMatch(/^bump at \S*dbg_timetravel\.c:\d+$/);
    expect(await view.locator('#reason').textContent()).toBe('(breakpoint-hit)');
    expect(await view.locator('#position').textContent()).toMatch(/^position p\d+$/);
    expect(await view.locator('#source span.current').textContent()).toMatch(/^>\d+ .*counter \+= by|^>\d+ static void bump/);
    expect(await view.locator('#changed tr').allTextContents()).toContain('by3');
    expect(await view.locator('#stack li').allTextContents()).toEqual([expect.stringMatching(/^bump at /), expect.stringMatching(/^main at /)]);
    expect(await view.locator('#replay-part').isHidden()).toBe(true);
    await page.screenshot({ path: path.join(ARTEFACTS, 'app-view-debugger.png') });
    await page.close();

    const timeline = await host(html, trace);
    const items = timeline.page.frameLocator('#view').locator('#timeline li');
    await expect.poll(() => items.count(), { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    const texts = await items.allTextContents();
    expect(texts[0]).toMatch(/^p1: main /);
    expect(await timeline.page.frameLocator('#view').locator('#where').textContent()).toBe('(no stop in this answer)');
    expect(texts.some((t) => /^p\d+: bump \S*dbg_timetravel\.c:\d+ \(.*instruction \d+.*bookmark 'third-bump'/.test(t))).toBe(true);
    await timeline.page.screenshot({ path: path.join(ARTEFACTS, 'app-view-timeline.png') });
    await timeline.page.close();
    expect([...errors, ...timeline.errors]).toEqual([]);
  }, 90_000);

  it('a host renders it beside a real gdb answer: the view shows where the program stopped and its output', async () => {
    const html = ((await agent.client.readResource({ uri: VIEW })).contents[0] as { text: string }).text;
    const { id } = await agent.ok('open', { program: 'basic' });
    await agent.ok('call', { id, command: 'break main' });
    const answer = await agent.client.callTool({ name: 'call', arguments: { id, command: 'run' } });
    await agent.ok('close', { id });
    // The host answers ui/initialize and, once the view says it is initialized, sends the tool's result, as an MCP Apps host does.
    const { page, errors } = await host(html, answer);
    const view = page.frameLocator('#view');
    await expect.poll(() => view.locator('#where').textContent(), { timeout: 10_000 }).toMatch(/^main at \S*basic\.c:12$/);
    expect(await view.locator('#reason').textContent()).toBe('(breakpoint-hit)');
    expect(await view.locator('#output').textContent()).toContain('Breakpoint 1, main');
    await page.screenshot({ path: path.join(ARTEFACTS, 'app-view.png') });
    expect(errors).toEqual([]);
  }, 60_000);
});
