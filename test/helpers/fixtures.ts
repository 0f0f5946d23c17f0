import path from 'node:path';

/** The test data kept in the repository (test/fixtures: its README says where each came from, LICENSE-Apache-2.0.txt its licence). */
export const FIXTURES_DIR = path.resolve(import.meta.dirname, '../fixtures');
/** Real Kubernetes support bundles. */
export const SUPPORT_BUNDLES = path.join(FIXTURES_DIR, 'support-bundles');
/** Keploy mock sets. */
export const KEPLOY_FIXTURES = path.join(FIXTURES_DIR, 'keploy');
