// Encodes the blueprint's job inputs and outputs with the parameter types forge put in its ABI.
import {
  jsonOutputParams,
  type SandboxCreateRequest,
  sandboxCreateOutputParams,
  sandboxCreateRequestParams,
  sandboxDeleteInputParams,
} from '@agent-sandbox/contracts';
import { type AbiParameter, encodeAbiParameters, type Hex } from 'viem';

/** SandboxCreateRequest, typed from the generated ABI (contracts/jobs.ts). */
export type { SandboxCreateRequest };

/** The fields in on-chain order, from the generated ABI (contracts/jobs.ts). */
const FIELD_ORDER: ReadonlyArray<keyof SandboxCreateRequest> = sandboxCreateRequestParams.map((p) => p.name);

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
  return sandboxCreateRequestParams;
}

/** `flat`: encodeAbiParameters(fields, values) as front-ends send it; `tuple`: abi.encode(struct). */
export function encodeSandboxCreateRequest(req: SandboxCreateRequest, form: 'flat' | 'tuple' = 'flat'): Hex {
  const components = sandboxCreateRequestComponents();
  const values = FIELD_ORDER.map((k) => req[k]);
  if (form === 'flat') return encodeAbiParameters(components, values);
  return encodeAbiParameters([{ type: 'tuple', components }], [values]);
}

/** Job 0's output, `abi.encode((string sandboxId, string json))`: one tuple, as the operator posts it. */
export function encodeCreateOutput(sandboxId: string, json: string): Hex {
  return encodeAbiParameters(
    [{ type: 'tuple', components: sandboxCreateOutputParams }],
    [{ sandboxId, json }],
  );
}

/** Job 1's input, `(string sandbox_id)`, in the flat form front-ends send. */
export function encodeSandboxDelete(sandboxId: string): Hex {
  return encodeAbiParameters(sandboxDeleteInputParams, [sandboxId]);
}

/** Jobs 1-4's output, `abi.encode((string json))`: one tuple. */
export function encodeJsonOutput(json: string): Hex {
  return encodeAbiParameters([{ type: 'tuple', components: jsonOutputParams }], [{ json }]);
}
