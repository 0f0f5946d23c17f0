/** TLS interception: debugkit's CA (leaves, trust bundle, environment) and TLS termination. */
export { BUNDLE_FILE, CA_CERT_FILE, CA_FILE, DebugkitCa, SYSTEM_BUNDLE, tlsEnv, type CaPaths, type Leaf, type LoadCaOptions } from './ca.js';
export { acceptTls, ALPN, connectUpstream, terminateTls, upstreamSecureContext, type InterceptedTls, type TerminatedTls, type TerminateOptions, type UpstreamTlsOptions } from './terminate.js';
