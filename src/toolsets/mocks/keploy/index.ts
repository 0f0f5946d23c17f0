/**
 * The Keploy mock-set format: types, parse/serialize of `mocks.yaml`, the on-disk store of
 * mock sets, set naming, and helpers to build Http mocks and read Postgres ones.
 */
export * from './types.js';
export { parseMockSet } from './parse.js';
export { numberMocks, serializeMockSet } from './serialize.js';
export { createdOf, MAX_MOCKSET_BYTES, MockStore, MOCKS_FILE, timeMs, type StoreIo } from './store.js';
export { appName, MAX_SET_NAME, nameFor, SET_NAME, shellWords, slug, validateSetName } from './naming.js';
export { bodyBytes, buildHttpMock, canonicalHeaderKey, httpBody, keployHeaders, keployTime, urlParams, type BuildHttpMockOptions, type HeaderInput, type HttpExchange } from './http.js';
export { decodeRowValue, encodeRowValue, packetBytes, queriesOf, ROW_B64_PREFIX } from './postgres.js';
