// What the runtime does about a Docker engine that went away and came back (engine-watch.ts):
// - every running sandbox whose container the restart stopped is started again: the same
//   container (id, workspace volume, token in its env), its sidecar at its new address;
// - a provision the outage cut short waits for the engine (SANDBOX_ENGINE_WAIT_MS, counted from the
//   loss), removes what its attempt left and starts over under the same sandbox id, so its create
//   ends with one outcome; an engine that stays away fails it with ENGINE_UNAVAILABLE.
import { engineGone, engineUnavailable } from '../docker/docker-errors.ts';
import type { AdoptionProgress } from '../docker/engine-watch.ts';
import { containerName } from '../docker/labels.ts';
import { isRuntimeError } from '../errors.ts';
import { mustGet, type SandboxContext, transition } from './context.ts';
import { resumeSandbox, stopSandbox } from './lifecycle.ts';
import type { ProvisionTracker } from './provision-progress.ts';
import type { LockFn } from './reaper.ts';
import type { SandboxRecord } from './record.ts';

/** A provision starts over at most this many times for engine losses before it fails. */
export const MAX_ENGINE_RETRIES = 3;

export interface AdoptReport {
  /** Running sandboxes whose container was started again. */
  restarted: string[];
  /** Running sandboxes whose container kept running (an engine with live-restore). */
  kept: string[];
  /** Sandboxes that could not be brought back, with why (they stay stopped, reason `engine`). */
  failed: Array<{ id: string; error: string }>;
}

/** Brings back every running sandbox's container after the engine returned (a few at a time). */
export async function adoptSandboxes(
  ctx: SandboxContext,
  lock: LockFn,
  progress: (p: AdoptionProgress) => void = () => {},
  parallel = 4,
): Promise<AdoptReport> {
  const report: AdoptReport = { restarted: [], kept: [], failed: [] };
  const queue = ctx.records.all().filter((r) => r.state === 'running');
  const total = queue.length;
  let done = 0;
  const tell = () => progress({ total, adopted: done - report.failed.length, failed: report.failed.length });
  tell();
  const worker = async () => {
    for (let r = queue.shift(); r; r = queue.shift()) {
      const id = r.id;
      await lock(id, () => adoptOne(ctx, id))
        .then((how) => how && report[how].push(id))
        .catch((e: unknown) => {
          report.failed.push({ id, error: e instanceof Error ? e.message : String(e) });
          ctx.log.warn(
            { sandboxId: id, err: String(e) },
            'could not bring a sandbox back after the engine returned',
          );
        })
        .finally(() => {
          done++;
          tell();
        });
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  ctx.log.info(
    { restarted: report.restarted.length, kept: report.kept.length, failed: report.failed.length },
    'sandboxes adopted after the engine returned',
  );
  return report;
}

/** One running sandbox (caller holds its lock): its container started again if it stopped. */
export async function adoptOne(ctx: SandboxContext, id: string): Promise<'restarted' | 'kept' | undefined> {
  const r = ctx.records.get(id);
  if (r?.state !== 'running') return undefined;
  const c = r.containerId ? await ctx.driver.exists(r.containerId) : undefined;
  if (c?.running) return 'kept';
  const now = ctx.now();
  // Stopped by the engine, its container kept as it is (no snapshot): resume starts that same
  // container, or makes a new one from the volume when the engine lost it.
  await transition(ctx, id, 'stopped', {
    hostPort: null,
    sidecarUrl: null,
    exposedHostPorts: {},
    tier: 'hot',
    tierSince: now,
    stoppedAt: now,
    stopReason: 'engine',
  });
  await resumeSandbox(ctx, id);
  return 'restarted';
}

/**
 * Called when a provision attempt failed: true when the engine was lost during it (the error
 * says so, or an outage began since the attempt started) and is back, with the attempt's
 * container and volume removed and the record back to `pending`, ready to start over. False
 * leaves the failure to be recorded; an engine that did not return makes `e` ENGINE_UNAVAILABLE.
 */
export async function outlastEngineLoss(
  ctx: SandboxContext,
  rec: SandboxRecord,
  tracker: ProvisionTracker,
  failure: { error: unknown; epoch: number; attempt: number },
): Promise<{ retry: true } | { retry: false; error: unknown }> {
  const { error, epoch, attempt } = failure;
  const gone = ctx.engine.noteError(error) || isRuntimeError(error, 'ENGINE_UNAVAILABLE');
  // Not plainly the engine: an outage since the attempt began (or one now) still explains it.
  if (!gone && ctx.engine.epoch === epoch && (await ctx.engine.confirm())) return { retry: false, error };
  if (attempt >= MAX_ENGINE_RETRIES) return { retry: false, error };
  const log = ctx.log.child({ sandboxId: rec.id, callId: rec.callId });
  log.warn(
    { phase: tracker.current.phase },
    'the Docker engine went away during this provision; waiting for it',
  );
  if (!(await ctx.engine.waitUntilBack())) {
    const waited = `gone since ${new Date(ctx.engine.status().downSince ?? ctx.now()).toISOString()}, waited ${ctx.cfg.engineWaitMs} ms`;
    const seen = gone || engineGone(error) ? error : { code: 'lost during the provision', cause: error };
    return { retry: false, error: engineUnavailable(seen, waited) };
  }
  // What this attempt left: its container (by name: the engine may have made it unseen) and its
  // fresh volume. A failure here is an ordinary failure of the provision.
  try {
    await ctx.driver.removeContainer(containerName(rec.id));
    const cur = ctx.records.get(rec.id);
    if (cur?.containerId) await ctx.driver.removeContainer(cur.containerId);
    await ctx.driver.removeVolume(rec.volumeName);
  } catch (e) {
    return { retry: false, error: e };
  }
  const cur = ctx.records.get(rec.id);
  if (cur?.state === 'provisioning')
    await transition(ctx, rec.id, 'pending', { containerId: null, hostPort: null });
  else if (cur?.containerId) await ctx.records.patch(rec.id, (x) => ({ ...x, containerId: null }));
  await tracker.enter('queued');
  log.info({ attempt: attempt + 1 }, 'the Docker engine is back; provisioning again from the start');
  return { retry: true };
}

/**
 * A sandbox the engine stopped, brought back (the instance keeper's call; caller holds the lock):
 * a running record whose container is not running is stopped (reason `engine`) and resumed, and
 * a sandbox stopped by the engine is resumed. A stop by its owner or its timers is left alone.
 */
export async function restartIfEngineStopped(ctx: SandboxContext, id: string): Promise<SandboxRecord> {
  let r = mustGet(ctx, id);
  if (r.state === 'running') {
    const c = r.containerId ? await ctx.driver.exists(r.containerId) : undefined;
    if (c?.running) return r;
    ctx.log.warn({ sandboxId: id }, 'the container of a running sandbox is not running; restarting it');
    r = await stopSandbox(ctx, id, 'engine');
  }
  if (r.state === 'stopped' && r.stopReason === 'engine') return resumeSandbox(ctx, id);
  return r;
}
