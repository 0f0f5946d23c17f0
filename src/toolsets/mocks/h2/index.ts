export { buildGrpcMock, GrpcCallMatch, GrpcIndex, isGrpc, readGrpcMock, splitMessages, frameMessages, type GrpcCall, type GrpcMessage } from './grpc.js';
export { recordH2, replayH2, type H2Connection, type H2Dial, type RecordH2Options, type ReplayH2Options } from './session.js';
export { buildHttp2Mock, http2AsHttp } from './http2.js';
