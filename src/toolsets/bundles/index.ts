import type { McpServer } from '../../mcp/toolset.js';
import type { Config } from '../../config.js';
import { typedErrorFormat } from '../../mcp/result-formats.js';
import { registerTool, type ToolSpec } from '../../mcp/tools.js';
import type { ClientContext, Toolset, ToolsetEnv, ToolsetFactory } from '../../mcp/toolset.js';
import { DEFAULT_BUNDLE_URL_HOSTS } from './store/urls.js';
import { BundleStore } from './store/store.js';
import { grepFilesTool } from './tools/grep-files.js';
import { listFilesTool } from './tools/list-files.js';
import { readFileTool } from './tools/read-file.js';
import { initializeBundleTool } from './tools/initialize-bundle.js';
import { kubectlTool } from './tools/kubectl.js';
import { listBundlesTool } from './tools/list-bundles.js';
import { BundleWorkspace } from './workspace.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const TOOLS: Array<(workspace: BundleWorkspace, config: Config) => ToolSpec<any, any>> = [initializeBundleTool, listBundlesTool, kubectlTool, listFilesTool, readFileTool, grepFilesTool];

class BundlesToolset implements Toolset {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tools of different argument and result types
  private specs: ToolSpec<any, any>[] | undefined;
  readonly name = 'bundles';
  private readonly workspace: BundleWorkspace;

  constructor(private readonly env: ToolsetEnv) {
    const { dir, urlHosts } = env.config.bundles;
    this.workspace = new BundleWorkspace(new BundleStore(dir, { root: env.config.root, urls: { hosts: urlHosts ?? DEFAULT_BUNDLE_URL_HOSTS } }));
  }

  register(server: McpServer, client: ClientContext): void {
    // Specs (and their zod schemas) are built once: a stateless 2026-07-28 request registers them anew.
    this.specs ??= TOOLS.map((tool) => tool(this.workspace, this.env.config));
    for (const spec of this.specs) registerTool(server, client, typedErrorFormat, spec);
  }

  releaseClient(owner: string): Promise<void> {
    return this.workspace.release(owner);
  }

  dispose(): Promise<void> {
    return this.workspace.dispose();
  }
}

export const bundlesToolset: ToolsetFactory = {
  name: 'bundles',
  summary: 'Kubernetes support bundles: the real kubectl against the bundle, and safe file listing, reading and searching',
  create: (env) => new BundlesToolset(env),
};
