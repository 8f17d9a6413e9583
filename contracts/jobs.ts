// The blueprint's job layouts (index, name, input and output parameters), read from the generated
// ABI of IAgentSandboxJobs.sol: the one source every package uses to encode and decode job bytes.
import type { AbiParameterToPrimitiveType } from 'viem';
import { iAgentSandboxJobsAbi } from './abi/IAgentSandboxJobs.ts';

type JobFunction = Extract<(typeof iAgentSandboxJobsAbi)[number], { type: 'function' }>;

function fn<const N extends JobFunction['name']>(name: N): Extract<JobFunction, { name: N }> {
  const item = iAgentSandboxJobsAbi.find((i) => i.type === 'function' && i.name === name);
  if (!item)
    throw new Error(`IAgentSandboxJobs has no ${name}: rebuild the contracts (npm run build:contracts)`);
  return item as Extract<JobFunction, { name: N }>;
}

const create = fn('sandboxCreate');
const workflowCreate = fn('workflowCreate');

/** SandboxCreateRequest's fields in on-chain order (job 0's input, flat). */
export const sandboxCreateRequestParams = create.inputs[0].components;
/** WorkflowCreateRequest's fields in on-chain order (job 2's input, flat). */
export const workflowCreateRequestParams = workflowCreate.inputs[0].components;
/** Job 0's output fields: `(string sandboxId, string json)`, posted as one tuple. */
export const sandboxCreateOutputParams = create.outputs;
/** Job 1's input: `(string sandbox_id)`. */
export const sandboxDeleteInputParams = fn('sandboxDelete').inputs;
/** Jobs 3 and 4's input: `(uint64 workflow_id)`. */
export const workflowIdInputParams = fn('workflowTrigger').inputs;
/** Jobs 1–4's output: `(string json)`. */
export const jsonOutputParams = fn('sandboxDelete').outputs;

/** Job indices as the contract numbers them. */
export const JOBS = {
  SANDBOX_CREATE: 0,
  SANDBOX_DELETE: 1,
  WORKFLOW_CREATE: 2,
  WORKFLOW_TRIGGER: 3,
  WORKFLOW_CANCEL: 4,
} as const;

/** A SandboxCreateRequest as TypeScript sees it (uint64 → bigint, uint8 → number), typed from the ABI. */
export type SandboxCreateRequest = AbiParameterToPrimitiveType<{
  type: 'tuple';
  components: typeof sandboxCreateRequestParams;
}>;
