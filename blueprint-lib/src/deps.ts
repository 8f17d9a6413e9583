// What the job handlers need from the runtime, the chain and the store: narrow views derived from
// the runtime's own exported types, which the real modules (SandboxManager, EncryptedStore) and
// BlueprintChain implement.
import type {
  CreateSandboxParams,
  OperatorMode,
  ProvisionProgress,
  SandboxManager,
  SandboxRecord,
  StoreCollection,
  WorkflowService,
} from '@agent-sandbox/runtime';
import type { Logger } from 'pino';
import type { Address } from 'viem';
import type { ChainReader } from './chain.ts';
import type { CreatePolicy } from './validate.ts';

/** Defined once, by the runtime (its API reports it); re-exported for the handlers. */
export type { OperatorMode };

/** The fields of a runtime sandbox record the handlers read (never the token). */
export type SandboxFacts = Pick<
  SandboxRecord,
  | 'id'
  | 'owner'
  | 'serviceId'
  | 'callId'
  | 'name'
  | 'state'
  | 'image'
  | 'resources'
  | 'timers'
  | 'createdAt'
  | 'sshKeys'
>;

/** The runtime's create request, as the create job fills it (one definition: the runtime's). */
export type RuntimeCreateParams = CreateSandboxParams;

/**
 * The subset of the runtime's SandboxManager the handlers call, typed from it (SandboxManager
 * itself satisfies it). `create` is idempotent by call id (a repeat returns the same record or
 * throws the same failure) and reports each provisioning phase through `hooks.onPhase`; `get`
 * throws RuntimeError NOT_FOUND for an unknown or deleted sandbox; `sidecarEndpoint` (loopback URL
 * and token) is used only to exec a workflow, never logged or returned.
 */
export type SandboxRuntime = Pick<SandboxManager, 'create' | 'get' | 'sidecarEndpoint'> & {
  delete(id: string): Promise<unknown>;
  /** Progress of the create job `callId` of service `serviceId`. */
  getProvision(callId: string, serviceId: string): Promise<ProvisionProgress>;
  /** Deletes what the create `callId` built and records it failed with `reason` (none built: undefined). */
  withdrawProvision: SandboxManager['withdrawProvision'];
  /** A reorg removed the create `callId` (its sandbox deleted): the id may be provisioned afresh. */
  forgetProvision: SandboxManager['forgetProvision'];
};

/** The runtime's workflow store and runner (WorkflowService, built by the operator API) as the job handlers use it. */
export type WorkflowJobs = Pick<WorkflowService, 'validate' | 'create' | 'get' | 'trigger' | 'cancel'>;

export interface BlueprintDeps {
  /** This operator's address (the key that posts results). */
  operator: Address;
  mode: OperatorMode;
  chain: ChainReader;
  sandboxes: SandboxRuntime;
  store: { collection<T>(name: string): StoreCollection<T> };
  policy: CreatePolicy;
  /** The operator API URL clients reach (OPERATOR_PUBLIC_URL). */
  operatorApiUrl: string;
  /** Workflows (store, runs, schedule); absent: workflow jobs are refused with a clear error. */
  workflows?: WorkflowJobs;
  logger?: Logger;
}
