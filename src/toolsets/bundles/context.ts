import type { Config } from '../../config.js';
import type { BundleWorkspace } from './workspace.js';

/** What the bundles tools share: the workspace (the store and each client's bundle) and the config. */
export interface BundlesContext {
  workspace: BundleWorkspace;
  config: Config;
}
