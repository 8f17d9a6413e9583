// The blueprint's five jobs: ids, and their ABI parameter lists taken from the generated contract
// ABI wherever the contract exposes them (spec/contract.md, "Jobs").
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import type { AbiParameter } from 'viem';

export const JOB_SANDBOX_CREATE = 0;
export const JOB_SANDBOX_DELETE = 1;
export const JOB_WORKFLOW_CREATE = 2;
export const JOB_WORKFLOW_TRIGGER = 3;
export const JOB_WORKFLOW_CANCEL = 4;

export const JOB_NAMES: Readonly<Record<number, string>> = {
  [JOB_SANDBOX_CREATE]: 'SANDBOX_CREATE',
  [JOB_SANDBOX_DELETE]: 'SANDBOX_DELETE',
  [JOB_WORKFLOW_CREATE]: 'WORKFLOW_CREATE',
  [JOB_WORKFLOW_TRIGGER]: 'WORKFLOW_TRIGGER',
  [JOB_WORKFLOW_CANCEL]: 'WORKFLOW_CANCEL',
};

type Param = AbiParameter & { internalType?: string; components?: readonly Param[] };
interface AbiItemLike {
  type: string;
  name?: string;
  inputs?: readonly Param[];
  outputs?: readonly Param[];
}
const ABI = agentSandboxBlueprintAbi as unknown as readonly AbiItemLike[];

/** Components of the first ABI parameter anywhere whose internalType names `struct …<name>`. */
export function findStruct(name: string, abi: readonly AbiItemLike[] = ABI): readonly Param[] | undefined {
  const visit = (ps: readonly Param[] | undefined): readonly Param[] | undefined => {
    for (const p of ps ?? []) {
      const t = p.internalType ?? '';
      if (p.components && (t === `struct ${name}` || t.endsWith(`.${name}`))) return p.components;
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

const functionOutputs = (fn: string): readonly Param[] | undefined =>
  ABI.find((i) => i.type === 'function' && i.name === fn)?.outputs;

const strip = (ps: readonly Param[]): AbiParameter[] =>
  ps.map((p) => ({ name: p.name ?? '', type: p.type }) as AbiParameter);

/**
 * THE ONE PLACE this package spells ABI types by hand. The contract takes job inputs as `bytes`
 * and returns `(string json)` nowhere, so forge emits no components for SandboxCreateRequest,
 * `(string sandbox_id)`, `(uint64 workflow_id)` or `(string json)`. The list below is
 * spec/contract.md's, used only when the generated ABI does not carry the struct; when it does
 * (e.g. the contract ever exposes `SandboxCreateRequest` in a function, event or error), the ABI's
 * components are used and checked against these names, so a drift fails loudly at import time.
 */
const SPEC = {
  SandboxCreateRequest: [
    ['name', 'string'],
    ['image', 'string'],
    ['stack', 'string'],
    ['agent_identifier', 'string'],
    ['env_json', 'string'],
    ['metadata_json', 'string'],
    ['ssh_enabled', 'bool'],
    ['ssh_public_key', 'string'],
    ['web_terminal_enabled', 'bool'],
    ['max_lifetime_seconds', 'uint64'],
    ['idle_timeout_seconds', 'uint64'],
    ['cpu_cores', 'uint64'],
    ['memory_mb', 'uint64'],
    ['disk_gb', 'uint64'],
    ['tee_required', 'bool'],
    ['tee_type', 'uint8'],
    ['attestation_nonce', 'string'],
    ['capabilities_json', 'string'],
  ],
  WorkflowCreateRequest: [
    ['name', 'string'],
    ['workflow_json', 'string'],
    ['trigger_type', 'string'],
    ['trigger_config', 'string'],
    ['sandbox_config_json', 'string'],
    ['target_kind', 'uint8'],
    ['target_sandbox_id', 'string'],
    ['target_service_id', 'uint64'],
  ],
  SandboxDelete: [['sandbox_id', 'string']],
  WorkflowId: [['workflow_id', 'uint64']],
  JsonOutput: [['json', 'string']],
  CreateOutput: [
    ['sandboxId', 'string'],
    ['json', 'string'],
  ],
} as const satisfies Record<string, ReadonlyArray<readonly [string, string]>>;

type Spec = (typeof SPEC)[keyof typeof SPEC];
type ToParams<S extends ReadonlyArray<readonly [string, string]>> = {
  -readonly [K in keyof S]: S[K] extends readonly [infer N extends string, infer T extends string]
    ? { readonly name: N; readonly type: T }
    : never;
};

function fromSpec<const S extends Spec>(spec: S): ToParams<S> {
  return spec.map(([name, type]) => ({ name, type })) as unknown as ToParams<S>;
}

/**
 * The ABI's components when available (checked: same names and types in the same order as the
 * spec), else the spec list. `source` tells which one was used (reported by `describeJobAbi`).
 */
function resolve<const S extends Spec>(
  what: string,
  spec: S,
  fromAbi: readonly Param[] | undefined,
): { params: ToParams<S>; source: 'abi' | 'spec' } {
  const expected = fromSpec(spec);
  if (!fromAbi) return { params: expected, source: 'spec' };
  const got = strip(fromAbi);
  const sig = (ps: readonly AbiParameter[]) => ps.map((p) => `${p.type} ${p.name}`).join(', ');
  if (sig(got) !== sig(expected as unknown as AbiParameter[])) {
    throw new Error(
      `${what} in the generated ABI (${sig(got)}) differs from spec/contract.md (${sig(expected as unknown as AbiParameter[])}); ` +
        'regenerate the ABI (node scripts/contracts-build.mjs) or update the spec',
    );
  }
  return { params: got as unknown as ToParams<S>, source: 'abi' };
}

/**
 * WorkflowCreateRequest: the contract stores it as the first fields of its `Workflow` struct
 * (getWorkflow's output), so when no function exposes the request struct itself, its fields are
 * that struct's prefix up to `target_service_id` — still taken from forge's output.
 */
function workflowRequestFromAbi(): readonly Param[] | undefined {
  const direct = findStruct('WorkflowCreateRequest');
  if (direct) return direct;
  const wf = findStruct('Workflow');
  if (!wf) return undefined;
  const end = wf.findIndex((p) => p.name === 'target_service_id');
  return end < 0 ? undefined : wf.slice(0, end + 1);
}

const createReq = resolve(
  'SandboxCreateRequest',
  SPEC.SandboxCreateRequest,
  findStruct('SandboxCreateRequest'),
);
const workflowReq = resolve('WorkflowCreateRequest', SPEC.WorkflowCreateRequest, workflowRequestFromAbi());
const createOut = resolve('create output', SPEC.CreateOutput, functionOutputs('decodeCreateOutput'));

export const SANDBOX_CREATE_INPUT = createReq.params;
export const SANDBOX_DELETE_INPUT = fromSpec(SPEC.SandboxDelete);
export const WORKFLOW_CREATE_INPUT = workflowReq.params;
export const WORKFLOW_ID_INPUT = fromSpec(SPEC.WorkflowId);
export const SANDBOX_CREATE_OUTPUT = createOut.params;
export const JSON_OUTPUT = fromSpec(SPEC.JsonOutput);

/** Where each parameter list came from: 'abi' (forge output) or 'spec' (the list above). */
export function describeJobAbi(): Record<string, 'abi' | 'spec'> {
  return {
    SandboxCreateRequest: createReq.source,
    WorkflowCreateRequest: workflowReq.source,
    CreateOutput: createOut.source,
    SandboxDelete: 'spec',
    WorkflowId: 'spec',
    JsonOutput: 'spec',
  };
}
