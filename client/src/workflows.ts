// Workflows from the owner's side: job 2/3/4 inputs (flat-encoded like the blueprint decodes them),
// their results, and the shapes of GET /api/workflows… (operator-api, "workflows").
import {
  JOBS,
  jsonOutputParams,
  workflowCreateRequestParams,
  workflowIdInputParams,
} from '@agent-sandbox/contracts';
import { decodeAbiParameters, encodeAbiParameters, type Hex } from 'viem';
import { ClientError } from './errors.ts';

export const JOB_WORKFLOW_CREATE = JOBS.WORKFLOW_CREATE;
export const JOB_WORKFLOW_TRIGGER = JOBS.WORKFLOW_TRIGGER;
export const JOB_WORKFLOW_CANCEL = JOBS.WORKFLOW_CANCEL;

export interface WorkflowCreateInput {
  name: string;
  /** `{"command": …}`, `{"prompt": …}` or `{"task": …}`, optionally with `timeout_ms`. */
  workflowJson: string;
  /** `manual` or `cron`. */
  triggerType: string;
  /** cron: the 5-field expression, or `{"cron": "…", "timezone": "Europe/Berlin"}` (default UTC). */
  triggerConfig: string;
  /** Cloud: the sandbox it runs in. Empty with `instance: true`. */
  targetSandboxId: string;
  instance?: boolean;
}

export function encodeWorkflowCreate(w: WorkflowCreateInput): Hex {
  if (!w.name.trim() || w.name.length > 64)
    throw new ClientError('USAGE', 'a workflow name is 1–64 characters');
  return encodeAbiParameters(workflowCreateRequestParams, [
    w.name,
    w.workflowJson,
    w.triggerType,
    w.triggerConfig,
    '',
    w.instance ? 1 : 0,
    w.instance ? '' : w.targetSandboxId,
    0n,
  ]);
}

export function encodeWorkflowId(id: bigint): Hex {
  return encodeAbiParameters(workflowIdInputParams, [id]);
}

/** The result as operators post it: one tuple of the job's output fields (`(string json)`). */
const RESULT = [{ type: 'tuple', components: jsonOutputParams }] as const;

/** A workflow job's result document (`{"error", "code"}` when the operator refused it). */
export function decodeWorkflowResult(output: Hex): Record<string, unknown> {
  try {
    const [{ json }] = decodeAbiParameters(RESULT, output) as unknown as [{ json: string }];
    const v = JSON.parse(json);
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : { value: v };
  } catch (e) {
    throw new ClientError('CHAIN', 'the operator posted a workflow result this client cannot decode', {
      cause: e,
    });
  }
}

export { Workflow, WorkflowList, WorkflowRun, WorkflowRunList } from './workflow-types.ts';
