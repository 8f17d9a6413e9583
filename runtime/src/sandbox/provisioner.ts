// Provisioning a new sandbox for a create job: idempotent by call id, every phase recorded, and
// everything created removed again when any phase fails.
import { engineGone, engineUnavailable } from '../docker/docker-errors.ts';
import { volumeName } from '../docker/labels.ts';
import { isRuntimeError, RuntimeError } from '../errors.ts';
import { type SandboxContext, transition } from './context.ts';
import { adoptOne, outlastEngineLoss } from './engine-return.ts';
import { copyForkWorkspace, dropForkCopy } from './fork.ts';
import { launchContainer } from './launch.ts';
import { checkMemoryBudget } from './memory-budget.ts';
import {
  newProgress,
  type ProvisionPhase,
  type ProvisionProgress,
  ProvisionTracker,
  provisionKey,
} from './provision-progress.ts';
import { newRecord, newSandboxId, type SandboxRecord, type SandboxSource } from './record.ts';
import { isRegistryImage, pullRegistryImage } from './registry-images.ts';
import type { ResolvedCreate } from './request.ts';

export interface ProvisionHooks {
  /** Test hook: replaces the image command (e.g. a sidecar that never becomes healthy). */
  cmd?: string[];
  /**
   * Called once each phase is recorded, before the next starts: the create job logs progress from
   * it (pushed, never polled); the crash tests kill the process here.
   */
  onPhase?: (phase: string) => void | Promise<void>;
}

export function callKey(serviceId: string, callId: string): string {
  return `call:${provisionKey(serviceId, callId)}`;
}

/** Returns the outcome of an earlier provision for the same call id, if there was one. */
export async function existingProvision(
  ctx: SandboxContext,
  serviceId: string,
  callId: string,
): Promise<{ progress: ProvisionProgress; record: SandboxRecord | undefined } | undefined> {
  const progress = await ctx.provisions.get(provisionKey(serviceId, callId));
  if (!progress) return undefined;
  // A deleted sandbox's tombstone too: a redelivered create of its call answers with it.
  return { progress, record: await ctx.records.find(progress.sandboxId) };
}

/**
 * Writes the pending record and the queued progress; nothing exists in Docker yet (or, with `id`,
 * only the warm-pool container the create took, which carries that id).
 */
export async function admit(
  ctx: SandboxContext,
  req: ResolvedCreate,
  id = newSandboxId(),
  source?: SandboxSource,
): Promise<SandboxRecord> {
  const { cfg } = ctx;
  if (cfg.maxSandboxes > 0) {
    const live = ctx.records
      .all()
      .filter((r) => ['pending', 'provisioning', 'running'].includes(r.state)).length;
    if (live >= cfg.maxSandboxes) {
      throw new RuntimeError(
        'CAPACITY_EXHAUSTED',
        `this operator runs its maximum of ${cfg.maxSandboxes} sandboxes; retry later or use another operator`,
      );
    }
  }
  // A claimed pool container already holds its memory, but as a pool entry, not a live sandbox.
  checkMemoryBudget(ctx, req.memoryMb);
  const now = ctx.now();
  const rec = newRecord(
    {
      id,
      owner: req.owner,
      serviceId: req.serviceId,
      callId: req.callId,
      operatorId: cfg.operatorId,
      name: req.name,
      state: 'pending',
      image: req.image,
      volumeName: volumeName(id),
      exposedPorts: req.exposedPorts,
      resources: { cpuCores: req.cpuCores, memoryMb: req.memoryMb, diskGb: req.diskGb, diskEnforced: false },
      timers: req.timers,
      baseEnv: req.baseEnv,
      metadata: req.metadata,
      ...(req.expiryExempt ? { expiryExempt: true } : {}),
      ...(req.agent ? {} : { agent: false }),
      ...(req.network ? { network: req.network } : {}),
      ...(isRegistryImage(req.image) ? { mountedSidecar: true } : {}),
      runtime: req.runtime,
      ...(req.sshKeys ? { sshKeys: req.sshKeys } : {}),
      ...(source ? { source } : {}),
    },
    now,
  );
  // Record and progress in one batch: a disk that fills (or a crash) leaves both or neither.
  const progress = newProgress({
    callId: req.callId,
    sandboxId: id,
    serviceId: req.serviceId,
    owner: req.owner,
    now,
  });
  await ctx.records.put(rec, ctx.provisions.putOp(provisionKey(req.serviceId, req.callId), progress));
  ctx.metrics?.jobs.inc();
  return rec;
}

export interface PhaseTracking {
  tracker: ProvisionTracker;
  /** Records the phase, then tells hooks.onPhase. */
  enter: (phase: ProvisionPhase) => Promise<void>;
}

/** The container answers: the record runs at its addresses, started and active now; phase `ready`. */
export async function markReady(
  ctx: SandboxContext,
  id: string,
  enter: PhaseTracking['enter'],
  at: Pick<SandboxRecord, 'hostPort' | 'sidecarUrl' | 'exposedHostPorts'> & { containerId?: string },
): Promise<SandboxRecord> {
  const now = ctx.now();
  const r = await transition(ctx, id, 'running', { ...at, startedAt: now, lastActivityAt: now });
  await enter('ready');
  return r;
}

/** The tracker of an admitted record's provision (a claim hands it on to a cold provision). */
export async function trackPhases(
  ctx: SandboxContext,
  rec: SandboxRecord,
  hooks: ProvisionHooks,
): Promise<PhaseTracking> {
  const progress = await ctx.provisions.get(provisionKey(rec.serviceId, rec.callId));
  if (!progress) throw new RuntimeError('INTERNAL', `provision progress for call ${rec.callId} is missing`);
  const tracker = new ProvisionTracker(progress, ctx.provisions, ctx.now, (phase, s) =>
    ctx.metrics?.phaseSeconds.observe({ phase }, s),
  );
  const enter = async (phase: ProvisionPhase) => {
    await tracker.enter(phase);
    await hooks.onPhase?.(phase);
  };
  return { tracker, enter };
}

/** Runs the phases for an admitted record; resolves with the running record or throws. */
export async function runProvision(
  ctx: SandboxContext,
  rec: SandboxRecord,
  hooks: ProvisionHooks = {},
  tracking?: PhaseTracking,
  attempt = 0,
): Promise<SandboxRecord> {
  const { tracker, enter } = tracking ?? (await trackPhases(ctx, rec, hooks));
  const epoch = ctx.engine.epoch;
  const log = ctx.log.child({ sandboxId: rec.id, callId: rec.callId });
  try {
    // A registry image is pulled now (its progress goes into the provision) and from then on named
    // by digest. A local image must already be in the engine: the check runs while the phase is
    // recorded; the record moves to provisioning in one write with what the disk-quota probe
    // (cached after the first create, made with the operator's own image) found.
    const present = rec.mountedSidecar ? Promise.resolve(true) : ctx.driver.inspectImage(rec.image);
    present.catch(() => {});
    await enter('image_pull');
    const image = rec.mountedSidecar ? await pullRegistryImage(ctx, rec, tracker) : rec.image;
    if (!(await present)) {
      throw new RuntimeError(
        'IMAGE_NOT_FOUND',
        `image ${rec.image} is not present on this operator's engine and cannot be pulled; build or load it first`,
      );
    }
    const diskEnforced = await ctx.driver.diskQuotaSupported(rec.mountedSidecar ? ctx.cfg.image : rec.image);
    if (!diskEnforced) log.debug('disk size not enforced: storage driver has no quota support');
    let current = await transition(ctx, rec.id, 'provisioning', {
      image,
      resources: { ...rec.resources, diskEnforced, workspaceDisk: ctx.driver.disks ? 'loop-ext4' : null },
    });
    let copied: string | undefined;
    if (rec.source) {
      await enter('workspace_copy');
      copied = await copyForkWorkspace(ctx, current);
    }
    const launched = await launchContainer(ctx, current, {
      image,
      ...(copied ? { restoreWorkspaceTar: copied } : {}),
      removeVolumeOnFailure: true,
      ...(hooks.cmd ? { cmd: hooks.cmd } : {}),
      onPhase: (phase) => enter(phase),
      onCreated: async (containerId) => {
        current = await ctx.records.patch(rec.id, (r) => ({ ...r, containerId }));
      },
    });
    current = await markReady(ctx, rec.id, enter, {
      containerId: launched.containerId,
      hostPort: launched.hostPort,
      sidecarUrl: launched.sidecarUrl,
      exposedHostPorts: launched.exposedHostPorts,
    });
    log.info({ hostPort: launched.hostPort }, 'sandbox ready');
    if (copied) await dropForkCopy(ctx, current);
    // Healthy while the engine was gone (a killed dockerd leaves containers running until it is
    // back, then stops them): its container is checked once more.
    if (ctx.engine.epoch !== epoch && (await ctx.engine.waitUntilBack())) {
      await adoptOne(ctx, rec.id).catch((err) => log.warn({ err: String(err) }, 'could not restart it'));
    }
    return ctx.records.get(rec.id) ?? current;
  } catch (e) {
    if (rec.source) await dropForkCopy(ctx, rec).catch(() => {});
    const lost = await outlastEngineLoss(ctx, rec, tracker, { error: e, epoch, attempt });
    if (lost.retry)
      return runProvision(ctx, ctx.records.get(rec.id) ?? rec, hooks, { tracker, enter }, attempt + 1);
    return failProvision(ctx, rec, tracker, lost.error);
  }
}

/** Records a failed provision (record and progress) and throws the error to report. */
export async function failProvision(
  ctx: SandboxContext,
  rec: SandboxRecord,
  tracker: ProvisionTracker,
  e: unknown,
): Promise<never> {
  const log = ctx.log.child({ sandboxId: rec.id, callId: rec.callId });
  // The engine itself is gone (not a refusal of this sandbox): said as such, whatever step met it.
  if (!isRuntimeError(e, 'ENGINE_UNAVAILABLE') && engineGone(e)) e = engineUnavailable(e);
  const reason = failureReason(e);
  log.warn({ phase: tracker.current.phase, reason }, 'sandbox provision failed');
  ctx.metrics?.failures.inc();
  // Idempotent (a full disk may refuse either write): the record failed, then the progress.
  const record = async () => {
    const now = ctx.records.get(rec.id);
    const moved =
      now && now.state !== 'failed' && now.state !== 'deleted'
        ? transition(ctx, rec.id, 'failed', {
            error: reason,
            containerId: null,
            containerToken: null,
            hostPort: null,
            sidecarUrl: null,
            exposedHostPorts: {},
          }).then(
            () => undefined,
            (err: unknown) => err,
          )
        : undefined;
    const err = await moved;
    if (tracker.current.phase !== 'failed') await tracker.enter('failed', reason);
    if (err) throw err;
  };
  await record().catch((err: unknown) => {
    log.error({ err: String(err) }, 'could not record the failed provision');
    // A full disk: recorded once the store takes writes again, so no `pending` record is left
    // behind a create whose failure was already answered.
    if (isRuntimeError(err, 'STORE_FULL')) void recordWhenWritable(ctx, rec, record);
  });
  if (isRuntimeError(e)) throw e;
  throw new RuntimeError('PROVISION_FAILED', `provisioning failed: ${reason}`, { cause: e });
}

async function recordWhenWritable(ctx: SandboxContext, rec: SandboxRecord, record: () => Promise<void>) {
  const log = ctx.log.child({ sandboxId: rec.id, callId: rec.callId });
  try {
    await ctx.provisions.writable();
    await ctx.locks.run(rec.id, record);
    log.info('failed provision recorded now that the store takes writes again');
  } catch (err) {
    log.error({ err: String(err) }, 'could not record the failed provision after the disk had room again');
  }
}

export function failureReason(e: unknown): string {
  if (isRuntimeError(e)) return e.message;
  return e instanceof Error ? e.message : String(e);
}

/**
 * A reorg removed this create from the chain (its sandbox already deleted): its provision is
 * forgotten, so the new chain's create that reuses the call id is provisioned afresh — never
 * answered with the vanished sandbox.
 */
export async function forgetProvision(ctx: SandboxContext, serviceId: string, callId: string): Promise<void> {
  const progress = await ctx.provisions.get(provisionKey(serviceId, callId));
  if (!progress) return;
  const rec = ctx.records.get(progress.sandboxId);
  if (rec && rec.state !== 'deleted' && rec.state !== 'failed') {
    throw new RuntimeError('CONFLICT', `call ${callId} still has sandbox ${rec.id}; delete it first`);
  }
  await ctx.provisions.del(provisionKey(serviceId, callId));
}

/**
 * Takes back what a create built when the caller learns, after the fact, that nobody will ever
 * reach the sandbox (the chain dropped the create): the sandbox is deleted and its provision
 * recorded failed with `reason`, so a repeat of the call gets that failure. Undefined when the
 * call provisioned nothing here.
 */
export async function withdrawProvision(
  ctx: SandboxContext,
  serviceId: string,
  callId: string,
  reason: string,
  remove: (id: string) => Promise<unknown>,
): Promise<{ sandboxId: string; deleted: boolean } | undefined> {
  const progress = await ctx.provisions.get(provisionKey(serviceId, callId));
  if (!progress) return undefined;
  const rec = ctx.records.get(progress.sandboxId);
  const deleted = rec !== undefined && rec.state !== 'deleted';
  if (deleted) await remove(rec.id);
  if (progress.phase !== 'failed') {
    const tracker = new ProvisionTracker(progress, ctx.provisions, ctx.now, () => {});
    await tracker.enter('failed', reason);
  }
  ctx.log.warn({ sandboxId: progress.sandboxId, callId, deleted, reason }, 'sandbox provision withdrawn');
  return { sandboxId: progress.sandboxId, deleted };
}
