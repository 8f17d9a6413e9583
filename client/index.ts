// @agent-sandbox/client: the owner's SDK (operator API client, chain jobs, create-until-running).
export type { ExecResult, Provision, RunAccepted, RunInfo, Sandbox, Session } from './src/api-types.ts';
export { PROVISION_PHASES } from './src/api-types.ts';
export {
  type JobResult,
  SandboxChain,
  type SandboxChainOptions,
  type SubmittedJob,
  type WaitOptions,
} from './src/chain.ts';
export {
  type CreatedSandbox,
  type CreateProgress,
  type CreateSandboxOptions,
  createSandbox,
} from './src/create-sandbox.ts';
export { type Devnet, loadDevnet } from './src/devnet.ts';
export { ClientError, type ClientErrorCode, ExitCode, isClientError } from './src/errors.ts';
export {
  buildCreateRequest,
  type CreateOutput,
  decodeCreateOutput,
  decodeDeleteOutput,
  encodeCreateInput,
  encodeDeleteInput,
  JOB_SANDBOX_CREATE,
  JOB_SANDBOX_DELETE,
  type SandboxCreateRequest,
  type SandboxCreateRequestInput,
  sandboxCreateRequestLayout,
} from './src/job-io.ts';
export { accountFromKeystore, accountFromPrivateKey } from './src/keys.ts';
export {
  type ExecOptions,
  OperatorClient,
  type OperatorClientOptions,
  type PromptOptions,
  type PromptRun,
  type RunEvent,
  type TerminalOptions,
} from './src/operator-client.ts';
export type { SigningAccount } from './src/operator-http.ts';
export { type CachedSession, SessionCache } from './src/session-cache.ts';
export { readSse, type SseEvent, SseParser } from './src/sse.ts';
