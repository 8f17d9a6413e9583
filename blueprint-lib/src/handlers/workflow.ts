// Jobs 2–4: workflows. The operator holding the target sandbox answers (others skip): create checks
// the request and stores the workflow in the runtime's WorkflowService (which runs the cron
// schedule), trigger starts a run (command or agent run) and posts its run id, cancel stops the
// schedule for good; a trigger or cancel of a workflow this operator never stored is answered
// with a failure saying so (see notHeldAnswer). Results carry no command output: the owner reads
// runs through the API.
// The contract already refuses a workflow on someone else's sandbox; these handlers check again
// (sandbox owner == job caller == workflow owner) so a contract bug alone cannot reach a container.
import { isRuntimeError, type WorkflowRecord } from '@agent-sandbox/runtime';
import { type JobContext, type JobValue, SKIP, type Skip } from '@agent-sandbox/sdk';
import { type Address, isAddressEqual } from 'viem';
import type { BlueprintDeps, WorkflowJobs } from '../deps.ts';
import { BlueprintError } from '../errors.ts';
import { HandledCalls } from '../handled-calls.ts';
import type { WORKFLOW_CREATE_INPUT, WORKFLOW_ID_INPUT } from '../jobs.ts';
import { describeFailure } from './failure.ts';

type JsonOutput = { json: string };

/** A stored workflow (defined by the runtime, which runs it). */
export type StoredWorkflow = WorkflowRecord;

const MAX_WORKFLOW_JSON = 16 * 1024;

/**
 * The workflow service's refusals (bad definition, canceled, unknown) are written for the user
 * and hold nothing but the request's own public fields: they go on chain as they are.
 */
function asRequestError(e: unknown): unknown {
  if (isRuntimeError(e, 'VALIDATION') || isRuntimeError(e, 'CONFLICT')) {
    return new BlueprintError('INVALID_REQUEST', e.message);
  }
  return isRuntimeError(e, 'NOT_FOUND') ? new BlueprintError('NOT_FOUND', e.message) : e;
}

export function workflowHandlers(deps: BlueprintDeps) {
  const handled = new HandledCalls(deps.store);
  const service = () => {
    if (!deps.workflows) {
      throw new BlueprintError('INVALID_REQUEST', 'this operator runs no workflows; use another operator');
    }
    return deps.workflows;
  };

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

  /**
   * A trigger or cancel of a workflow this operator never stored. Cloud: it holds the target
   * sandbox, so its result is the one that counts: a failure saying so. Instance mode: any
   * operator's result counts (the first), so one that never saw the create (it joined later)
   * stays silent rather than race a holder with a failure; one that answered the create (and
   * refused it) says so, as every operator that refused it will.
   */
  async function notHeldAnswer(ctx: JobContext, id: bigint): Promise<Skip> {
    if (deps.mode !== 'cloud' && (await handled.get(ctx.serviceId, id))?.job !== 2) return SKIP;
    throw notHeld(id);
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
      checkTarget(req, ctx.serviceId, deps.mode);
      await requireOwner(ctx, req.target_kind, req.target_sandbox_id, ctx.caller);
      const wf = service();
      const def = {
        workflowId: `${ctx.callId}`,
        serviceId: `${ctx.serviceId}`,
        owner: ctx.caller,
        name: req.name,
        workflowJson: req.workflow_json,
        triggerType: req.trigger_type,
        triggerConfig: req.trigger_config,
        targetKind: req.target_kind,
        targetSandboxId: req.target_sandbox_id,
      };
      let w: WorkflowRecord;
      try {
        w = await wf.create(def);
      } catch (e) {
        throw asRequestError(e);
      }
      return {
        json: JSON.stringify({
          workflowId: w.workflowId,
          stored: true,
          active: true,
          operator: deps.operator,
          targetSandboxId: w.targetSandboxId,
          trigger: w.triggerType || 'manual',
          nextDueAt: w.nextDueAt ?? null,
        }),
      };
    });

  const trigger = (req: JobValue<typeof WORKFLOW_ID_INPUT>, ctx: JobContext) =>
    once(ctx, 3, async () => {
      const id = req.workflow_id;
      const onChain = await deps.chain.workflow(ctx.serviceId, id);
      const local = await deps.workflows?.get(`${ctx.serviceId}`, `${id}`);
      const target = onChain?.target_sandbox_id ?? local?.targetSandboxId;
      const kind = onChain?.target_kind ?? local?.targetKind ?? 0;
      if (target === undefined) throw new BlueprintError('NOT_FOUND', `workflow ${id} is unknown`);
      const who = await responsible(kind, target);
      if (who === 'other') return SKIP;
      requireWorkflowOwner(id, ctx.caller, local, onChain);
      await requireOwner(ctx, kind, target, ctx.caller);
      if (!local) return notHeldAnswer(ctx, id);
      let run: Awaited<ReturnType<WorkflowJobs['trigger']>>;
      try {
        run = await service().trigger(`${ctx.serviceId}`, `${id}`, `${ctx.callId}`);
      } catch (e) {
        throw asRequestError(e);
      }
      return {
        json: JSON.stringify({
          workflowId: `${id}`,
          triggered: run.status !== 'skipped',
          runId: run.runId,
          status: run.status,
          triggeredAt: run.startedAt,
        }),
      };
    });

  const cancel = (req: JobValue<typeof WORKFLOW_ID_INPUT>, ctx: JobContext) =>
    once(ctx, 4, async () => {
      const id = req.workflow_id;
      const local = await deps.workflows?.get(`${ctx.serviceId}`, `${id}`);
      const onChain = await deps.chain.workflow(ctx.serviceId, id);
      const target = local?.targetSandboxId ?? onChain?.target_sandbox_id;
      if (target === undefined) throw new BlueprintError('NOT_FOUND', `workflow ${id} is unknown`);
      const who = await responsible(local?.targetKind ?? onChain?.target_kind ?? 0, target);
      if (who === 'other') return SKIP;
      requireWorkflowOwner(id, ctx.caller, local, onChain);
      // Never "canceled" for a workflow this operator does not hold: nothing here was stopped.
      if (!local) return notHeldAnswer(ctx, id);
      await service().cancel(`${ctx.serviceId}`, `${id}`);
      return { json: JSON.stringify({ workflowId: `${id}`, canceled: true, active: false }) };
    });

  return { create, trigger, cancel };
}

/**
 * The answer of the chosen operator (the target sandbox's holder; any operator in instance mode)
 * to a trigger or cancel of a workflow it never stored: its create was refused or never reached it.
 */
const notHeld = (id: bigint) =>
  new BlueprintError(
    'NOT_FOUND',
    `workflow ${id} is not stored on this operator (its create was refused or never reached it); nothing ran or was canceled here: create it again`,
  );

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

/**
 * What contract.md gives these fields: `target_service_id` 0 means this service (a workflow of
 * another service is created on that service); cloud workflows target a sandbox by id, instance
 * workflows the instance (kind 1, empty id). `sandbox_config_json` has no meaning here (a workflow
 * runs in an existing sandbox), so a non-empty one is refused rather than ignored.
 */
function checkTarget(
  req: Pick<
    JobValue<typeof WORKFLOW_CREATE_INPUT>,
    'target_service_id' | 'target_kind' | 'target_sandbox_id' | 'sandbox_config_json'
  >,
  serviceId: bigint,
  mode: BlueprintDeps['mode'],
): void {
  if (req.target_service_id !== 0n && req.target_service_id !== serviceId) {
    throw new BlueprintError(
      'INVALID_REQUEST',
      `target_service_id ${req.target_service_id} is another service; use 0 (this service, ${serviceId}) or create the workflow on service ${req.target_service_id}`,
    );
  }
  const cfg = req.sandbox_config_json.trim();
  if (cfg !== '' && cfg !== '{}') {
    throw new BlueprintError(
      'INVALID_REQUEST',
      'sandbox_config_json is not supported: a workflow runs in its target sandbox (target_sandbox_id) or the service instance; leave it empty',
    );
  }
  if (req.target_kind !== 0 && req.target_kind !== 1) {
    throw new BlueprintError(
      'INVALID_REQUEST',
      'target_kind must be 0 (a sandbox by id) or 1 (the instance)',
    );
  }
  if (mode === 'cloud' && req.target_kind !== 0) {
    throw new BlueprintError(
      'INVALID_REQUEST',
      'a cloud service runs workflows in a sandbox: target_kind 0 with its id',
    );
  }
  if (mode !== 'cloud' && req.target_kind !== 1) {
    throw new BlueprintError(
      'INVALID_REQUEST',
      'an instance service runs workflows in its instance: target_kind 1, empty target_sandbox_id',
    );
  }
  if (req.target_kind === 1 && req.target_sandbox_id !== '') {
    throw new BlueprintError(
      'INVALID_REQUEST',
      'an instance workflow (target_kind 1) takes an empty target_sandbox_id',
    );
  }
}
