// A create served by the warm pool: the admitted record (own id taken from the pooled container,
// own token, owner, env) takes the container over. One authenticated PUT /env with the pool's
// bootstrap token hands the sidecar the user's env and the sandbox's own token, after which the
// bootstrap token is refused. Phases: queued -> pool_claim -> ready. If the pooled container
// fails at the claim it is removed and the create goes on cold under the same record.
import { type SandboxContext, transition } from './context.ts';
import { deliverUserEnv } from './env-delivery.ts';
import { failProvision, markReady, type ProvisionHooks, runProvision, trackPhases } from './provisioner.ts';
import type { SandboxRecord } from './record.ts';
import { startedAddress } from './sidecar-address.ts';
import type { PoolEntry, WarmPool } from './warm-pool.ts';

export async function runClaim(
  ctx: SandboxContext,
  pool: WarmPool,
  rec: SandboxRecord,
  entry: PoolEntry,
  hooks: ProvisionHooks = {},
): Promise<SandboxRecord> {
  const tracking = await trackPhases(ctx, rec, hooks);
  const { tracker, enter } = tracking;
  const log = ctx.log.child({ sandboxId: rec.id, callId: rec.callId });
  let current: SandboxRecord;
  try {
    await enter('pool_claim');
    // Container id and bootstrap token are recorded before the rotation: a crash from here on is
    // found by reconcile (which starts such a claim over cold).
    current = await transition(ctx, rec.id, 'provisioning', {
      containerId: entry.containerId,
      containerToken: entry.token,
      // As a cold create records it: the size asked for, enforced or not as the container is.
      resources: { ...entry.resources, diskGb: rec.resources.diskGb },
    });
  } catch (e) {
    await pool.destroy(entry);
    return failProvision(ctx, rec, tracker, e);
  }
  const at = startedAddress(ctx, entry.id, entry.hostPort ?? 0);
  try {
    await deliverUserEnv(at.addr, current, ctx.cfg.healthTimeoutMs, entry.token);
  } catch (e) {
    log.warn({ err: String(e) }, 'pooled container failed at its claim; removing it and provisioning cold');
    await pool.destroy(entry);
    await transition(ctx, rec.id, 'pending', { containerId: null, containerToken: null }).catch(() => {});
    return runProvision(ctx, ctx.records.get(rec.id) ?? rec, hooks, tracking);
  }
  try {
    current = await markReady(ctx, rec.id, enter, {
      hostPort: entry.hostPort,
      sidecarUrl: entry.sidecarUrl,
      exposedHostPorts: entry.exposedHostPorts,
    });
    log.info({ hostPort: entry.hostPort }, 'sandbox ready (claimed from the warm pool)');
    return current;
  } catch (e) {
    await pool.destroy(entry);
    return failProvision(ctx, rec, tracker, e);
  }
}
