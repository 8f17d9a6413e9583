// A Tangle blueprint definition (tnt-core 0.19's Types.BlueprintDefinition, createBlueprint's one
// argument): its type from the generated ABI, a builder with the protocol's own validation rules,
// and the calldata. Product-agnostic: the blueprint supplies its jobs, sources and metadata.
import { iTangleAbi } from '@agent-sandbox/contracts';
import { formatAbiParameters } from 'abitype';
import {
  type AbiParameter,
  type AbiParameterToPrimitiveType,
  encodeFunctionData,
  type Hex,
  keccak256,
  stringToHex,
  zeroHash,
} from 'viem';
import { SdkError } from './errors.ts';

type CreateBlueprint = Extract<(typeof iTangleAbi)[number], { type: 'function'; name: 'createBlueprint' }>;
const createBlueprintItem = iTangleAbi.find(
  (i): i is CreateBlueprint => i.type === 'function' && i.name === 'createBlueprint',
);
if (!createBlueprintItem) throw new Error('ITangle has no createBlueprint: rebuild the contracts');

/** createBlueprint's argument, as viem encodes it (enums are numbers, uint64/uint256 bigints). */
export type BlueprintDefinition = AbiParameterToPrimitiveType<CreateBlueprint['inputs'][0]>;
export type JobDefinition = BlueprintDefinition['jobs'][number];
export type BlueprintSource = BlueprintDefinition['sources'][number];
export type BlueprintMetadata = BlueprintDefinition['metadata'];

/** Membership / pricing / source / OS / architecture codes (the protocol's enum order). */
export const MEMBERSHIP = { fixed: 0, dynamic: 1 } as const;
export const PRICING = { payOnce: 0, subscription: 1, eventDriven: 2 } as const;
export const SOURCE_KIND = { container: 0, wasm: 1, native: 2 } as const;
export const BINARY_OS = { unknown: 0, linux: 1 } as const;
export const BINARY_ARCH = { amd64: 5, arm64: 7 } as const;

export interface JobDefinitionSpec {
  name: string;
  description: string;
  /** The job's input and result as ABI parameters (the bytes are `abi.encode` of them). */
  params: readonly AbiParameter[];
  result: readonly AbiParameter[];
}

/**
 * One job of a definition. tnt-core 0.19 validates a non-empty paramsSchema/resultSchema as its
 * own TLV payload format, which ABI-encoded inputs never match, so the schemas stay empty (the
 * protocol's "not validated") and the ABI signatures ride the job's metadataUri as a data: URI
 * (`{"params":"(string name,…)","result":"(…)"}`) for explorers and clients.
 */
export function defineJob(job: JobDefinitionSpec): JobDefinition {
  const sig = (p: readonly AbiParameter[]) =>
    p.length === 0 ? '()' : `(${formatAbiParameters(p as readonly [AbiParameter, ...AbiParameter[]])})`;
  const abi = { params: sig(job.params), result: sig(job.result) };
  return {
    name: job.name,
    description: job.description,
    metadataUri: `data:application/json,${encodeURIComponent(JSON.stringify(abi))}`,
    paramsSchema: '0x',
    resultSchema: '0x',
  };
}

export interface ContainerSourceSpec {
  registry: string;
  image: string;
  tag: string;
  /** The image's sha256 digest (64 hex, with or without `sha256:` / `0x`). */
  sha256: string;
  /** The binary's name in the source (default: the image name). */
  name?: string;
  arch?: number;
  os?: number;
}

const emptyWasm = { runtime: 0, fetcher: 0, artifactUri: '', entrypoint: '' };
const emptyNative = { fetcher: 0, artifactUri: '', entrypoint: '' };
const emptyTesting = { cargoPackage: '', cargoBin: '', basePath: '' };

/** A container image source, its digest as the one binary's sha256 (the protocol requires one). */
export function containerSource(s: ContainerSourceSpec): BlueprintSource {
  const hex = s.sha256
    .replace(/^sha256:/, '')
    .replace(/^0x/, '')
    .toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex) || /^0+$/.test(hex)) {
    throw new SdkError(
      'DEFINITION',
      `the image digest must be 64 hex digits, not zero (got ${JSON.stringify(s.sha256)})`,
    );
  }
  return {
    kind: SOURCE_KIND.container,
    container: { registry: s.registry, image: s.image, tag: s.tag },
    wasm: emptyWasm,
    native: emptyNative,
    testing: emptyTesting,
    binaries: [
      {
        arch: s.arch ?? BINARY_ARCH.amd64,
        os: s.os ?? BINARY_OS.linux,
        name: s.name ?? s.image,
        sha256: `0x${hex}`,
      },
    ],
  };
}

export interface BlueprintSpec {
  /** Where the blueprint's metadata JSON lives (IPFS/HTTPS/data: URI). */
  metadataUri: string;
  /** keccak256 of the canonical metadata JSON (default: of `metadataUri`'s bytes). */
  metadataHash?: Hex;
  manager: Hex;
  metadata: Partial<BlueprintMetadata> & { name: string };
  jobs: readonly JobDefinition[];
  sources: readonly BlueprintSource[];
  memberships?: readonly number[];
  /** Blueprint configuration; absent: Fixed membership, PayOnce (the protocol's default). */
  config?: BlueprintDefinition['config'];
  registrationSchema?: Hex;
  requestSchema?: Hex;
}

/** A complete definition, checked as tnt-core 0.19's createBlueprint checks it. */
export function defineBlueprint(spec: BlueprintSpec): BlueprintDefinition {
  const m = spec.metadata;
  const def: BlueprintDefinition = {
    metadataUri: spec.metadataUri,
    metadataHash: spec.metadataHash ?? keccak256(stringToHex(spec.metadataUri)),
    manager: spec.manager,
    masterManagerRevision: 0,
    hasConfig: spec.config !== undefined,
    config: spec.config ?? {
      membership: MEMBERSHIP.fixed,
      pricing: PRICING.payOnce,
      minOperators: 0,
      maxOperators: 0,
      subscriptionRate: 0n,
      subscriptionInterval: 0n,
      eventRate: 0n,
    },
    metadata: {
      name: m.name,
      description: m.description ?? '',
      author: m.author ?? '',
      category: m.category ?? '',
      codeRepository: m.codeRepository ?? '',
      logo: m.logo ?? '',
      website: m.website ?? '',
      license: m.license ?? '',
      profilingData: m.profilingData ?? '',
    },
    jobs: [...spec.jobs],
    registrationSchema: spec.registrationSchema ?? '0x',
    requestSchema: spec.requestSchema ?? '0x',
    sources: [...spec.sources],
    supportedMemberships: [...(spec.memberships ?? [MEMBERSHIP.fixed])],
  };
  const problems = checkBlueprintDefinition(def);
  if (problems.length > 0)
    throw new SdkError('DEFINITION', `invalid blueprint definition: ${problems.join('; ')}`);
  return def;
}

/** What tnt-core 0.19's createBlueprint would refuse, each with the error it reverts with. */
export function checkBlueprintDefinition(def: BlueprintDefinition): string[] {
  const out: string[] = [];
  if (def.metadataUri.length === 0) out.push('metadataUri is empty (BlueprintMetadataRequired)');
  if (def.metadataHash === zeroHash) out.push('metadataHash is zero (BlueprintMetadataHashRequired)');
  if (def.jobs.length === 0) out.push('no jobs (InvalidState)');
  if (def.jobs.length > 256) out.push('more than 256 jobs: job indices are uint8');
  if (def.supportedMemberships.length === 0)
    out.push('no supported membership (BlueprintMembershipRequired)');
  if (
    def.hasConfig &&
    def.config.pricing === PRICING.subscription &&
    (def.config.subscriptionRate === 0n || def.config.subscriptionInterval === 0n)
  ) {
    out.push('a subscription needs a rate and an interval (InvalidState)');
  }
  if (def.sources.length === 0) out.push('no sources (BlueprintSourcesRequired)');
  def.sources.forEach((s, i) => {
    if (s.binaries.length === 0) out.push(`source ${i} has no binary (BlueprintBinaryRequired)`);
    s.binaries.forEach((b, j) => {
      if (b.sha256 === zeroHash)
        out.push(`source ${i} binary ${j} has no sha256 (BlueprintBinaryHashRequired)`);
    });
  });
  return out;
}

/** createBlueprint's calldata for a definition. */
export function createBlueprintCalldata(def: BlueprintDefinition): Hex {
  return encodeFunctionData({ abi: iTangleAbi, functionName: 'createBlueprint', args: [def] });
}
