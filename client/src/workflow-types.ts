// The shapes of GET /api/workflows… as the client reads them (operator-api, "workflows").
import { z } from 'zod';

export const Workflow = z
  .object({
    workflow_id: z.string(),
    name: z.string(),
    active: z.boolean(),
    trigger_type: z.string(),
    trigger_config: z.string(),
    target_kind: z.string(),
    target_sandbox_id: z.string(),
    created_at: z.number(),
    last_triggered_at: z.number().nullable(),
    next_due_at: z.number().nullable(),
    runs: z.number(),
  })
  .passthrough();
export type Workflow = z.infer<typeof Workflow>;

export const WorkflowRun = z
  .object({
    run_id: z.string(),
    workflow_id: z.string(),
    trigger: z.string(),
    kind: z.string(),
    status: z.string(),
    sandbox_id: z.string().nullable(),
    started_at: z.number(),
    finished_at: z.number().nullable(),
    exit_code: z.number().nullable(),
    stdout: z.string(),
    stderr: z.string(),
    agent_run_id: z.string().nullable(),
    final_text: z.string().nullable(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .passthrough();
export type WorkflowRun = z.infer<typeof WorkflowRun>;

export const WorkflowList = z.object({ workflows: z.array(Workflow) }).transform((v) => v.workflows);
export const WorkflowRunList = z.object({ runs: z.array(WorkflowRun) }).transform((v) => v.runs);
