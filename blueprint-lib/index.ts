// @agent-sandbox/blueprint-lib: this blueprint's jobs and handlers — where the sdk and the runtime meet.

export { type BlueprintRouter, blueprintRouter } from './src/blueprint-router.ts';
export {
  BlueprintChain,
  type BlueprintChainOptions,
  type CallRef,
  type ChainReader,
  type ChainWorkflow,
  resolveBlueprintContract,
} from './src/chain.ts';
export { chainFeedHealth } from './src/chain-feed.ts';
export { BlueprintWriter, type ChainWriter, type WriteOutcome } from './src/chain-writes.ts';
export type {
  BlueprintDeps,
  OperatorMode,
  RuntimeCreateParams,
  SandboxFacts,
  SandboxRuntime,
  WorkflowJobs,
} from './src/deps.ts';
export {
  BlueprintError,
  type BlueprintErrorCode,
  BlueprintErrorCodes,
  isBlueprintError,
} from './src/errors.ts';
export { afterJob, type FinishedJob, GoneReporter, type GoneSource } from './src/follow-ups.ts';
export { type HandledCall, HandledCalls } from './src/handled-calls.ts';
export { createResultJson, describeFailure } from './src/handlers/sandbox.ts';
export type { StoredWorkflow } from './src/handlers/workflow.ts';
export {
  type InstanceOptions,
  type InstanceRecords,
  type InstanceTee,
  instanceAttempt,
  instanceCallId,
  instanceSandboxOf,
  type ProvisionedInstance,
  provisionInstance,
  readServiceConfig,
  readServiceOwner,
  reportProvisioned,
} from './src/instance.ts';
export {
  type InstanceRuntime,
  type InstanceStatus,
  InstanceSupervisor,
  type SupervisorOptions,
} from './src/instance-supervisor.ts';
export * from './src/jobs.ts';
export { apiSandboxes, instanceRuntime, jobSandboxes, workflowSandbox } from './src/runtime-adapters.ts';
export { openTeeInstance, type TeeInstance, type TeeInstanceOptions } from './src/tee.ts';
export {
  type CreatePolicy,
  LIMITS,
  parseStringMap,
  type SandboxCreateRequest,
  type ValidatedCreate,
  validateCreateRequest,
  validateSandboxId,
} from './src/validate.ts';
