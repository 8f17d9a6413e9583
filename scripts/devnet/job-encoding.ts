// Encodes the blueprint's job inputs and outputs with the parameter types forge put in its ABI.
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import { type AbiParameter, encodeAbiParameters, type Hex } from 'viem';

/** The fields of SandboxCreateRequest, in their on-chain order (contract.md). */
export interface SandboxCreateRequest {
  name: string;
  image: string;
  stack: string;
  agent_identifier: string;
  env_json: string;
  metadata_json: string;
  ssh_enabled: boolean;
  ssh_public_key: string;
  web_terminal_enabled: boolean;
  max_lifetime_seconds: bigint;
  idle_timeout_seconds: bigint;
  cpu_cores: bigint;
  memory_mb: bigint;
  disk_gb: bigint;
  tee_required: boolean;
  /** 0 none, 1 TDX, 2 Nitro, 3 SEV. */
  tee_type: number;
  attestation_nonce: string;
  capabilities_json: string;
}

/**
 * The struct's fields and types as contract.md lists them, used only when the compiled ABI does not
 * expose the struct (the contract takes it as `bytes`, so forge emits no components for it).
 */
const DOCUMENTED_FIELDS: ReadonlyArray<{ name: keyof SandboxCreateRequest; type: string }> = [
  { name: 'name', type: 'string' },
  { name: 'image', type: 'string' },
  { name: 'stack', type: 'string' },
  { name: 'agent_identifier', type: 'string' },
  { name: 'env_json', type: 'string' },
  { name: 'metadata_json', type: 'string' },
  { name: 'ssh_enabled', type: 'bool' },
  { name: 'ssh_public_key', type: 'string' },
  { name: 'web_terminal_enabled', type: 'bool' },
  { name: 'max_lifetime_seconds', type: 'uint64' },
  { name: 'idle_timeout_seconds', type: 'uint64' },
  { name: 'cpu_cores', type: 'uint64' },
  { name: 'memory_mb', type: 'uint64' },
  { name: 'disk_gb', type: 'uint64' },
  { name: 'tee_required', type: 'bool' },
  { name: 'tee_type', type: 'uint8' },
  { name: 'attestation_nonce', type: 'string' },
  { name: 'capabilities_json', type: 'string' },
];
const FIELD_ORDER = DOCUMENTED_FIELDS.map((f) => f.name);

/** A small, valid request (no secrets: env_json is plain configuration). */
export function sampleSandboxCreateRequest(
  overrides: Partial<SandboxCreateRequest> = {},
): SandboxCreateRequest {
  return {
    name: 'devnet-sandbox',
    image: '', // empty: the operator's default sandbox image (no registry here, so no tag is guessed)
    stack: 'default',
    agent_identifier: 'default',
    env_json: '{}',
    metadata_json: '{"purpose":"devnet"}',
    ssh_enabled: false,
    ssh_public_key: '',
    web_terminal_enabled: true,
    max_lifetime_seconds: 3600n,
    idle_timeout_seconds: 900n,
    cpu_cores: 1n,
    memory_mb: 512n,
    disk_gb: 2n,
    tee_required: false,
    tee_type: 0,
    attestation_nonce: '',
    capabilities_json: '[]',
    ...overrides,
  };
}

/**
 * The struct's components: as forge emitted them when any ABI item carries
 * `struct …SandboxCreateRequest` (checked against the documented order, so a renamed or reordered
 * field fails loudly here rather than on chain), else the documented field list.
 */
export function sandboxCreateRequestComponents(): readonly AbiParameter[] {
  const found = findStruct(
    agentSandboxBlueprintAbi as unknown as readonly AbiItemLike[],
    'SandboxCreateRequest',
  );
  if (!found) return DOCUMENTED_FIELDS;
  const names = found.map((c) => c.name);
  if (names.join(',') !== FIELD_ORDER.join(',')) {
    throw new Error(`SandboxCreateRequest fields differ from contract.md: ${names.join(', ')}`);
  }
  return found;
}

/** `flat`: encodeAbiParameters(fields, values) as front-ends send it; `tuple`: abi.encode(struct). */
export function encodeSandboxCreateRequest(req: SandboxCreateRequest, form: 'flat' | 'tuple' = 'flat'): Hex {
  const components = sandboxCreateRequestComponents();
  const values = FIELD_ORDER.map((k) => req[k]);
  if (form === 'flat') return encodeAbiParameters(components, values);
  return encodeAbiParameters([{ type: 'tuple', components }], [values]);
}

interface AbiItemLike {
  inputs?: readonly ParamLike[];
  outputs?: readonly ParamLike[];
}
type ParamLike = AbiParameter & { internalType?: string; components?: readonly ParamLike[] };

function findStruct(abi: readonly AbiItemLike[], struct: string): readonly AbiParameter[] | undefined {
  const visit = (params: readonly ParamLike[] | undefined): readonly AbiParameter[] | undefined => {
    for (const p of params ?? []) {
      const t = p.internalType ?? '';
      if (p.components && (t === `struct ${struct}` || t.endsWith(`.${struct}`))) return p.components;
      const inner = visit(p.components);
      if (inner) return inner;
    }
    return undefined;
  };
  for (const item of abi) {
    const hit = visit(item.inputs) ?? visit(item.outputs);
    if (hit) return hit;
  }
  return undefined;
}

/** The output parameters of one of the blueprint's public decoders (they mirror the job encodings). */
function decoderOutputs(name: string): readonly AbiParameter[] | undefined {
  const abi = agentSandboxBlueprintAbi as unknown as ReadonlyArray<{
    type: string;
    name?: string;
    outputs?: readonly AbiParameter[];
  }>;
  return abi.find((i) => i.type === 'function' && i.name === name)?.outputs;
}

/** Job 0's output, `abi.encode((string sandboxId, string json))`: one tuple, as the operator posts it. */
export function encodeCreateOutput(sandboxId: string, json: string): Hex {
  const components = decoderOutputs('decodeCreateOutput') ?? [
    { name: 'sandboxId', type: 'string' },
    { name: 'json', type: 'string' },
  ];
  return encodeAbiParameters([{ type: 'tuple', components }], [[sandboxId, json]]);
}

/** Job 1's input, `(string sandbox_id)`, in the flat form front-ends send. */
export function encodeSandboxDelete(sandboxId: string): Hex {
  return encodeAbiParameters([{ name: 'sandbox_id', type: 'string' }], [sandboxId]);
}

/** Jobs 1-4's output, `abi.encode((string json))`: one tuple. */
export function encodeJsonOutput(json: string): Hex {
  return encodeAbiParameters([{ type: 'tuple', components: [{ name: 'json', type: 'string' }] }], [{ json }]);
}
