import type { DebugProtocol as P } from '@vscode/debugprotocol';

export interface DapConnectionOptions {
  /** Names the adapter in messages, e.g. "debugpy". */
  name?: string;
  /** Bound for requests, event waits and reverse-request handlers that do not set their own. */
  timeoutMs?: number;
  /** Largest message body accepted from the adapter (default 64 MiB). */
  maxBodyBytes?: number;
  /** Where errors thrown by event listeners go (default: a process warning); they never reach the stream. */
  onListenerError?: (err: unknown, event: P.Event) => void;
}

export interface WaitOptions {
  /** Default: the connection's `timeoutMs`. Must be a finite, positive bound. */
  timeoutMs?: number;
  /** Aborting rejects the wait with CancelledError and forgets it. */
  signal?: AbortSignal;
}

export interface WaitForEventOptions<E> extends WaitOptions {
  /** Only an event for which this returns true ends the wait. */
  predicate?: (event: E) => boolean;
}

/**
 * Static types for the DAP traffic debugkit uses most. `args` is what the client sends, `body`
 * what the adapter's successful response carries (`void` for acknowledgement-only responses, whose
 * body adapters usually omit). Commands not listed here still work through the untyped overloads.
 */
interface Pair<A, B> {
  args: A;
  body: B;
}

/**
 * Launch and attach arguments are adapter-specific (debugpy's `program`, lldb-dap's `pid`...);
 * the spec types only name the common fields, so anything else is allowed alongside them.
 */
export type LaunchArguments = P.LaunchRequestArguments & Record<string, unknown>;
export type AttachArguments = P.AttachRequestArguments & Record<string, unknown>;

export interface DapRequestMap {
  initialize: Pair<P.InitializeRequestArguments, P.Capabilities | undefined>;
  launch: Pair<LaunchArguments, void>;
  attach: Pair<AttachArguments, void>;
  setBreakpoints: Pair<P.SetBreakpointsArguments, P.SetBreakpointsResponse['body']>;
  setFunctionBreakpoints: Pair<P.SetFunctionBreakpointsArguments, P.SetFunctionBreakpointsResponse['body']>;
  setExceptionBreakpoints: Pair<P.SetExceptionBreakpointsArguments, P.SetExceptionBreakpointsResponse['body']>;
  configurationDone: Pair<P.ConfigurationDoneArguments | undefined, void>;
  threads: Pair<undefined, P.ThreadsResponse['body']>;
  stackTrace: Pair<P.StackTraceArguments, P.StackTraceResponse['body']>;
  scopes: Pair<P.ScopesArguments, P.ScopesResponse['body']>;
  variables: Pair<P.VariablesArguments, P.VariablesResponse['body']>;
  evaluate: Pair<P.EvaluateArguments, P.EvaluateResponse['body']>;
  continue: Pair<P.ContinueArguments, P.ContinueResponse['body'] | undefined>;
  next: Pair<P.NextArguments, void>;
  stepIn: Pair<P.StepInArguments, void>;
  stepOut: Pair<P.StepOutArguments, void>;
  pause: Pair<P.PauseArguments, void>;
  disconnect: Pair<P.DisconnectArguments | undefined, void>;
  terminate: Pair<P.TerminateArguments | undefined, void>;
  source: Pair<P.SourceArguments, P.SourceResponse['body']>;
  exceptionInfo: Pair<P.ExceptionInfoArguments, P.ExceptionInfoResponse['body']>;
  setVariable: Pair<P.SetVariableArguments, P.SetVariableResponse['body']>;
}

export type DapCommand = keyof DapRequestMap;
export type DapArgs<C extends DapCommand> = DapRequestMap[C]['args'];
export type DapBody<C extends DapCommand> = DapRequestMap[C]['body'];

/** Requests an adapter sends to the client ("reverse requests"), and what the client answers. */
export interface DapReverseRequestMap {
  runInTerminal: Pair<P.RunInTerminalRequestArguments, P.RunInTerminalResponse['body']>;
  startDebugging: Pair<P.StartDebuggingRequestArguments, void>;
}

export interface DapEventMap {
  initialized: P.InitializedEvent;
  stopped: P.StoppedEvent;
  continued: P.ContinuedEvent;
  exited: P.ExitedEvent;
  terminated: P.TerminatedEvent;
  thread: P.ThreadEvent;
  output: P.OutputEvent;
  breakpoint: P.BreakpointEvent;
  module: P.ModuleEvent;
  loadedSource: P.LoadedSourceEvent;
  process: P.ProcessEvent;
  capabilities: P.CapabilitiesEvent;
  progressStart: P.ProgressStartEvent;
  progressUpdate: P.ProgressUpdateEvent;
  progressEnd: P.ProgressEndEvent;
  invalidated: P.InvalidatedEvent;
  memory: P.MemoryEvent;
}

export type DapEventName = keyof DapEventMap;

/** A string that is not one of the typed names: a typed command called with wrong arguments must not fall through to the untyped overload. */
export type Untyped<S extends string, Known extends string> = S extends Known ? never : S;
