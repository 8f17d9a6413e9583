// What the job handlers need from the runtime, the chain and the store: narrow interfaces that the
// real runtime modules (SandboxManager, EncryptedStore) and BlueprintChain implement.
import type { OperatorMode, StoreCollection } from '@agent-sandbox/runtime';
import type { Logger } from 'pino';
import type { Address } from 'viem';
import type { ChainReader } from './chain.ts';
import type { CreatePolicy } from './validate.ts';

/** Defined once, by the runtime (its API reports it); re-exported for the handlers. */
export type { OperatorMode };

/** The fields of a runtime sandbox record the handlers read (never the token). */
export interface SandboxFacts {
  id: string;
  owner: string;
  serviceId: string;
  callId: string;
  name: string;
  state: string;
  image: string;
  resources: { cpuCores: number; memoryMb: number; diskGb: number; diskEnforced?: boolean };
  timers: { idleTimeoutSeconds: number; maxLifetimeSeconds: number };
  createdAt: number;
}

export interface RuntimeCreateParams {
  owner: string;
  serviceId: string;
  callId: string;
  name: string;
  image: string;
  cpuCores: number;
  memoryMb: number;
  diskGb: number;
  idleTimeoutSeconds: number;
  maxLifetimeSeconds: number;
  env: Record<string, string>;
  metadata: Record<string, unknown>;
  /** Container ports to publish on 127.0.0.1 for the operator API's port proxy. */
  exposedPorts?: number[];
}

/** The subset of the runtime's SandboxManager the handlers call. */
export interface SandboxRuntime {
  /** Idempotent by call id: a repeat returns the same record or throws the same failure. */
  create(params: RuntimeCreateParams): Promise<SandboxFacts>;
  /** Throws (RuntimeError NOT_FOUND) for an unknown or deleted sandbox. */
  get(id: string): SandboxFacts;
  delete(id: string): Promise<unknown>;
  getProvision(
    callId: string,
  ): Promise<{ phase: string; failedPhase?: string | null; error?: string | null }>;
  /** Loopback sidecar URL and token: used only to exec a workflow, never logged or returned. */
  sidecarEndpoint(id: string): { url: string; token: string };
}

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
