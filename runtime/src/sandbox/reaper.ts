// The two background loops, as pure ticks over an injected clock:
// - reaper: a running sandbox idle longer than its idle timeout is stopped (reason "idle"); one
//   running longer than its max lifetime since create/resume is stopped too (reason
//   "max_lifetime"); resume starts a new lifetime interval. A stopped sandbox stopped longer than
//   its deleteAfterStoppedSeconds is deleted (everything removed, an `expired` tombstone kept so
//   the chain is told); a resume restarts that clock, since the next stop sets a new stoppedAt.
// - GC: stopped sandboxes move down a tier after each retention: hot -> warm -> cold -> gone
//   (state `expired`: nothing left to resume; the record stays as a tombstone).
// A record marked `expiryExempt` (an instance's one sandbox) is skipped by both.
// Each action re-reads the record under the sandbox's lock, so a user's resume racing a tick ends
// consistent: whichever runs second sees the other's result.
import { rm } from 'node:fs/promises';
import { removeSocketDir } from '../docker/sidecar-socket.ts';
import { type SandboxContext, transition } from './context.ts';
import { containerVanished, expireStoppedSandbox, stopSandbox } from './lifecycle.ts';
import type { SandboxRecord } from './record.ts';
import { dropRemote } from './remote-snapshots.ts';
import { demoteHotToWarm, demoteWarmToCold } from './storage.ts';

export interface TickResult {
  acted: Array<{ id: string; action: string }>;
  errors: Array<{ id: string; error: string }>;
}

export type LockFn = <R>(id: string, fn: () => Promise<R>) => Promise<R>;

/** Runs `tick` every `seconds` (never two at once; unref'd), logging its errors; returns the timer. */
export function everyTick(
  log: SandboxContext['log'],
  seconds: number,
  tick: () => Promise<TickResult>,
  what: string,
): NodeJS.Timeout {
  let running = false;
  const t = setInterval(() => {
    if (running) return;
    running = true;
    tick()
      .then((r) => {
        if (r.errors.length > 0) log.warn({ errors: r.errors }, `${what} tick had errors`);
      })
      .catch((err) => log.error({ err: String(err) }, `${what} tick failed`))
      .finally(() => {
        running = false;
      });
  }, seconds * 1000);
  t.unref();
  return t;
}

type ReapReason = 'idle' | 'max_lifetime' | 'delete_after_stopped';

function reapReason(r: SandboxRecord, now: number): ReapReason | undefined {
  if (r.expiryExempt) return undefined;
  if (r.state === 'stopped') {
    const after = r.timers.deleteAfterStoppedSeconds;
    return after !== undefined && r.stoppedAt !== null && now - r.stoppedAt >= after * 1000
      ? 'delete_after_stopped'
      : undefined;
  }
  if (r.state !== 'running') return undefined;
  if (r.startedAt !== null && now - r.startedAt >= r.timers.maxLifetimeSeconds * 1000) return 'max_lifetime';
  if (now - r.lastActivityAt >= r.timers.idleTimeoutSeconds * 1000) return 'idle';
  return undefined;
}

export async function reaperTick(ctx: SandboxContext, lock: LockFn, now: number): Promise<TickResult> {
  const out: TickResult = { acted: [], errors: [] };
  for (const candidate of ctx.records.all()) {
    if (!reapReason(candidate, now)) continue;
    try {
      await lock(candidate.id, async () => {
        const r = ctx.records.get(candidate.id);
        // Re-check under the lock: a resume or touch may have happened meanwhile.
        const reason = r && reapReason(r, now);
        if (!reason) return;
        if (reason === 'delete_after_stopped') {
          await expireStoppedSandbox(ctx, r.id);
          out.acted.push({ id: r.id, action: 'deleted:delete_after_stopped' });
        } else {
          await stopSandbox(ctx, r.id, reason);
          out.acted.push({ id: r.id, action: `stopped:${reason}` });
        }
        ctx.metrics?.reaped.inc({ reason });
      });
    } catch (e) {
      out.errors.push({ id: candidate.id, error: (e as Error).message });
    }
  }
  return out;
}

function gcStep(r: SandboxRecord, now: number, ctx: SandboxContext): 'hot' | 'warm' | 'cold' | undefined {
  if (r.state !== 'stopped' || r.expiryExempt || !r.tier || r.tierSince === null) return undefined;
  const age = (now - r.tierSince) / 1000;
  const keep = {
    hot: ctx.cfg.gcHotRetentionSeconds,
    warm: ctx.cfg.gcWarmRetentionSeconds,
    cold: ctx.cfg.gcColdRetentionSeconds,
  }[r.tier];
  return age >= keep ? r.tier : undefined;
}

export async function gcTick(ctx: SandboxContext, lock: LockFn, now: number): Promise<TickResult> {
  const out: TickResult = { acted: [], errors: [] };
  for (const candidate of ctx.records.all()) {
    if (!gcStep(candidate, now, ctx)) continue;
    try {
      await lock(candidate.id, async () => {
        const r = ctx.records.get(candidate.id);
        const from = r && gcStep(r, now, ctx);
        if (!r || !from) return;
        const action = await demote(ctx, r, from);
        out.acted.push({ id: r.id, action });
      });
    } catch (e) {
      out.errors.push({ id: candidate.id, error: (e as Error).message });
    }
  }
  return out;
}

async function demote(ctx: SandboxContext, r: SandboxRecord, from: 'hot' | 'warm' | 'cold'): Promise<string> {
  if (from === 'hot') {
    if (r.containerId && !(await ctx.driver.exists(r.containerId))) {
      await containerVanished(ctx, r);
      return 'hot:vanished';
    }
    const changes = await demoteHotToWarm(ctx, r);
    await transition(ctx, r.id, 'stopped', changes);
    ctx.metrics?.gcDemotions.inc({ from: 'hot', to: 'warm' });
    return 'hot->warm';
  }
  if (from === 'warm') {
    const changes = await demoteWarmToCold(ctx, r);
    await transition(ctx, r.id, 'stopped', changes);
    ctx.metrics?.gcDemotions.inc({ from: 'warm', to: 'cold' });
    return 'warm->cold';
  }
  // The object store's first: if it fails, nothing is gone and the next tick tries again.
  await dropRemote(ctx, r);
  if (r.snapshotArchiveDir) await rm(r.snapshotArchiveDir, { recursive: true, force: true });
  await ctx.driver.removeVolume(r.volumeName);
  await removeSocketDir(ctx.cfg.sidecarSocketDir, r.id);
  await transition(ctx, r.id, 'expired', {
    tier: null,
    tierSince: null,
    snapshotImageId: null,
    snapshotArchiveDir: null,
    snapshotRemote: null,
    userEnv: {},
    error: 'stopped past every retention; its snapshots were garbage-collected',
  });
  ctx.metrics?.gcDemotions.inc({ from: 'cold', to: 'gone' });
  return 'cold->gone';
}
