export { download, tokenFromEnv, vendorPortalSlug, type DownloadOptions, type DownloadResult } from './download.js';
export { extractBundle, type ExtractOptions, type ExtractResult } from './extract.js';
export { bundleRoot, BundleStore, isUrlSource, METADATA_FILE, type AddOptions, type AddResult, type BundleEntry, type BundleMetadata } from './store.js';
