// The blueprint's five jobs: ids, names and their ABI parameter lists, all from the generated
// IAgentSandboxJobs ABI (contracts/jobs.ts; spec/contract.md, "Jobs").
import {
  JOBS,
  jsonOutputParams,
  sandboxCreateOutputParams,
  sandboxCreateRequestParams,
  sandboxDeleteInputParams,
  workflowCreateRequestParams,
  workflowIdInputParams,
} from '@agent-sandbox/contracts';

export const JOB_SANDBOX_CREATE = JOBS.SANDBOX_CREATE;
export const JOB_SANDBOX_DELETE = JOBS.SANDBOX_DELETE;
export const JOB_WORKFLOW_CREATE = JOBS.WORKFLOW_CREATE;
export const JOB_WORKFLOW_TRIGGER = JOBS.WORKFLOW_TRIGGER;
export const JOB_WORKFLOW_CANCEL = JOBS.WORKFLOW_CANCEL;

export const JOB_NAMES: Readonly<Record<number, string>> = {
  [JOB_SANDBOX_CREATE]: 'SANDBOX_CREATE',
  [JOB_SANDBOX_DELETE]: 'SANDBOX_DELETE',
  [JOB_WORKFLOW_CREATE]: 'WORKFLOW_CREATE',
  [JOB_WORKFLOW_TRIGGER]: 'WORKFLOW_TRIGGER',
  [JOB_WORKFLOW_CANCEL]: 'WORKFLOW_CANCEL',
};

export const SANDBOX_CREATE_INPUT = sandboxCreateRequestParams;
export const SANDBOX_DELETE_INPUT = sandboxDeleteInputParams;
export const WORKFLOW_CREATE_INPUT = workflowCreateRequestParams;
export const WORKFLOW_ID_INPUT = workflowIdInputParams;
export const SANDBOX_CREATE_OUTPUT = sandboxCreateOutputParams;
export const JSON_OUTPUT = jsonOutputParams;
