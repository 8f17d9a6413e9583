// Where the sandbox lifecycle meets the policy enforcer: which network and MAC a container is
// created with, bringing a policed sandbox in force before each start, and taking it out when it
// stops, fails, expires or is deleted.
import { RuntimeError } from '../../errors.ts';
import type { SandboxContext } from '../context.ts';
import type { SandboxRecord } from '../record.ts';

/** The network (and, for a policed sandbox, the MAC) a container of `rec` is created with. */
export function containerNetwork(
  ctx: SandboxContext,
  rec: Pick<SandboxRecord, 'id' | 'network'>,
): { networkName: string | undefined; macAddress?: string; dns?: string[] } {
  // Without a network (SANDBOX_EGRESS=none) there is nothing to police.
  if (!rec.network || ctx.network.name === 'none') return { networkName: ctx.network.name };
  const p = ctx.policy;
  if (!p) throw policyUnavailable(ctx);
  // The engine's embedded DNS forwards to the gateway, never to a loopback resolver (which a newer
  // engine would query from the host's namespace, past the redirect): the rules send it on to the
  // sandbox's own resolver.
  return { networkName: p.networkName, macAddress: p.mac(rec.id), dns: [p.gateway] };
}

/** Before any start of `rec`'s container: its rules, set and resolver are in force. */
export async function beforeStart(ctx: SandboxContext, rec: Pick<SandboxRecord, 'id' | 'network'>) {
  if (!rec.network || ctx.network.name === 'none') return;
  const p = ctx.policy;
  if (!p) throw policyUnavailable(ctx);
  await p.activate(rec.id, rec.network);
}

/** After each start of `rec`'s container (`ips`: its address per network): see PolicyEnforcer.started. */
export async function afterStart(
  ctx: SandboxContext,
  rec: Pick<SandboxRecord, 'id' | 'network'>,
  ips: Record<string, string> | undefined,
): Promise<void> {
  if (!rec.network || ctx.network.name === 'none' || !ctx.policy) return;
  const ip = ips?.[ctx.policy.networkName];
  if (!ip) return;
  // Best effort: without it the sandbox is only unreachable until the old entry ages out.
  await ctx.policy
    .started(rec.id, ip)
    .catch((err) =>
      ctx.log.warn({ sandboxId: rec.id, err: String(err) }, 'could not set the neighbour entry'),
    );
}

/** After a transition: a policed sandbox that is no longer running is taken out of force. */
export async function afterTransition(ctx: SandboxContext, rec: SandboxRecord): Promise<void> {
  if (!rec.network || !ctx.policy || rec.state === 'running' || rec.state === 'provisioning') return;
  if (rec.state === 'pending') return;
  await ctx.policy
    .release(rec.id)
    .catch((err) =>
      ctx.log.warn(
        { sandboxId: rec.id, err: String(err) },
        'could not take a sandbox network policy out of force',
      ),
    );
}

function policyUnavailable(_ctx: SandboxContext) {
  return new RuntimeError(
    'NETWORK_POLICY_UNAVAILABLE',
    'this sandbox has a network policy, but the operator could not set up its enforcement (see its log); it stays stopped',
  );
}
