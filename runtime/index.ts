// @agent-sandbox/runtime: public door of the package.

export type {
  Challenge,
  CollectResult,
  ScopedClaims,
  Session,
  SessionAuthLimits,
  SessionAuthOptions,
  SessionClaims,
  V4Local,
  V4LocalKey,
} from './src/auth/index.ts';
export {
  assertSandboxAccess,
  challengeMessage,
  createV4Local,
  DEFAULT_SESSION_LIMITS,
  normalizeSignature,
  recoverSigner,
  SCOPE_RE,
  SessionAuth,
  sameAddress,
  scopeAllows,
  v4LocalKey,
} from './src/auth/index.ts';
export { deriveKey, parseAuthSecret } from './src/crypto.ts';
export type { RuntimeErrorCode } from './src/errors.ts';
export { isRuntimeError, RuntimeError, RuntimeErrorCodes } from './src/errors.ts';
export type {
  AgentRunRequest,
  AgentRunResult,
  CallOptions,
  CircuitBreakerOptions,
  CircuitPermit,
  CircuitState,
  ExecRequest,
  ExecResult,
  SidecarClientOptions,
  SidecarEndpoint,
  SidecarOperation,
  SidecarTimeouts,
  SseEvent,
  TerminalCreateRequest,
} from './src/sidecar-client/index.ts';
export {
  CircuitBreaker,
  DEFAULT_SIDECAR_TIMEOUTS,
  isSidecarHealthFailure,
  parseSse,
  SidecarClient,
} from './src/sidecar-client/index.ts';
export type { EncryptedStoreOptions, StoreCollection } from './src/store/index.ts';
export { EncryptedStore } from './src/store/index.ts';
