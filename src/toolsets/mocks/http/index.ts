/**
 * HTTP(S) recording and replay for the mocks toolset: a passive HTTP/1.x parser, the recorder
 * (tunnel + Keploy Http mocks), the matcher and the replayer, and the glue for connections
 * handed over by the capture proxy.
 */
export {
  HttpParser,
  headerValue,
  DEFAULT_MAX_BODY,
  DEFAULT_MAX_HEAD,
  type Header,
  type HttpMessage,
  type HttpParserOptions,
  type HttpRequestMessage,
  type HttpResponseMessage,
  type ParserState,
} from './parser.js';
export { recordHttp, type RecordableConnection, type RecordHttpOptions, type RecordHttpResult } from './recorder.js';
export { HttpMatcher, VOLATILE_HEADERS, VOLATILE_JSON_FIELDS, VOLATILE_QUERY, type MatcherOptions, type MatchRequest, type MatchResult } from './matcher.js';
export { HttpReplayer, splitSetCookie, type ReplayCounters, type ReplayerOptions, type ReplayEvent, type ServedConnection, type ServeOptions } from './replayer.js';
export { isHttpCandidate, recordIntercepted, replayIntercepted, type HttpCandidate, type RecordInterceptedOptions } from './intercept.js';
