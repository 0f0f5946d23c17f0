import { resolveContained } from '../../core/paths.js';

/** The mocks directory (`path`, default ./keploy), resolved inside the workspace root. */
export function mocksDir(root: string, userPath: string | undefined): string {
  return resolveContained(root, userPath ?? './keploy', { mustExist: false, what: 'path' });
}
