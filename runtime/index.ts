// @agent-sandbox/runtime: public door of the package.

export type {
  ApiConfig,
  ApiConfigInput,
  ApiSandboxes,
  ApiSessions,
  ApiSidecarClient,
  ApiSidecars,
  ApiStore,
  ApiTee,
  ChainFeedHealth,
  EngineHealth,
  HealthCheck,
  InstanceHealth,
  OperatorApi,
  OperatorApiDeps,
  OperatorApiServer,
  OperatorMode,
} from './src/api/index.ts';
export {
  ApiConfigSchema,
  createApiSidecars,
  createOperatorApi,
  parseApiConfig,
  parseList,
  serveOperatorApi,
} from './src/api/index.ts';
export { RunLog } from './src/api/runs/run-log.ts';
export { RunService } from './src/api/runs/run-service.ts';
export type {
  Challenge,
  CollectResult,
  ScopedClaims,
  Session,
  SessionAuthLimits,
  SessionAuthOptions,
  SessionClaims,
  SiweBinding,
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
  SIWE_STATEMENT,
  sameAddress,
  scopeAllows,
  siweMessage,
  v4LocalKey,
} from './src/auth/index.ts';
export { deriveKey, parseAuthSecret } from './src/crypto.ts';
export type { ManagedContainer } from './src/docker/driver.ts';
export { DockerDriver } from './src/docker/driver.ts';
export type { ImageRef } from './src/docker/image-ref.ts';
export { allowListed, parseImageRef } from './src/docker/image-ref.ts';
export { loopDisksUnavailable } from './src/docker/loop-disk.ts';
export type { RegistryLogin } from './src/docker/registry-pull.ts';
export { parseDockerAuths } from './src/docker/registry-pull.ts';
export type { RuntimeErrorCode } from './src/errors.ts';
export { invalidField, isRuntimeError, RuntimeError, RuntimeErrorCodes } from './src/errors.ts';
export type { SandboxRuntimeConfig, SandboxRuntimeConfigInput } from './src/sandbox/config.ts';
export {
  parseSandboxRuntimeConfig,
  SandboxRuntimeConfigSchema,
  sandboxRuntimeConfigFromEnv,
  shapeCatalog,
} from './src/sandbox/config.ts';
export { policyUnavailableReason } from './src/sandbox/egress-policy/enforcer.ts';
export { mergeEnv, PROTECTED_ENV_KEYS } from './src/sandbox/env.ts';
export type { SandboxManagerOptions } from './src/sandbox/manager.ts';
export { SandboxManager } from './src/sandbox/manager.ts';
export { SandboxMetrics } from './src/sandbox/metrics.ts';
export type { NetworkPolicy } from './src/sandbox/network-policy.ts';
export {
  DEFAULT_IMPLICIT_DOMAINS,
  DomainSchema,
  domainAllowed,
  effectiveDomains,
  NetworkPolicySchema,
  resolveNetworkPolicy,
} from './src/sandbox/network-policy.ts';
export type { ProvisionPhase, ProvisionProgress } from './src/sandbox/provision-progress.ts';
export { PROVISION_PHASES } from './src/sandbox/provision-progress.ts';
export type { ProvisionHooks } from './src/sandbox/provisioner.ts';
export type { TickResult } from './src/sandbox/reaper.ts';
export type { ReconcileReport } from './src/sandbox/reconcile.ts';
export type {
  NewRecordFields,
  PublicSandboxView,
  SandboxRecord,
  SandboxResources,
  SandboxState,
  SandboxTimers,
  StorageTier,
} from './src/sandbox/record.ts';
export {
  assertTransition,
  canTransition,
  newRecord,
  publicView,
  SANDBOX_STATES,
  SandboxRecordSchema,
} from './src/sandbox/record.ts';
export type { CreateSandboxParams } from './src/sandbox/request.ts';
export { CreateSandboxParamsSchema } from './src/sandbox/request.ts';
export type { SandboxRuntime } from './src/sandbox/runtimes.ts';
export { offeredRuntimes, parseRuntimeList, SANDBOX_RUNTIMES } from './src/sandbox/runtimes.ts';
export type { Shape, ShapeAsk, ShapeCatalog } from './src/sandbox/shapes.ts';
export { fitsCeiling, parseShapeList, resolveShape } from './src/sandbox/shapes.ts';
export type { SshKey } from './src/sandbox/ssh-keys.ts';
export { MAX_SSH_KEYS, parseSshKey } from './src/sandbox/ssh-keys.ts';
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
export type { EncryptedStoreOptions, StoreCollection, StoreWrite } from './src/store/index.ts';
export { EncryptedStore } from './src/store/index.ts';
export * from './src/tee/index.ts';
export type { WorkflowAction } from './src/workflows/actions.ts';
export { parseAction } from './src/workflows/actions.ts';
export type { WorkflowRecord, WorkflowRunRecord, WorkflowRunStatus } from './src/workflows/records.ts';
export type { Trigger } from './src/workflows/schedule.ts';
export { nextSlot, parseTrigger } from './src/workflows/schedule.ts';
export type { SchedulerClock } from './src/workflows/scheduler.ts';
export { realClock, WorkflowScheduler } from './src/workflows/scheduler.ts';
export type { NewWorkflow, WorkflowServiceOptions } from './src/workflows/workflow-service.ts';
export { WorkflowService } from './src/workflows/workflow-service.ts';
