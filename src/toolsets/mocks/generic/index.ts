/** Generic (unparsed protocol) mocks: record a connection's byte exchanges, replay them by bytes. */
export { buildGenericMock, isAscii, messageBytes, payloadBytes, payloadsOf, previewBytes, type GenericExchange } from './format.js';
export { GenericIndex, TargetView, type GenericEntry, type GenericMatch } from './matcher.js';
export { DEFAULT_MAX_GENERIC_MOCK_BYTES, recordGeneric, type GenericConnection, type RecordGenericOptions, type RecordGenericResult } from './recorder.js';
export { replayGeneric, type GenericReplayMatch, type GenericReplayMiss, type ReplayGenericOptions, type ReplayGenericResult } from './replayer.js';
