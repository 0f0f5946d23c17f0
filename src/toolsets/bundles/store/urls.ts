// What the bundle store needs of URLs at once (naming a bundle, showing its source), apart from
// downloading and extracting: those load with the first URL or archive, not at start (issue 19).

/** Replicated's vendor hosts: vendor.replicated.com (Vendor Portal links) and api.replicated.com. */
export const DEFAULT_BUNDLE_URL_HOSTS = ['replicated.com'];

/** `https://vendor.replicated.com/troubleshoot/analyze/<slug>`: a bundle on the Replicated Vendor Portal. */
export const VENDOR_PORTAL_URL = /^https:\/\/vendor\.replicated\.com\/troubleshoot\/analyze\/([^/?#]+)\/?(?:[?#].*)?$/;

export function vendorPortalSlug(url: string): string | null {
  const m = VENDOR_PORTAL_URL.exec(url);
  return m ? decodeURIComponent(m[1]!) : null;
}

/** The URL without credentials or query string (a signed URL's query is a credential). */
export function redact(u: URL): string {
  return `${u.protocol}//${u.host}${u.pathname}${u.search ? '?…' : ''}`;
}
