// Lifecycle operations on an existing sandbox: stop, resume (from the best tier left), delete,
// snapshot, and container recreation for phase-2 secrets. Callers hold the sandbox's lock.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { waitForHealth } from '../docker/health.ts';
import { containerName } from '../docker/labels.ts';
import { socketDir } from '../docker/sidecar-socket.ts';
import { RuntimeError } from '../errors.ts';
import { mustGet, type SandboxContext, transition } from './context.ts';
import { afterStart, beforeStart, containerNetwork } from './egress-policy/hooks.ts';
import { containerEnv } from './env.ts';
import { deliverUserEnv } from './env-delivery.ts';
import { launchContainer, pickExposed } from './launch.ts';
import type { SandboxRecord } from './record.ts';
import { offloadArchives } from './remote-snapshots.ts';
import { noNetwork, prepareSidecarSocket, startedAddress } from './sidecar-address.ts';
import {
  dropArchives,
  hasSnapshot,
  purgeArtifacts,
  restoreSource,
  takeSnapshot,
  WORKSPACE_TAR,
} from './storage.ts';

type StopReason = NonNullable<SandboxRecord['stopReason']>;

const DOWN = { containerId: null, hostPort: null, sidecarUrl: null, exposedHostPorts: {} } as const;

/** Stops a running sandbox (idempotent: a stopped one is returned as is). */
export async function stopSandbox(
  ctx: SandboxContext,
  id: string,
  reason: StopReason,
): Promise<SandboxRecord> {
  const rec = mustGet(ctx, id);
  if (rec.state === 'stopped') return rec;
  if (rec.state !== 'running') {
    throw new RuntimeError(
      'CONFLICT',
      `sandbox ${id} is ${rec.state}; only a running sandbox can be stopped`,
    );
  }
  const now = ctx.now();
  const gone = rec.containerId
    ? (await ctx.driver.stop(rec.containerId, ctx.cfg.stopTimeoutSeconds)) === 'missing'
    : true;
  if (gone) return containerVanished(ctx, rec);
  let snap: Partial<SandboxRecord> = {};
  if (ctx.cfg.snapshotAutoCommit) {
    try {
      snap = await takeSnapshot(ctx, rec);
    } catch (err) {
      // The stopped container still holds everything; a failed extra snapshot loses nothing.
      ctx.log.warn(
        { sandboxId: id, err: String(err) },
        'snapshot on stop failed; the stopped container is kept',
      );
    }
  }
  return transition(ctx, id, 'stopped', {
    ...snap,
    hostPort: null,
    sidecarUrl: null,
    exposedHostPorts: {},
    tier: 'hot',
    tierSince: now,
    stoppedAt: now,
    stopReason: reason,
  });
}

/** The engine lost the container: stopped if a snapshot or the volume is left, failed if not. */
export async function containerVanished(ctx: SandboxContext, rec: SandboxRecord): Promise<SandboxRecord> {
  const tier = await hasSnapshot(ctx, rec);
  const now = ctx.now();
  if (tier) {
    return transition(ctx, rec.id, 'stopped', {
      ...DOWN,
      tier,
      // A restart re-running this must not reset the GC clock of an already stopped sandbox.
      tierSince: rec.state === 'stopped' && rec.tier === tier && rec.tierSince !== null ? rec.tierSince : now,
      stoppedAt: rec.state === 'stopped' ? rec.stoppedAt : now,
      stopReason: rec.state === 'stopped' ? rec.stopReason : 'engine',
    });
  }
  return transition(ctx, rec.id, 'failed', {
    ...DOWN,
    error: 'the container was removed outside the operator and no snapshot of the workspace was left',
  });
}

/** Brings a stopped sandbox back, same id, token and workspace (idempotent when running). */
export async function resumeSandbox(ctx: SandboxContext, id: string): Promise<SandboxRecord> {
  const rec = mustGet(ctx, id);
  if (rec.state === 'running') return rec;
  if (rec.state !== 'stopped') {
    const why = rec.state === 'expired' ? '; its snapshots were garbage-collected, create a new sandbox' : '';
    throw new RuntimeError('CONFLICT', `sandbox ${id} is ${rec.state} and cannot be resumed${why}`);
  }
  const container = rec.containerId ? await ctx.driver.exists(rec.containerId) : undefined;
  const now = ctx.now();
  if (container && rec.containerId && (await outdatedContainer(ctx, id, rec.containerId))) {
    // Made before user env left the container config, or on another egress network: recreated
    // (same volume, snapshot image kept) rather than started as it was.
    ctx.log.info({ sandboxId: id }, 'stopped container predates the current isolation; recreating it');
    return recreate(ctx, rec, 'running');
  }
  if (container && rec.containerId) {
    // The socket directory is a bind mount source: re-made if it went (e.g. /run after a reboot).
    await prepareSidecarSocket(ctx, id);
    await beforeStart(ctx, rec);
    const started = await ctx.driver.start(rec.containerId, noNetwork(ctx) ? undefined : ctx.cfg.sidecarPort);
    await afterStart(ctx, rec, started.ips);
    const at = startedAddress(ctx, id, started.hostPort);
    const health = await waitForHealth(at.addr, {
      timeoutMs: ctx.cfg.healthTimeoutMs,
      intervalMs: ctx.cfg.healthIntervalMs,
      maxIntervalMs: ctx.cfg.healthMaxIntervalMs,
      abort: started.exited,
    });
    started.cancel();
    if (!health.ok) {
      await ctx.driver.stop(rec.containerId, 0);
      throw new RuntimeError(
        'PROVISION_FAILED',
        `resume failed, the sandbox stays stopped: ${health.reason}`,
      );
    }
    try {
      await deliverUserEnv(at.addr, rec, ctx.cfg.healthTimeoutMs, rec.containerToken);
    } catch (e) {
      await ctx.driver.stop(rec.containerId, 0);
      throw e;
    }
    const dropped = await dropArchives(ctx, rec);
    return transition(ctx, id, 'running', {
      ...dropped,
      hostPort: at.hostPort,
      sidecarUrl: at.sidecarUrl,
      exposedHostPorts: pickExposed(rec, started.loopbackPorts),
      tier: null,
      tierSince: null,
      startedAt: now,
      lastActivityAt: now,
      stopReason: null,
    });
  }
  return recreate(ctx, rec, 'running');
}

/** Whether a stopped container carries env beyond the platform's and its image's, or sits on another network. */
async function outdatedContainer(ctx: SandboxContext, id: string, containerId: string): Promise<boolean> {
  const setup = await ctx.driver.containerSetup(containerId);
  if (!setup) return false;
  const allowed = new Set([
    ...Object.keys(containerEnv({ token: '', sidecarPort: ctx.cfg.sidecarPort, socketPath: '/' })),
    ...(await ctx.driver.imageEnv(setup.image)).map((e) => e.split('=')[0]),
  ]);
  const network = containerNetwork(ctx, mustGet(ctx, id)).networkName ?? 'bridge';
  // Without a network, its socket directory must be this operator's (SANDBOX_SOCKET_DIR may have moved).
  const socketMoved = noNetwork(ctx) && !setup.binds.includes(socketDir(ctx.cfg.sidecarSocketDir, id));
  return setup.envKeys.some((k) => !allowed.has(k)) || !setup.networks.includes(network) || socketMoved;
}

/**
 * Creates a fresh container for the sandbox from its best source (snapshot image or base image;
 * existing volume or workspace archive) and waits for health. On failure nothing the sandbox had
 * before is removed: archives stay until the new container is healthy.
 */
async function recreate(ctx: SandboxContext, rec: SandboxRecord, _to: 'running'): Promise<SandboxRecord> {
  const src = await restoreSource(ctx, rec);
  if (!src.volumeExists && !src.workspaceTar) {
    const failed = await transition(ctx, rec.id, 'failed', {
      ...DOWN,
      error: 'no container, volume or workspace archive is left to resume from',
    });
    throw new RuntimeError(
      'CONFLICT',
      `sandbox ${failed.id} has nothing left to resume from; it is now failed`,
    );
  }
  // A container under the same name (a crash between create and record) would block the create.
  await ctx.driver.removeContainer(containerName(rec.id));
  if (rec.containerId) await ctx.driver.removeContainer(rec.containerId);
  const launched = await launchContainer(ctx, rec, {
    image: src.image,
    ...(src.workspaceTar ? { restoreWorkspaceTar: src.workspaceTar } : {}),
    removeVolumeOnFailure: !src.volumeExists,
  }).catch(async (e) => {
    await ctx.records.patch(rec.id, (r) => ({ ...r, ...DOWN, updatedAt: ctx.now() }));
    throw new RuntimeError(
      'PROVISION_FAILED',
      `resume failed, the sandbox stays stopped: ${(e as Error).message}`,
      {
        cause: e,
      },
    );
  });
  const dropped = await dropArchives(ctx, rec);
  const now = ctx.now();
  return transition(ctx, rec.id, 'running', {
    ...dropped,
    // The new container was made with the sandbox's own token.
    containerToken: null,
    snapshotImageId: src.snapshotImageId,
    containerId: launched.containerId,
    hostPort: launched.hostPort,
    sidecarUrl: launched.sidecarUrl,
    exposedHostPorts: launched.exposedHostPorts,
    tier: null,
    tierSince: null,
    startedAt: now,
    lastActivityAt: now,
    stopReason: null,
  });
}

/** Deletes everything of the sandbox; the record stays as a `deleted` tombstone (idempotent). */
export async function deleteSandbox(ctx: SandboxContext, id: string): Promise<SandboxRecord> {
  const rec = await ctx.records.find(id);
  if (!rec) throw new RuntimeError('NOT_FOUND', `sandbox ${id} does not exist`);
  if (rec.state === 'deleted') return rec;
  await purgeArtifacts(ctx, rec);
  return transition(ctx, id, 'deleted', {
    ...DOWN,
    tier: null,
    tierSince: null,
    snapshotImageId: null,
    snapshotArchiveDir: null,
    snapshotRemote: null,
    // Secrets have no reason to outlive the sandbox, even encrypted.
    userEnv: {},
    baseEnv: {},
  });
}

/**
 * deleteAfterStoppedSeconds ran out: everything of the sandbox is removed, as by delete, and the
 * record stays as an `expired` tombstone, so the operator reports it gone on chain (its slot freed)
 * and the owner reads why. Secrets and env go with it.
 */
export async function expireStoppedSandbox(ctx: SandboxContext, id: string): Promise<SandboxRecord> {
  const rec = mustGet(ctx, id);
  await purgeArtifacts(ctx, rec);
  return transition(ctx, id, 'expired', {
    ...DOWN,
    tier: null,
    tierSince: null,
    snapshotImageId: null,
    snapshotArchiveDir: null,
    snapshotRemote: null,
    userEnv: {},
    baseEnv: {},
    error: `deleted after being stopped for ${rec.timers.deleteAfterStoppedSeconds} s (deleteAfterStoppedSeconds); resume it within that time to keep a sandbox`,
  });
}

/** Replaces the user secrets and recreates the container (same volume, id, token, owner). */
export async function setSecrets(
  ctx: SandboxContext,
  id: string,
  userEnv: Record<string, string>,
): Promise<SandboxRecord> {
  const rec = mustGet(ctx, id);
  if (rec.state !== 'running') {
    throw new RuntimeError(
      'SANDBOX_NOT_RUNNING',
      `sandbox ${id} is ${rec.state}; resume it before changing secrets`,
    );
  }
  // Persist first: the recreated container reads them from the record.
  const updated = await ctx.records.patch(id, (r) => ({ ...r, userEnv, updatedAt: ctx.now() }));
  if (updated.containerId) await ctx.driver.removeContainer(updated.containerId);
  return recreate(ctx, { ...updated, containerId: null }, 'running').catch(async (e) => {
    // The old container is gone and the new one failed: the volume still holds the workspace.
    await transition(ctx, id, 'stopped', {
      ...DOWN,
      tier: 'hot',
      tierSince: ctx.now(),
      stoppedAt: ctx.now(),
      stopReason: 'engine',
    }).catch(() => {});
    throw e;
  });
}

/**
 * Moves a running sandbox to another image (e.g. a new sidecar release): the container is
 * recreated on the same workspace volume with the same id, token and owner; the old root
 * filesystem and snapshot image are dropped. A stopped sandbox is resumed first.
 */
export async function upgradeImage(ctx: SandboxContext, id: string, image: string): Promise<SandboxRecord> {
  const rec = mustGet(ctx, id);
  if (rec.state !== 'running') {
    throw new RuntimeError(
      'SANDBOX_NOT_RUNNING',
      `sandbox ${id} is ${rec.state}; resume it before changing its image`,
    );
  }
  if (!(await ctx.driver.inspectImage(image))) {
    throw new RuntimeError(
      'IMAGE_NOT_FOUND',
      `image ${image} is not present on this operator's engine; build or load it first`,
    );
  }
  if (rec.containerId) await ctx.driver.removeContainer(rec.containerId);
  if (rec.snapshotImageId) await ctx.driver.removeImage(rec.snapshotImageId);
  const updated = await ctx.records.patch(id, (r) => ({
    ...r,
    image,
    snapshotImageId: null,
    containerId: null,
    updatedAt: ctx.now(),
  }));
  return recreate(ctx, updated, 'running').catch(async (e) => {
    await transition(ctx, id, 'stopped', {
      ...DOWN,
      tier: 'hot',
      tierSince: ctx.now(),
      stoppedAt: ctx.now(),
      stopReason: 'engine',
    }).catch(() => {});
    throw e;
  });
}

/**
 * Commits the sandbox's filesystem (image + workspace archive). With an object store the workspace
 * archive is then sent there (sealed) and the local copy removed; the image stays in the engine
 * (the root filesystem is read-only: the workspace is what a snapshot holds of the sandbox's own).
 * If the upload fails the snapshot is kept locally and the error says so; a retry uploads again.
 */
export async function snapshotSandbox(
  ctx: SandboxContext,
  id: string,
): Promise<{ snapshotImageId: string; createdAt: number; storage: 'local' | 'object_store' }> {
  const rec = mustGet(ctx, id);
  const live = rec.containerId ? await ctx.driver.exists(rec.containerId) : undefined;
  if (!live || !(rec.state === 'running' || rec.state === 'stopped')) {
    throw new RuntimeError(
      'CONFLICT',
      `sandbox ${id} is ${rec.state} without a container; nothing to snapshot`,
    );
  }
  const snap = await takeSnapshot(ctx, rec);
  const createdAt = ctx.now();
  const taken = await ctx.records.patch(id, (r) => ({ ...r, ...snap, updatedAt: createdAt }));
  if (!ctx.objects) return { snapshotImageId: snap.snapshotImageId, createdAt, storage: 'local' };
  const ws = join(snap.snapshotArchiveDir, WORKSPACE_TAR);
  let snapshotRemote: SandboxRecord['snapshotRemote'];
  try {
    snapshotRemote = await offloadArchives(ctx, taken, { workspace: ws }, snap.snapshotImageId);
  } catch (e) {
    throw new RuntimeError(
      (e as RuntimeError).code ?? 'SNAPSHOT_STORE_UNAVAILABLE',
      `snapshot ${snap.snapshotImageId} was taken and kept on this operator's disk, but ${(e as Error).message}`,
      { cause: e },
    );
  }
  await ctx.records.patch(id, (r) => ({ ...r, snapshotRemote, updatedAt: ctx.now() }));
  await rm(ws, { force: true });
  return { snapshotImageId: snap.snapshotImageId, createdAt, storage: 'object_store' };
}
