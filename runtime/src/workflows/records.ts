// The stored shapes of workflows and their runs (encrypted store collections `workflows` and
// `workflow-runs`), and the public views the operator API returns (no stored output is secret
// to its owner, but nothing here ever goes on chain).

export interface WorkflowRecord {
  workflowId: string;
  serviceId: string;
  owner: string;
  name: string;
  workflowJson: string;
  triggerType: string;
  triggerConfig: string;
  /** 0: a sandbox by id (cloud), 1: the service's instance sandbox. */
  targetKind: number;
  targetSandboxId: string;
  active: boolean;
  createdAt: number;
  updatedAt: number;
  lastTriggeredAt: number | null;
  runs: number;
  /** cron: the next slot to fire (epoch ms); advanced and stored before a run starts. */
  nextDueAt?: number | null;
  /** cron: the last slot fired or skipped. */
  lastSlotAt?: number | null;
}

export type WorkflowRunStatus = 'running' | 'completed' | 'failed' | 'timed_out' | 'skipped' | 'cancelled';

export interface WorkflowRunRecord {
  runId: string;
  workflowId: string;
  serviceId: string;
  trigger: 'manual' | 'cron';
  /** manual: the trigger job's call id. */
  callId: string | null;
  /** cron: the slot this run is for; missedSlots: slots passed over while the operator was down. */
  slotAt: number | null;
  missedSlots: number;
  kind: 'command' | 'prompt' | 'task';
  sandboxId: string | null;
  status: WorkflowRunStatus;
  startedAt: number;
  finishedAt: number | null;
  exitCode: number | null;
  /** command: the output's tail. */
  stdout: string;
  stderr: string;
  /** prompt/task: the agent run (events at /api/sandboxes/{sandboxId}/runs/{agentRunId}/events). */
  agentRunId: string | null;
  finalText: string | null;
  error: { code: string; message: string } | null;
}

/** A workflow as its owner reads it through the API. */
export function workflowView(w: WorkflowRecord) {
  return {
    workflow_id: w.workflowId,
    service_id: w.serviceId,
    owner: w.owner,
    name: w.name,
    workflow_json: w.workflowJson,
    trigger_type: w.triggerType,
    trigger_config: w.triggerConfig,
    target_kind: w.targetKind === 1 ? ('instance' as const) : ('sandbox' as const),
    target_sandbox_id: w.targetSandboxId,
    active: w.active,
    created_at: w.createdAt,
    updated_at: w.updatedAt,
    last_triggered_at: w.lastTriggeredAt,
    next_due_at: w.nextDueAt ?? null,
    runs: w.runs,
  };
}

export function runView(r: WorkflowRunRecord) {
  return {
    run_id: r.runId,
    workflow_id: r.workflowId,
    trigger: r.trigger,
    call_id: r.callId,
    slot_at: r.slotAt,
    missed_slots: r.missedSlots,
    kind: r.kind,
    sandbox_id: r.sandboxId,
    status: r.status,
    started_at: r.startedAt,
    finished_at: r.finishedAt,
    exit_code: r.exitCode,
    stdout: r.stdout,
    stderr: r.stderr,
    agent_run_id: r.agentRunId,
    final_text: r.finalText,
    error: r.error,
  };
}
