export { buildGrpcMock, GrpcCallMatch, GrpcIndex, isGrpc, readGrpcMock, splitMessages, frameMessages, type GrpcCall, type GrpcMessage } from './grpc.js';
export { recordH2, type RecordH2Options } from './recorder.js';
export { replayH2, type ReplayH2Options } from './replayer.js';
export type { H2Connection, H2Dial } from './wire.js';
export { buildHttp2Mock, http2AsHttp } from './keploy.js';
