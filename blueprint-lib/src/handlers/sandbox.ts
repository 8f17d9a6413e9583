// Jobs 0 and 1: create a sandbox (only the operator OperatorAssigned names) and delete one (only
// the operator OperatorRouted names). Results carry public facts only, never the sidecar token.
import { isRuntimeError } from '@agent-sandbox/runtime';
import { decodeJobResult, type JobContext, type JobValue, SKIP, type Skip } from '@agent-sandbox/sdk';
import { type Hex, isAddressEqual } from 'viem';
import type { CallRef } from '../chain.ts';
import type { BlueprintDeps, SandboxFacts } from '../deps.ts';
import { BlueprintError } from '../errors.ts';
import { HandledCalls } from '../handled-calls.ts';
import { type SANDBOX_CREATE_INPUT, SANDBOX_CREATE_OUTPUT, type SANDBOX_DELETE_INPUT } from '../jobs.ts';
import { runtimeCreateParams, validateCreateRequest, validateSandboxId } from '../validate.ts';
import { describeFailure } from './failure.ts';

export { describeFailure };

type CreateOutput = JobValue<typeof SANDBOX_CREATE_OUTPUT>;

const RELEASED_BEFORE_RUN = (callId: bigint) =>
  `the slot reserved for create call ${callId} was released (expired, or the service ended) before it ran; submit the create again`;
const RELEASED_WHILE_BUILT = (callId: bigint) =>
  `the slot reserved for create call ${callId} was released (the reservation timed out, or the service ended) while its sandbox was being built; the blueprint would not record it, so the sandbox was deleted; submit the create again`;
const RELEASED_AT_RESULT = (callId: bigint) =>
  `the slot reserved for create call ${callId} was released (the reservation timed out, or the service ended) before its result was recorded, so the blueprint ignored the result; the sandbox built for it was deleted; submit the create again`;
type JsonOutput = { json: string };

/** The public result document of a created sandbox: facts only; the token never appears. */
export function createResultJson(
  rec: SandboxFacts,
  deps: Pick<BlueprintDeps, 'operator' | 'operatorApiUrl'>,
  facts: Record<string, unknown> = {},
): string {
  return JSON.stringify({
    sandboxId: rec.id,
    operator: deps.operator,
    operatorApiUrl: deps.operatorApiUrl,
    serviceId: rec.serviceId,
    callId: rec.callId,
    owner: rec.owner,
    state: rec.state,
    name: rec.name,
    image: rec.image,
    resources: {
      cpuCores: rec.resources.cpuCores,
      memoryMb: rec.resources.memoryMb,
      diskGb: rec.resources.diskGb,
    },
    timers: rec.timers,
    createdAt: rec.createdAt,
    sshPort: null,
    attestation: null,
    ...facts,
  });
}

export function sandboxHandlers(deps: BlueprintDeps) {
  const handled = new HandledCalls(deps.store);
  const mine = (a: `0x${string}` | undefined) => a !== undefined && isAddressEqual(a, deps.operator);

  async function answer<V extends Record<string, string>>(
    ctx: JobContext,
    job: number,
    value: V,
    reason?: string,
  ): Promise<V> {
    try {
      await handled.record(ctx.serviceId, ctx.callId, {
        job,
        outcome: 'result',
        value,
        ...(reason ? { reason } : {}),
        ...(ctx.blockHash ? { blockHash: ctx.blockHash } : {}),
      });
    } catch (e) {
      // A full disk must not cost the call its one result: the answer still goes out (a repeat
      // finds the runtime's own record of the create, or fails the same way).
      if (!isRuntimeError(e, 'STORE_FULL')) throw e;
      ctx.log.error({ err: e }, 'could not record the answer (the data dir is full); answering anyway');
    }
    return value;
  }

  /**
   * A reorg removed this call (or the id now names a call on the new fork): the sandbox built for
   * a vanished create is deleted, so nothing runs that the chain does not know, and its record goes.
   */
  async function vanished(call: {
    serviceId: bigint;
    callId: bigint;
    blockHash?: string | undefined;
  }): Promise<void> {
    const prior = await handled.get(call.serviceId, call.callId, call.blockHash);
    if (!prior) return;
    const sandboxId = prior.job === 0 && prior.outcome === 'result' ? prior.value?.['sandboxId'] : undefined;
    if (sandboxId) {
      await deps.sandboxes.delete(sandboxId);
      deps.logger?.warn(
        { callId: `${call.callId}`, sandboxId },
        'a reorg removed this create; its sandbox is deleted',
      );
    }
    // The new chain may reuse the id: the runtime provisions it afresh, not from this call's record.
    if (prior.job === 0) await deps.sandboxes.forgetProvision(`${call.serviceId}`, `${call.callId}`);
    await handled.forget(call.serviceId, call.callId);
  }

  /** Deletes what this create built (if anything) and records why on its provision. */
  async function withdraw(
    call: Pick<JobContext, 'serviceId' | 'callId'> & { log?: JobContext['log'] },
    why: (callId: bigint) => string,
  ): Promise<string | undefined> {
    const r = await deps.sandboxes.withdrawProvision(`${call.serviceId}`, `${call.callId}`, why(call.callId));
    if (r?.deleted) {
      (call.log ?? deps.logger)?.warn(
        { callId: `${call.callId}`, sandboxId: r.sandboxId, reason: why(call.callId) },
        'the chain released this create; the sandbox built for it is deleted',
      );
    }
    return r?.sandboxId;
  }

  /**
   * After a create's result went to chain: when its reservation had been released meanwhile (the
   * blueprint then ignored the result: ResultIgnored), nothing on chain knows the sandbox and its
   * owner's delete reverts UnknownSandbox, so the operator deletes it and records why — on the
   * provision (the API shows it) and in the handled record (a repeat answers the failure).
   * True when it withdrew the create.
   */
  async function afterResult(call: CallRef, output: Hex): Promise<boolean> {
    let sandboxId: string;
    try {
      ({ sandboxId } = decodeJobResult(SANDBOX_CREATE_OUTPUT, output));
    } catch {
      return false;
    }
    if (!sandboxId || !(await deps.chain.reservationReleased(call))) return false;
    await withdraw(call, RELEASED_AT_RESULT);
    const message = RELEASED_AT_RESULT(call.callId);
    await handled.record(call.serviceId, call.callId, {
      job: 0,
      outcome: 'result',
      value: {
        sandboxId: '',
        json: JSON.stringify({ error: message, code: 'EXPIRED', phase: 'ready', callId: `${call.callId}` }),
      },
      reason: message,
    });
    deps.logger?.warn(
      { callId: `${call.callId}`, sandboxId },
      'the blueprint ignored this create result (its reservation was released); its sandbox is deleted',
    );
    return true;
  }

  async function create(
    req: JobValue<typeof SANDBOX_CREATE_INPUT>,
    ctx: JobContext,
  ): Promise<CreateOutput | Skip> {
    if (ctx.blockHash) {
      // The id was a call on a fork that is gone: undo that one before serving this one.
      const old = await handled.otherFork(ctx.serviceId, ctx.callId, ctx.blockHash);
      if (old) await vanished({ serviceId: ctx.serviceId, callId: ctx.callId, blockHash: old.blockHash });
    }
    const prior = await handled.get(ctx.serviceId, ctx.callId, ctx.blockHash);
    if (prior) {
      ctx.log.info({ outcome: prior.outcome }, 'create call already handled; answering the same way');
      return prior.outcome === 'skip' ? SKIP : (prior.value as CreateOutput);
    }
    // Both reads are independent: one round trip to the chain instead of two before provisioning
    // (a warm-pool create is ready in well under one of them).
    const releasedRead = deps.chain.reservationReleased(ctx);
    releasedRead.catch(() => {});
    const assigned = await deps.chain.operatorForCall('OperatorAssigned', ctx);
    if (!mine(assigned)) {
      ctx.log.debug({ assigned }, 'create assigned to another operator; skipping');
      await handled.record(ctx.serviceId, ctx.callId, {
        job: 0,
        outcome: 'skip',
        reason: `assigned to ${assigned ?? 'nobody'}`,
        ...(ctx.blockHash ? { blockHash: ctx.blockHash } : {}),
      });
      return SKIP;
    }
    const fail = async (e: unknown, phase: string): Promise<CreateOutput> => {
      const f = describeFailure(e);
      // The full error (engine text included) stays in the operator's log, never on chain.
      ctx.log.warn(
        { phase, code: f.code, reason: f.message, err: e },
        'sandbox create failed; posting the reason',
      );
      return answer(
        ctx,
        0,
        {
          sandboxId: '',
          json: JSON.stringify({ error: f.message, code: f.code, phase, callId: `${ctx.callId}` }),
        },
        f.message,
      );
    };
    // A create whose slot was already given back is not provisioned: the blueprint would record
    // nothing of it, so the sandbox would run without the chain knowing it. (One a restart cut
    // short may have built something already: that goes.)
    if (await releasedRead) {
      await withdraw(ctx, RELEASED_BEFORE_RUN);
      return fail(new BlueprintError('EXPIRED', RELEASED_BEFORE_RUN(ctx.callId)), 'admission');
    }
    let v: ReturnType<typeof validateCreateRequest>;
    try {
      v = validateCreateRequest(req, deps.policy);
    } catch (e) {
      return fail(e, 'validation');
    }
    ctx.log.info(
      { image: v.image, cpuCores: v.cpuCores, memoryMb: v.memoryMb, owner: ctx.caller },
      'provisioning sandbox',
    );
    let rec: SandboxFacts;
    try {
      // Provisioning can take a while (image checks, container start, health): the runtime
      // reports each phase as it records it, so an operator watching the logs sees where a create is.
      rec = await deps.sandboxes.create(
        {
          owner: ctx.caller,
          serviceId: `${ctx.serviceId}`,
          callId: `${ctx.callId}`,
          ...runtimeCreateParams(v),
        },
        { onPhase: (phase) => ctx.log.info({ phase }, 'provisioning progress') },
      );
    } catch (e) {
      if (ctx.signal.aborted) throw e;
      const p = await deps.sandboxes.getProvision(`${ctx.callId}`, `${ctx.serviceId}`).catch(() => undefined);
      return fail(e, p?.failedPhase ?? p?.phase ?? 'admission');
    }
    // A slow create can outlive its reservation, which anyone may then release: the blueprint
    // would drop this result, so the sandbox goes now and the result says why.
    if (await deps.chain.reservationReleased(ctx)) {
      await withdraw(ctx, RELEASED_WHILE_BUILT);
      return fail(new BlueprintError('EXPIRED', RELEASED_WHILE_BUILT(ctx.callId)), 'ready');
    }
    ctx.log.info({ sandboxId: rec.id }, 'sandbox running');
    return answer(ctx, 0, {
      sandboxId: rec.id,
      json: createResultJson(rec, deps, {
        stack: v.facts.stack,
        agentIdentifier: v.facts.agentIdentifier,
        webTerminalEnabled: v.facts.webTerminalEnabled,
        // On when the create's key was stored (the runtime parsed it) and the operator offers SSH
        // (SANDBOX_SSH, never tee-instance: the API refuses it there); more keys with POST …/ssh.
        ssh: {
          requested: v.facts.sshEnabled,
          enabled:
            deps.policy.sshOffered !== false &&
            deps.mode !== 'tee-instance' &&
            (rec.sshKeys ?? []).length > 0,
        },
      }),
    });
  }

  async function remove(
    req: JobValue<typeof SANDBOX_DELETE_INPUT>,
    ctx: JobContext,
  ): Promise<JsonOutput | Skip> {
    const prior = await handled.get(ctx.serviceId, ctx.callId, ctx.blockHash);
    if (prior) return prior.outcome === 'skip' ? SKIP : (prior.value as JsonOutput);
    const routed = await deps.chain.operatorForCall('OperatorRouted', ctx);
    if (!mine(routed)) {
      await handled.record(ctx.serviceId, ctx.callId, {
        job: 1,
        outcome: 'skip',
        reason: `routed to ${routed ?? 'nobody'}`,
      });
      return SKIP;
    }
    const id = req.sandbox_id;
    const error = (e: unknown, phase: 'validation' | 'delete') => {
      const f = describeFailure(e);
      ctx.log.warn(
        { sandboxId: id, code: f.code, phase, reason: f.message, err: e },
        'sandbox delete failed; posting the reason',
      );
      return answer(
        ctx,
        1,
        { json: JSON.stringify({ error: f.message, code: f.code, phase, sandboxId: id }) },
        f.message,
      );
    };
    let rec: SandboxFacts;
    try {
      validateSandboxId(id);
      try {
        rec = deps.sandboxes.get(id);
      } catch (e) {
        throw new BlueprintError(
          'NOT_FOUND',
          `sandbox ${id} is not known to operator ${deps.operator}; nothing was deleted`,
          { cause: e },
        );
      }
      if (rec.serviceId !== `${ctx.serviceId}`) {
        throw new BlueprintError(
          'FORBIDDEN',
          `sandbox ${id} belongs to service ${rec.serviceId}, not ${ctx.serviceId}`,
        );
      }
      if (rec.owner.toLowerCase() !== ctx.caller.toLowerCase()) {
        throw new BlueprintError('FORBIDDEN', `only the owner of sandbox ${id} may delete it`);
      }
    } catch (e) {
      return error(e, 'validation');
    }
    try {
      await deps.sandboxes.delete(id);
    } catch (e) {
      if (ctx.signal.aborted) throw e;
      return error(e, 'delete');
    }
    ctx.log.info({ sandboxId: id }, 'sandbox deleted');
    return answer(ctx, 1, {
      json: JSON.stringify({ sandboxId: id, deleted: true, state: 'deleted', operator: deps.operator }),
    });
  }

  return { create, remove, handled, vanished, afterResult };
}
