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
  'id' | 'owner' | 'serviceId' | 'callId' | 'name' | 'state' | 'image' | 'resources' | 'timers' | 'createdAt'
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
};

export interface ExecOutcome {
  exitCode: number;
  stdout: string;
  stderr: string;
}

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
  /** Runs a workflow's command in a sandbox (the runtime's sidecar client); absent: acknowledge only. */
  exec?: (
    sandboxId: string,
    command: { command: string; cwd?: string; timeoutMs?: number },
  ) => Promise<ExecOutcome>;
  logger?: Logger;
}
