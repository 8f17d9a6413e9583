// This blueprint's BlueprintDefinition for Tangle's createBlueprint (tnt-core 0.19): metadata, the
// five jobs, the sandbox image as the source, fixed membership and pay-once pricing.
import { iAgentSandboxJobsAbi } from '@agent-sandbox/contracts';
import type { BlueprintDefinition } from '@agent-sandbox/sdk';
import { type Address, type Hex, keccak256, toHex } from 'viem';
import { formatAbiItem } from 'viem/utils';

export type BlueprintMode = 'cloud' | 'instance' | 'teeInstance';
export const BLUEPRINT_MODES: readonly BlueprintMode[] = ['cloud', 'instance', 'teeInstance'];

/** The image operators run sandboxes from, as the definition's container source names it. */
export interface SandboxImageSource {
  /** e.g. "ghcr.io" (empty for a local image). */
  registry: string;
  /** e.g. "tangle-network/agent-sandbox". */
  image: string;
  tag: string;
  /** The image's content digest (`docker image inspect --format '{{.Id}}'`), 32 bytes hex. */
  sha256: Hex;
}

const JOB_TEXT: ReadonlyArray<{ fn: string; name: string; description: string }> = [
  {
    fn: 'sandboxCreate',
    name: 'sandbox_create',
    description: 'Create a sandbox (cloud mode); result: sandbox id and its endpoints',
  },
  { fn: 'sandboxDelete', name: 'sandbox_delete', description: 'Delete a sandbox its caller owns' },
  {
    fn: 'workflowCreate',
    name: 'workflow_create',
    description: 'Create a workflow (a command or an agent run, on demand or on a cron schedule)',
  },
  { fn: 'workflowTrigger', name: 'workflow_trigger', description: 'Run a workflow now' },
  { fn: 'workflowCancel', name: 'workflow_cancel', description: 'Cancel a workflow' },
];

const MODE_TEXT: Record<BlueprintMode, string> = {
  cloud: 'cloud: many sandboxes per service, created and deleted by jobs 0/1',
  instance:
    'instance: one sandbox per operator per service, provisioned from the service config (an ABI-encoded SandboxCreateRequest)',
  teeInstance: 'TEE instance: instance mode on a TEE backend, attestation reported on chain',
};

/**
 * Each job's ABI signature, as a data: URI (its metadataUri). The schema fields stay empty on
 * purpose: tnt-core 0.19 validates a non-empty paramsSchema/resultSchema as its own TLV encoding
 * (SchemaLib), and this blueprint's job bytes are ABI-encoded, so any TLV schema would refuse
 * every call. The ABI here is what clients encode with.
 */
function jobMetadataUri(fn: string): string {
  const item = iAgentSandboxJobsAbi.find((i) => i.type === 'function' && i.name === fn);
  if (!item) throw new Error(`IAgentSandboxJobs has no ${fn}: rebuild the contracts`);
  const doc = { encoding: 'abi', function: formatAbiItem(item), inputs: item.inputs, outputs: item.outputs };
  return `data:application/json,${encodeURIComponent(JSON.stringify(doc))}`;
}

export interface DefinitionOptions {
  mode: BlueprintMode;
  manager: Address;
  image: SandboxImageSource;
  /** Where the blueprint's JSON description lives; default: a data: URI of the metadata. */
  metadataUri?: string | undefined;
  codeRepository?: string | undefined;
  website?: string | undefined;
}

export function agentSandboxDefinition(o: DefinitionOptions): BlueprintDefinition {
  const metadata = {
    name: `agent-sandbox-${o.mode === 'teeInstance' ? 'tee-instance' : o.mode}`,
    description: `AI-agent sandboxes (hardened containers with a sidecar) — ${MODE_TEXT[o.mode]}`,
    author: 'agent-sandbox-blueprint',
    category: 'compute',
    codeRepository: o.codeRepository ?? '',
    logo: '',
    website: o.website ?? '',
    license: 'MIT',
    // Read on chain by the operator manager (confidentiality profile).
    profilingData: o.mode === 'teeInstance' ? '{"confidentiality":"tee"}' : '',
  };
  const metadataUri =
    o.metadataUri ??
    `data:application/json,${encodeURIComponent(JSON.stringify({ ...metadata, mode: o.mode }))}`;
  return {
    metadataUri,
    metadataHash: keccak256(toHex(metadataUri)),
    manager: o.manager,
    masterManagerRevision: 0, // the latest master manager
    hasConfig: true,
    config: {
      membership: 0, // fixed: the operators named in the request
      pricing: 0, // pay once, at request time
      minOperators: 1,
      maxOperators: 0,
      subscriptionRate: 0n,
      subscriptionInterval: 0n,
      eventRate: 0n,
    },
    metadata,
    jobs: JOB_TEXT.map((j) => ({
      name: j.name,
      description: j.description,
      metadataUri: jobMetadataUri(j.fn),
      paramsSchema: '0x',
      resultSchema: '0x',
    })),
    // abi.encode(uint32 capacity) and an ABI-encoded SandboxCreateRequest: not TLV, so no schema.
    registrationSchema: '0x',
    requestSchema: '0x',
    sources: [
      {
        kind: 0, // container
        container: { registry: o.image.registry, image: o.image.image, tag: o.image.tag },
        wasm: { runtime: 0, fetcher: 0, artifactUri: '', entrypoint: '' },
        native: { fetcher: 0, artifactUri: '', entrypoint: '' },
        testing: { cargoPackage: '', cargoBin: '', basePath: '' },
        binaries: [
          { arch: 5 /* amd64 */, os: 1 /* linux */, name: imageRef(o.image), sha256: o.image.sha256 },
        ],
      },
    ],
    supportedMemberships: [0],
  };
}

export function imageRef(i: Pick<SandboxImageSource, 'registry' | 'image' | 'tag'>): string {
  return `${i.registry ? `${i.registry}/` : ''}${i.image}:${i.tag}`;
}

/** Parses "registry/name:tag" (registry optional: a first part with a dot or colon) into the source fields. */
export function parseImageRef(ref: string, sha256: Hex): SandboxImageSource {
  const m = /^(?:([^/]*[.:][^/]*)\/)?([^:@]+)(?::([\w][\w.-]{0,127}))?$/.exec(ref.trim());
  if (!m) throw new Error(`"${ref}" is not an image reference (registry/name:tag)`);
  return { registry: m[1] ?? '', image: m[2] ?? '', tag: m[3] ?? 'latest', sha256 };
}
