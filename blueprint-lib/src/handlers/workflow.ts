// Jobs 2–4: workflows. The operator holding the target sandbox answers (others skip): create stores
// the workflow in the runtime store, trigger runs its `command` in the sandbox through the sidecar
// (acknowledged-only when it has none), cancel marks it inactive. Results carry no command output.
// The contract already refuses a workflow on someone else's sandbox; these handlers check again
// (sandbox owner == job caller == workflow owner) so a contract bug alone cannot reach a container.
import { type JobContext, type JobValue, SKIP, type Skip } from '@agent-sandbox/sdk';
import { type Address, isAddressEqual } from 'viem';
import type { BlueprintDeps } from '../deps.ts';
import { BlueprintError } from '../errors.ts';
import { HandledCalls } from '../handled-calls.ts';
import type { WORKFLOW_CREATE_INPUT, WORKFLOW_ID_INPUT } from '../jobs.ts';
import { describeFailure } from './failure.ts';

type JsonOutput = { json: string };

export interface StoredWorkflow {
  workflowId: string;
  serviceId: string;
  owner: string;
  name: string;
  workflowJson: string;
  triggerType: string;
  triggerConfig: string;
  targetKind: number;
  targetSandboxId: string;
  active: boolean;
  createdAt: number;
  updatedAt: number;
  lastTriggeredAt: number | null;
  runs: number;
}

export interface WorkflowRun {
  workflowId: string;
  callId: string;
  sandboxId: string;
  at: number;
  exitCode: number | null;
  /** Kept in the encrypted store for the operator; never posted on chain. */
  stdout: string;
  stderr: string;
}

const MAX_WORKFLOW_JSON = 16 * 1024;
const MAX_KEEP_OUTPUT = 64 * 1024;

/** The command a workflow runs: `{"command": "...", "cwd"?: "...", "timeout_ms"?: n}`. */
export function workflowCommand(
  workflowJson: string,
): { command: string; cwd?: string; timeoutMs?: number } | undefined {
  let v: unknown;
  try {
    v = JSON.parse(workflowJson);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o['command'] !== 'string' || o['command'].trim() === '') return undefined;
  return {
    command: o['command'],
    ...(typeof o['cwd'] === 'string' ? { cwd: o['cwd'] } : {}),
    ...(typeof o['timeout_ms'] === 'number' && o['timeout_ms'] > 0
      ? { timeoutMs: Math.min(o['timeout_ms'], 600_000) }
      : {}),
  };
}

export function workflowHandlers(deps: BlueprintDeps) {
  const handled = new HandledCalls(deps.store);
  const workflows = deps.store.collection<StoredWorkflow>('workflows');
  const runs = deps.store.collection<WorkflowRun>('workflow-runs');
  const wkey = (serviceId: bigint | string, id: bigint | string) => `${serviceId}:${id}`;

  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

  /**
   * Refuses unless `caller` owns the target: the sandbox record (cloud: owner and service must
   * match) or the service (instance modes: the service owner as the blueprint recorded it).
   */
  async function requireOwner(ctx: JobContext, targetKind: number, sandboxId: string, caller: string) {
    if (targetKind === 1 || deps.mode !== 'cloud') {
      const owner: Address | undefined = await deps.chain.serviceOwner(ctx.serviceId);
      if (!owner || !same(owner, caller)) {
        throw new BlueprintError('FORBIDDEN', 'only the service owner may run workflows on this instance');
      }
      return;
    }
    const rec = deps.sandboxes.get(sandboxId);
    if (rec.serviceId !== `${ctx.serviceId}` || !same(rec.owner, caller)) {
      throw new BlueprintError('FORBIDDEN', `workflows on sandbox ${sandboxId} are for its owner only`);
    }
  }

  /** Does this operator answer for a workflow targeting `sandboxId`? */
  async function responsible(targetKind: number, sandboxId: string): Promise<'mine' | 'other' | 'nobody'> {
    if (targetKind === 1 || deps.mode !== 'cloud') return 'mine';
    try {
      deps.sandboxes.get(sandboxId);
      return 'mine';
    } catch {
      const holder = await deps.chain.sandboxOperator(sandboxId);
      if (!holder) return 'nobody';
      return isAddressEqual(holder, deps.operator) ? 'mine' : 'other';
    }
  }

  async function once(
    ctx: JobContext,
    job: number,
    fn: () => Promise<JsonOutput | Skip>,
  ): Promise<JsonOutput | Skip> {
    const prior = await handled.get(ctx.serviceId, ctx.callId);
    if (prior) return prior.outcome === 'skip' ? SKIP : (prior.value as JsonOutput);
    let out: JsonOutput | Skip;
    try {
      out = await fn();
    } catch (e) {
      if (ctx.signal.aborted) throw e;
      const f = describeFailure(e);
      const phase = ['workflow_create', 'workflow_trigger', 'workflow_cancel'][job - 2] ?? 'workflow';
      ctx.log.warn(
        { code: f.code, phase, reason: f.message, err: e },
        'workflow job failed; posting the reason',
      );
      out = { json: JSON.stringify({ error: f.message, code: f.code, phase }) };
    }
    await handled.record(
      ctx.serviceId,
      ctx.callId,
      out === SKIP ? { job, outcome: 'skip' } : { job, outcome: 'result', value: out },
    );
    return out;
  }

  const create = (req: JobValue<typeof WORKFLOW_CREATE_INPUT>, ctx: JobContext) =>
    once(ctx, 2, async () => {
      const who = await responsible(req.target_kind, req.target_sandbox_id);
      if (who === 'other') return SKIP;
      if (req.name.trim() === '' || req.name.length > 64) {
        throw new BlueprintError('INVALID_REQUEST', 'name must be 1..64 characters');
      }
      if (req.workflow_json.length > MAX_WORKFLOW_JSON) {
        throw new BlueprintError(
          'INVALID_REQUEST',
          `workflow_json is longer than ${MAX_WORKFLOW_JSON} characters`,
        );
      }
      if (who === 'nobody') {
        throw new BlueprintError(
          'NOT_FOUND',
          `target sandbox ${req.target_sandbox_id} is not active on this service`,
        );
      }
      await requireOwner(ctx, req.target_kind, req.target_sandbox_id, ctx.caller);
      const now = Date.now();
      const w: StoredWorkflow = {
        workflowId: `${ctx.callId}`,
        serviceId: `${ctx.serviceId}`,
        owner: ctx.caller,
        name: req.name,
        workflowJson: req.workflow_json,
        triggerType: req.trigger_type,
        triggerConfig: req.trigger_config,
        targetKind: req.target_kind,
        targetSandboxId: req.target_sandbox_id,
        active: true,
        createdAt: now,
        updatedAt: now,
        lastTriggeredAt: null,
        runs: 0,
      };
      await workflows.put(wkey(ctx.serviceId, ctx.callId), w);
      const runnable = workflowCommand(req.workflow_json) !== undefined && deps.exec !== undefined;
      return {
        json: JSON.stringify({
          workflowId: w.workflowId,
          stored: true,
          active: true,
          operator: deps.operator,
          targetSandboxId: w.targetSandboxId,
          // Which triggers do more than acknowledge: a workflow_json with a "command".
          execution: runnable ? 'exec' : 'acknowledged-only',
        }),
      };
    });

  const trigger = (req: JobValue<typeof WORKFLOW_ID_INPUT>, ctx: JobContext) =>
    once(ctx, 3, async () => {
      const id = req.workflow_id;
      const onChain = await deps.chain.workflow(ctx.serviceId, id);
      const local = await workflows.get(wkey(ctx.serviceId, id));
      const target = onChain?.target_sandbox_id ?? local?.targetSandboxId;
      const kind = onChain?.target_kind ?? local?.targetKind ?? 0;
      if (target === undefined) throw new BlueprintError('NOT_FOUND', `workflow ${id} is unknown`);
      const who = await responsible(kind, target);
      if (who === 'other') return SKIP;
      requireWorkflowOwner(id, ctx.caller, local, onChain);
      await requireOwner(ctx, kind, target, ctx.caller);
      const workflowJson = local?.workflowJson ?? onChain?.workflow_json ?? '';
      const cmd = workflowCommand(workflowJson);
      const at = Date.now();
      let exitCode: number | null = null;
      if (cmd && deps.exec) {
        const sandboxId = kind === 1 ? undefined : target;
        if (!sandboxId)
          throw new BlueprintError('INVALID_REQUEST', 'instance workflows are acknowledged only');
        const r = await deps.exec(sandboxId, cmd);
        exitCode = r.exitCode;
        await runs.put(`${ctx.serviceId}:${id}:${ctx.callId}`, {
          workflowId: `${id}`,
          callId: `${ctx.callId}`,
          sandboxId,
          at,
          exitCode,
          stdout: r.stdout.slice(-MAX_KEEP_OUTPUT),
          stderr: r.stderr.slice(-MAX_KEEP_OUTPUT),
        });
      }
      if (local) {
        await workflows.put(wkey(ctx.serviceId, id), {
          ...local,
          lastTriggeredAt: at,
          updatedAt: at,
          runs: local.runs + 1,
        });
      }
      return {
        json: JSON.stringify({
          workflowId: `${id}`,
          triggered: true,
          triggeredAt: at,
          execution: cmd && deps.exec ? 'exec' : 'acknowledged-only',
          exitCode,
        }),
      };
    });

  const cancel = (req: JobValue<typeof WORKFLOW_ID_INPUT>, ctx: JobContext) =>
    once(ctx, 4, async () => {
      const id = req.workflow_id;
      const local = await workflows.get(wkey(ctx.serviceId, id));
      const onChain = await deps.chain.workflow(ctx.serviceId, id);
      const target = local?.targetSandboxId ?? onChain?.target_sandbox_id;
      if (target === undefined) throw new BlueprintError('NOT_FOUND', `workflow ${id} is unknown`);
      const who = await responsible(local?.targetKind ?? onChain?.target_kind ?? 0, target);
      if (who === 'other') return SKIP;
      requireWorkflowOwner(id, ctx.caller, local, onChain);
      if (local)
        await workflows.put(wkey(ctx.serviceId, id), { ...local, active: false, updatedAt: Date.now() });
      return { json: JSON.stringify({ workflowId: `${id}`, canceled: true, active: false }) };
    });

  return { create, trigger, cancel, workflows, runs };
}

/** The job's caller must be the workflow's owner, by every record this operator can read. */
function requireWorkflowOwner(
  id: bigint,
  caller: string,
  local: StoredWorkflow | undefined,
  onChain: { owner: string } | undefined,
): void {
  const owners = [local?.owner, onChain?.owner].filter((o): o is string => o !== undefined);
  if (owners.length === 0 || owners.some((o) => o.toLowerCase() !== caller.toLowerCase())) {
    throw new BlueprintError('FORBIDDEN', `workflow ${id} may only be triggered or canceled by its owner`);
  }
}
