// Startup reconciliation of the store with the engine, before any new work: one labelled list of
// containers (and one of volumes) for this operator, compared with every record.
// - running record, container gone      -> stopped (snapshot or volume left) or failed
// - running record, container not running -> stopped, tier hot (the engine restarted)
// - stopped record, container running     -> stopped again (a resume that crashed half-way)
// - pending/provisioning record (crash mid-provision) -> finished if its container answers
//   /health; else its container and volume are removed and it goes back to `pending`, so the
//   create job (redelivered after the restart) provisions it afresh under the same id and call;
//   one older than RESUME_WINDOW_MS (the blueprint's default reservation expiry) is marked failed
// - a labelled container or volume with no live record -> removed; this is what happens to the
//   warm pool's unclaimed containers after a kill -9 (they never have a record; the pool refills)
// - a claim of a pooled container cut short (record still provisioning with the pool's bootstrap
//   token) -> its container and volume removed, back to `pending`: provisioned again cold

import type { ManagedContainer } from '../docker/driver.ts';
import { probeHealth } from '../docker/health.ts';
import { volumeName } from '../docker/labels.ts';
import { type SandboxContext, transition } from './context.ts';
import { dropForkCopy } from './fork.ts';
import { pickExposed } from './launch.ts';
import { containerVanished } from './lifecycle.ts';
import { provisionKey } from './provision-progress.ts';
import type { LockFn } from './reaper.ts';
import type { SandboxRecord } from './record.ts';
import { noNetwork, startedAddress } from './sidecar-address.ts';

/** A cut-short provision is started over only this long after it began (1 hour). */
export const RESUME_WINDOW_MS = 3_600_000;

export interface ReconcileReport {
  records: number;
  containers: number;
  finished: string[];
  /** Provisions cut short by a restart, back to `pending` for their create job to resume. */
  resumed: string[];
  failed: string[];
  stopped: string[];
  removedContainers: string[];
  removedVolumes: string[];
  durationMs: number;
}

export async function reconcile(
  ctx: SandboxContext,
  lock: LockFn,
  /** Sandbox ids of a running warm pool's containers: not leftovers. */
  pooled: ReadonlySet<string> = new Set(),
): Promise<ReconcileReport> {
  const t0 = performance.now();
  const { driver, cfg } = ctx;
  const containers = await driver.listManaged(cfg.operatorId);
  const bySandbox = new Map<string, ManagedContainer[]>();
  for (const c of containers) {
    const key = c.sandboxId ?? '';
    bySandbox.set(key, [...(bySandbox.get(key) ?? []), c]);
  }
  const report: ReconcileReport = {
    records: 0,
    containers: containers.length,
    finished: [],
    resumed: [],
    failed: [],
    stopped: [],
    removedContainers: [],
    removedVolumes: [],
    durationMs: 0,
  };
  const records = ctx.records.all();
  report.records = records.length;
  const removeContainer = async (c: ManagedContainer) => {
    await driver.removeContainer(c.id);
    report.removedContainers.push(c.id);
  };

  await Promise.all(
    records.map((snapshot) =>
      lock(snapshot.id, async () => {
        const r = ctx.records.get(snapshot.id);
        if (!r) return;
        const mine = bySandbox.get(r.id) ?? [];
        bySandbox.delete(r.id);
        const current = mine.find((c) => c.id === r.containerId);
        // Containers of this sandbox the record does not point at are leftovers of a crash.
        for (const c of mine) if (c !== current) await removeContainer(c);
        await reconcileOne(ctx, r, current, report, removeContainer);
      }),
    ),
  );

  // Whatever is left has no record at all.
  for (const [id, list] of bySandbox) if (!pooled.has(id)) for (const c of list) await removeContainer(c);
  const live = new Set([
    ...ctx.records
      .all()
      .filter((r) => ['running', 'stopped', 'provisioning', 'pending'].includes(r.state))
      .map((r) => r.volumeName),
    ...[...pooled].map(volumeName),
  ]);
  for (const v of await driver.listManagedVolumes(cfg.operatorId)) {
    if (live.has(v.name)) continue;
    await driver.removeVolume(v.name);
    report.removedVolumes.push(v.name);
  }
  report.durationMs = performance.now() - t0;
  ctx.log.info(
    {
      ...report,
      finished: report.finished.length,
      resumed: report.resumed.length,
      failed: report.failed.length,
    },
    'reconciled with engine',
  );
  return report;
}

async function reconcileOne(
  ctx: SandboxContext,
  r: SandboxRecord,
  c: ManagedContainer | undefined,
  report: ReconcileReport,
  removeContainer: (c: ManagedContainer) => Promise<void>,
): Promise<void> {
  switch (r.state) {
    case 'running': {
      // Not in the list taken at the start: re-check once (a create may have finished since).
      if (!c && r.containerId && (await ctx.driver.exists(r.containerId))?.running) return;
      if (!c) {
        const after = await containerVanished(ctx, r);
        (after.state === 'failed' ? report.failed : report.stopped).push(r.id);
      } else if (c.state !== 'running') {
        const now = ctx.now();
        await transition(ctx, r.id, 'stopped', {
          hostPort: null,
          sidecarUrl: null,
          exposedHostPorts: {},
          tier: 'hot',
          tierSince: now,
          stoppedAt: now,
          stopReason: 'engine',
        });
        report.stopped.push(r.id);
      }
      return;
    }
    case 'stopped': {
      if (c && c.state === 'running') await ctx.driver.stop(c.id, ctx.cfg.stopTimeoutSeconds);
      if (r.tier === 'hot' && r.containerId && !c) {
        await containerVanished(ctx, r);
        report.stopped.push(r.id);
      }
      return;
    }
    case 'pending':
    case 'provisioning':
      return finishOrFail(ctx, r, c, report, removeContainer);
    default:
      // failed / expired / deleted keep no container.
      if (c) await removeContainer(c);
  }
}

async function finishOrFail(
  ctx: SandboxContext,
  r: SandboxRecord,
  c: ManagedContainer | undefined,
  report: ReconcileReport,
  removeContainer: (c: ManagedContainer) => Promise<void>,
): Promise<void> {
  const key = provisionKey(r.serviceId, r.callId);
  const progress = await ctx.provisions.get(key);
  const now = ctx.now();
  // A claim cut short may have rotated the token or not, and may lack the user env: start over.
  const claim = !!r.containerToken;
  if (c && c.state === 'running' && !claim) {
    const port = c.loopbackPorts[ctx.cfg.sidecarPort] ?? 0;
    // A sandbox without a network publishes no port: its sidecar is on its socket.
    const at = port > 0 || noNetwork(ctx) ? startedAddress(ctx, r.id, port) : undefined;
    if (at && (await probeHealth(at.addr, 1000))) {
      await transition(ctx, r.id, r.state === 'pending' ? 'provisioning' : r.state).catch(() => {});
      await transition(ctx, r.id, 'running', {
        containerId: c.id,
        hostPort: at.hostPort,
        sidecarUrl: at.sidecarUrl,
        exposedHostPorts: pickExposed(r, c.loopbackPorts),
        startedAt: now,
        lastActivityAt: now,
      });
      if (progress) {
        await ctx.provisions.put(key, {
          ...progress,
          phase: 'ready',
          phases: [...progress.phases, { phase: 'ready', at: now }],
          updatedAt: now,
        });
      }
      // A fork's container starts only after its copy was restored: the copy is no longer needed.
      if (r.source) await dropForkCopy(ctx, r).catch(() => {});
      report.finished.push(r.id);
      return;
    }
  }
  if (c) await removeContainer(c);
  await ctx.driver.removeVolume(r.volumeName);
  const phase = progress?.phase ?? r.state;
  if (progress && progress.phase !== 'failed' && now - progress.startedAt < RESUME_WINDOW_MS) {
    // Nothing usable was kept; the record (id, token, request) is, so the redelivered create job
    // provisions it again from the start and posts one result.
    if (r.state !== 'pending') {
      await transition(ctx, r.id, 'pending', { containerId: null, containerToken: null, hostPort: null });
    } else if (r.containerId) await ctx.records.patch(r.id, (x) => ({ ...x, containerId: null }));
    await ctx.provisions.put(key, {
      ...progress,
      phase: 'queued',
      phases: [...progress.phases, { phase: 'queued', at: now }],
      updatedAt: now,
    });
    ctx.log.info(
      { sandboxId: r.id, callId: r.callId, phase },
      'provision cut short by a restart; it will be resumed',
    );
    report.resumed.push(r.id);
    return;
  }
  const reason = `the operator restarted during provisioning (phase ${phase}) and could not resume it; nothing of it was kept`;
  await transition(ctx, r.id, 'failed', {
    containerId: null,
    hostPort: null,
    sidecarUrl: null,
    exposedHostPorts: {},
    error: reason,
  });
  if (progress) {
    await ctx.provisions.put(key, {
      ...progress,
      phase: 'failed',
      failedPhase: progress.phase,
      phases: [...progress.phases, { phase: 'failed', at: now }],
      error: reason,
      updatedAt: now,
    });
  }
  ctx.metrics?.failures.inc();
  report.failed.push(r.id);
}
