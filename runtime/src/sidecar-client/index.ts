// Public surface of the sidecar client and its per-sandbox circuit breaker.

export type { CircuitBreakerOptions, CircuitPermit, CircuitState } from './circuit-breaker.ts';
export { CircuitBreaker } from './circuit-breaker.ts';
export type {
  CallOptions,
  SidecarClientOptions,
  SidecarEndpoint,
  SidecarOperation,
  SidecarTimeouts,
} from './client.ts';
export { DEFAULT_SIDECAR_TIMEOUTS, SidecarClient } from './client.ts';
export { isSidecarHealthFailure } from './http.ts';
export type { SseEvent } from './sse.ts';
export { parseSse } from './sse.ts';
export type {
  AgentRunRequest,
  AgentRunResult,
  ExecRequest,
  ExecResult,
  TerminalCreateRequest,
} from './wire-types.ts';
