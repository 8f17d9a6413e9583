// Brings up one sandbox container — create (the workspace volume comes with it), optionally
// restore a workspace archive, start, wait for the sidecar's /health — and undoes it on failure.
import { WORKSPACE_PATH } from '../docker/container-spec.ts';
import { waitForHealth } from '../docker/health.ts';
import { containerName, sandboxLabels } from '../docker/labels.ts';
import { removeSocketDir } from '../docker/sidecar-socket.ts';
import { restoreIntoVolume } from '../docker/workspace-restore.ts';
import { RuntimeError } from '../errors.ts';
import type { SandboxContext } from './context.ts';
import { afterStart, beforeStart, containerNetwork } from './egress-policy/hooks.ts';
import { deliverUserEnv } from './env-delivery.ts';
import type { SandboxRecord } from './record.ts';
import { mountedSidecarFor } from './registry-images.ts';
import { runtimeOf } from './runtimes.ts';
import { noNetwork, prepareSidecarSocket, sandboxContainerEnv, startedAddress } from './sidecar-address.ts';

export interface LaunchOptions {
  image: string;
  /** A workspace.tar (from archivePath of /home/agent) to extract before start. */
  restoreWorkspaceTar?: string;
  /** Test hook: replaces the image command. */
  cmd?: string[];
  /** Remove the workspace volume too when the launch fails (it held nothing yet). */
  removeVolumeOnFailure: boolean;
  onPhase?: (phase: 'container_create' | 'container_start' | 'health_check') => Promise<void>;
  /** Called as soon as the container exists, so a crash after this point leaves a findable id. */
  onCreated?: (containerId: string) => Promise<void>;
}

export interface Launched {
  containerId: string;
  /** null for a sandbox without a network (its sidecarUrl is `unix:<socket>`). */
  hostPort: number | null;
  sidecarUrl: string;
  exposedHostPorts: Record<string, number>;
}

/** The sandbox's exposed container ports → the loopback host ports the engine chose this start. */
export function pickExposed(
  rec: Pick<SandboxRecord, 'exposedPorts'>,
  loopbackPorts: Record<number, number>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of rec.exposedPorts ?? []) {
    const host = loopbackPorts[p];
    if (host && host > 0) out[String(p)] = host;
  }
  return out;
}

export async function launchContainer(
  ctx: SandboxContext,
  rec: SandboxRecord,
  opts: LaunchOptions,
): Promise<Launched> {
  const { cfg, driver } = ctx;
  let containerId: string | undefined;
  try {
    await opts.onPhase?.('container_create');
    const socketDir = await prepareSidecarSocket(ctx, rec.id);
    const mountedSidecar = await mountedSidecarFor(ctx, rec, opts.image);
    containerId = await driver.createContainer({
      name: containerName(rec.id),
      image: opts.image,
      env: sandboxContainerEnv(ctx, rec),
      labels: sandboxLabels(rec, 'sandbox', cfg.extraLabels),
      volumeName: rec.volumeName,
      volumeLabels: sandboxLabels(rec, 'workspace', cfg.extraLabels),
      sidecarPort: cfg.sidecarPort,
      cpuCores: rec.resources.cpuCores,
      memoryMb: rec.resources.memoryMb,
      diskGb: rec.resources.diskGb,
      enforceDisk: rec.resources.diskEnforced,
      workspaceDisk: rec.resources.workspaceDisk === 'loop-ext4',
      pidsLimit: cfg.pidsLimit,
      tmpfsSizeMb: cfg.tmpfsSizeMb,
      exposedPorts: rec.exposedPorts ?? [],
      ...containerNetwork(ctx, rec),
      socketDir,
      runtime: runtimeOf(rec),
      mountedSidecar,
      ...(opts.cmd ? { cmd: opts.cmd } : {}),
    });
    await opts.onCreated?.(containerId);
    if (opts.restoreWorkspaceTar) {
      await restoreIntoVolume(driver, {
        // The never-started helper that takes the archive is made from our own image.
        image: mountedSidecar ? cfg.image : opts.image,
        volumeName: rec.volumeName,
        mountPath: WORKSPACE_PATH,
        file: opts.restoreWorkspaceTar,
        labels: sandboxLabels(rec, 'sandbox', cfg.extraLabels),
      });
    }
    await opts.onPhase?.('container_start');
    // Where a launch's time goes, step by step (one log line; bench/lib/timeline.ts reads it).
    const t = { t0: performance.now(), started: 0, healthy: 0, env: 0 };
    await beforeStart(ctx, rec);
    const started = await driver.start(containerId, noNetwork(ctx) ? undefined : cfg.sidecarPort);
    await afterStart(ctx, rec, started.ips);
    t.started = performance.now();
    const at = startedAddress(ctx, rec.id, started.hostPort);
    await opts.onPhase?.('health_check');
    const health = await waitForHealth(at.addr, {
      timeoutMs: cfg.healthTimeoutMs,
      intervalMs: cfg.healthIntervalMs,
      maxIntervalMs: cfg.healthMaxIntervalMs,
      abort: started.exited,
    });
    started.cancel();
    if (!health.ok) {
      const timedOut = health.reason.startsWith('sidecar did not answer');
      throw new RuntimeError(timedOut ? 'HEALTH_CHECK_TIMEOUT' : 'PROVISION_FAILED', health.reason);
    }
    t.healthy = performance.now();
    await deliverUserEnv(at.addr, rec, cfg.healthTimeoutMs);
    t.env = performance.now();
    ctx.log.info(
      {
        sandboxId: rec.id,
        callId: rec.callId,
        ms: {
          start: Math.round(t.started - t.t0),
          health: Math.round(t.healthy - t.started),
          env: Math.round(t.env - t.healthy),
          polls: health.attempts,
        },
      },
      'sandbox launch steps',
    );
    return {
      containerId,
      hostPort: at.hostPort,
      sidecarUrl: at.sidecarUrl,
      exposedHostPorts: pickExposed(rec, started.loopbackPorts),
    };
  } catch (e) {
    // Best effort: a cleanup failure must not hide the original error.
    if (containerId) await driver.removeContainer(containerId).catch((err) => logCleanup(ctx, rec.id, err));
    if (rec.network) await ctx.policy?.release(rec.id).catch((err) => logCleanup(ctx, rec.id, err));
    if (opts.removeVolumeOnFailure) {
      await driver.removeVolume(rec.volumeName).catch((err) => logCleanup(ctx, rec.id, err));
      await removeSocketDir(cfg.sidecarSocketDir, rec.id).catch((err) => logCleanup(ctx, rec.id, err));
    }
    throw e;
  }
}

function logCleanup(ctx: SandboxContext, sandboxId: string, err: unknown): void {
  ctx.log.warn({ sandboxId, err: String(err) }, 'cleanup after a failed launch did not finish');
}
