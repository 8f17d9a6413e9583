// This blueprint's definition for createBlueprint (tnt-core 0.19): jobs 0–4 with their ABI
// parameter and result types, the sandbox image as its source, and the metadata. One builder for
// the devnet and for a real network; the manager is one of the three deployments (cloud,
// instance, TEE instance).
import {
  jsonOutputParams,
  sandboxCreateOutputParams,
  sandboxCreateRequestParams,
  sandboxDeleteInputParams,
  workflowCreateRequestParams,
  workflowIdInputParams,
} from '@agent-sandbox/contracts';
import {
  type BlueprintDefinition,
  type ContainerSourceSpec,
  containerSource,
  defineBlueprint,
  defineJob,
} from '@agent-sandbox/sdk';
import type { Hex } from 'viem';

export type BlueprintMode = 'cloud' | 'instance' | 'tee-instance';

const MODE_TEXT: Record<BlueprintMode, string> = {
  cloud: 'cloud mode: one service, many sandboxes (create/delete with jobs 0 and 1)',
  instance: 'instance mode: one service per user, one sandbox per operator (the request config is its spec)',
  'tee-instance': 'TEE instance mode: as instance mode, in a TEE, with an attestation per operator',
};

const tuple = (components: readonly unknown[]) => [{ type: 'tuple', name: 'request', components }] as never;

/** The five jobs, in index order (the index keys submissions, so the order is load-bearing). */
export const AGENT_SANDBOX_JOBS = [
  defineJob({
    name: 'sandbox_create',
    description: 'Create a sandbox (cloud mode); the result is (sandboxId, json).',
    params: tuple(sandboxCreateRequestParams),
    result: sandboxCreateOutputParams,
  }),
  defineJob({
    name: 'sandbox_delete',
    description: "Delete one of the caller's sandboxes (cloud mode).",
    params: sandboxDeleteInputParams,
    result: jsonOutputParams,
  }),
  defineJob({
    name: 'workflow_create',
    description:
      'Store a workflow that runs in a sandbox (cloud: the target sandbox; instance: the service).',
    params: tuple(workflowCreateRequestParams),
    result: jsonOutputParams,
  }),
  defineJob({
    name: 'workflow_trigger',
    description: 'Run a stored workflow now.',
    params: workflowIdInputParams,
    result: jsonOutputParams,
  }),
  defineJob({
    name: 'workflow_cancel',
    description: 'Cancel a stored workflow.',
    params: workflowIdInputParams,
    result: jsonOutputParams,
  }),
] as const;

export interface AgentSandboxDefinitionOptions {
  /** The service manager (an AgentSandboxBlueprint deployed for `mode`). */
  manager: Hex;
  mode: BlueprintMode;
  /** The sandbox image operators run, by digest. */
  image: ContainerSourceSpec;
  /** The metadata JSON's location (default: a data: URI holding the metadata itself). */
  metadataUri?: string;
  metadataHash?: Hex;
  codeRepository?: string;
  website?: string;
}

/** The complete definition createBlueprint takes for one of the three managers. */
export function agentSandboxDefinition(o: AgentSandboxDefinitionOptions): BlueprintDefinition {
  const metadata = {
    name: `agent-sandbox (${o.mode})`,
    description: `Hardened Docker sandboxes for AI agents; ${MODE_TEXT[o.mode]}.`,
    author: 'agent-sandbox-blueprint',
    category: 'compute',
    codeRepository: o.codeRepository ?? '',
    website: o.website ?? '',
    license: 'MIT',
  };
  return defineBlueprint({
    metadataUri: o.metadataUri ?? `data:application/json,${encodeURIComponent(JSON.stringify(metadata))}`,
    ...(o.metadataHash ? { metadataHash: o.metadataHash } : {}),
    manager: o.manager,
    metadata,
    jobs: AGENT_SANDBOX_JOBS,
    sources: [containerSource(o.image)],
  });
}
