import { defineToolset } from '../../mcp/define.js';
import type { BundlesContext } from './context.js';
import { typedErrorFormat } from '../../mcp/result-formats.js';
import { DEFAULT_BUNDLE_URL_HOSTS } from './store/urls.js';
import { BundleStore } from './store/store.js';
import { grepFilesTool } from './tools/grep-files.js';
import { bundleSummaryTool } from './tools/bundle-summary.js';
import { listFilesTool } from './tools/list-files.js';
import { readFileTool } from './tools/read-file.js';
import { initializeBundleTool } from './tools/initialize-bundle.js';
import { kubectlTool } from './tools/kubectl.js';
import { listBundlesTool } from './tools/list-available-bundles.js';
import { KeyShares } from './apiserver/budget.js';
import { BundleWorkspace } from './workspace.js';

export const bundlesToolset = defineToolset<BundlesContext>({
  name: 'bundles',
  capabilities: ['bundles:download'],
  summary: 'Kubernetes support bundles: the real kubectl against the bundle, and safe file listing, reading and searching',
  instructions:
    'bundles: initialize_bundle with a support bundle (path or URL), then kubectl (a read-only kubectl against the bundle: get, describe, logs), ' + 'list_files, read_file and grep_files inside it.',
  context: (env) => {
    const { dir, urlHosts, budgetPerKeyPercent } = env.config.bundles;
    const store = new BundleStore(dir, { root: env.config.root, urls: { hosts: urlHosts ?? DEFAULT_BUNDLE_URL_HOSTS } });
    return { workspace: new BundleWorkspace(store, new KeyShares(budgetPerKeyPercent)), config: env.config };
  },
  tools: [initializeBundleTool, listBundlesTool, kubectlTool, listFilesTool, readFileTool, grepFilesTool, bundleSummaryTool],
  format: typedErrorFormat,
  releaseClient: (ctx, owner) => ctx.workspace.release(owner),
  dispose: (ctx) => ctx.workspace.dispose(),
});
