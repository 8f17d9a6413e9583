// Keeps the enforcement of per-sandbox network policies in step with the records: a policed
// sandbox is "in force" (its set, its rules, its resolver) from before its container starts until
// it stops; a stop, failure, expiry or delete takes it out (its resolver ends, its rules and set
// go). At open, the running records with a policy are put back in force (sets kept as they are,
// rules rebuilt, resolvers started again) and what no record claims is removed. Closing ends the
// resolvers and leaves the rules: a sandbox running while its operator is down resolves nothing
// new and reaches only what it had resolved (the shared table rejects anything unmarked).
import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { ensureBridgeNetwork } from '../../docker/sandbox-network.ts';
import { RuntimeError } from '../../errors.ts';
import { effectiveDomains, type NetworkPolicy } from '../network-policy.ts';
import {
  type RunningResolver,
  removeResolverFiles,
  resolvConfServers,
  startResolver,
  sweepResolvers,
} from './resolver.ts';
import {
  applyNft,
  listSets,
  operatorTableScript,
  POLICY_BRIDGE,
  type PolicedSandbox,
  sandboxMac,
  setName,
  sharedTableScript,
} from './rules.ts';

export interface PolicyEnforcerOptions {
  operatorId: string;
  implicitDomains: readonly string[];
  /** Upstream resolvers (`ip` or `ip#port`); empty: the host's /etc/resolv.conf. */
  upstream: readonly string[];
  /** Where resolver configs and pid files live (0700). */
  dir: string;
  docker: Docker;
  log: Logger;
  nft?: string;
  dnsmasq?: string;
  /** iproute2's `ip` (the host's neighbour entries of started sandboxes). */
  ip?: string;
}

interface InForce {
  policy: NetworkPolicy;
  resolver: RunningResolver;
}

export class PolicyEnforcer {
  readonly #o: PolicyEnforcerOptions;
  readonly #active = new Map<string, InForce>();
  #gateway = '';
  #upstream: string[] = [];
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;
  readonly networkName: string;

  private constructor(o: PolicyEnforcerOptions, networkName: string) {
    this.#o = o;
    this.networkName = networkName;
  }

  /** The policy bridge, the shared table, this operator's table; leftovers of a killed run swept. */
  static async open(o: PolicyEnforcerOptions): Promise<PolicyEnforcer> {
    const net = await ensureBridgeNetwork(o.docker, 'policy');
    if (!net.name || !net.gateway) {
      throw new RuntimeError('EGRESS_RULES', 'the sandbox policy network has no IPv4 gateway');
    }
    const e = new PolicyEnforcer(o, net.name);
    e.#gateway = net.gateway;
    e.#upstream = [...o.upstream];
    if (e.#upstream.length === 0) {
      e.#upstream = resolvConfServers(await readFile('/etc/resolv.conf', 'utf8').catch(() => ''));
    }
    if (e.#upstream.length === 0) {
      throw new RuntimeError(
        'EGRESS_RULES',
        'no upstream resolver for the sandbox resolvers: /etc/resolv.conf names none; set SANDBOX_DNS_UPSTREAM',
      );
    }
    await sweepResolvers(o.dir);
    await applyNft(sharedTableScript(), o.nft);
    await applyNft(operatorTableScript(o.operatorId, []), o.nft);
    return e;
  }

  /** The policy bridge's gateway (where the resolvers listen). */
  get gateway(): string {
    return this.#gateway;
  }

  /** The MAC a policed sandbox's container is created with (its rules are keyed by it). */
  mac(sandboxId: string): string {
    return sandboxMac(sandboxId);
  }

  #serial<R>(fn: () => Promise<R>): Promise<R> {
    const next = this.#queue.then(fn, fn);
    this.#queue = next.catch(() => {});
    return next;
  }

  /** Puts the records that are running with a policy back in force; removes every other set. */
  rebuild(records: ReadonlyArray<{ id: string; state: string; network?: NetworkPolicy | undefined }>) {
    return this.#serial(async () => {
      for (const r of records) {
        if (r.network && r.state === 'running' && !this.#active.has(r.id)) {
          this.#active.set(r.id, { policy: r.network, resolver: await this.#startResolver(r.id, r.network) });
        }
      }
      await this.#apply();
    });
  }

  /** Brings sandbox `id` under `policy` before its container starts (idempotent). */
  activate(id: string, policy: NetworkPolicy): Promise<void> {
    return this.#serial(async () => {
      if (this.#closed) throw new RuntimeError('INTERNAL', 'the policy enforcer is closed');
      if (this.#active.has(id)) return;
      const resolver = await this.#startResolver(id, policy);
      this.#active.set(id, { policy, resolver });
      try {
        await this.#apply();
      } catch (e) {
        this.#active.delete(id);
        await resolver.stop();
        throw e;
      }
    });
  }

  /**
   * After sandbox `id`'s container started at `ip` on the policy bridge: the host's neighbour
   * entry for `ip` names the sandbox's MAC. Policed sandboxes have MACs of their own, not Docker's
   * IP-derived ones, so an IP handed on from a deleted sandbox still maps to the old MAC on the
   * host until that entry ages out (~30 s): the new sandbox would be unreachable meanwhile (its
   * health check fails) unless it happens to ARP first, which a gVisor sandbox does not.
   */
  started(id: string, ip: string): Promise<void> {
    if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(ip)) return Promise.resolve();
    const args = ['neigh', 'replace', ip, 'lladdr', sandboxMac(id), 'dev', POLICY_BRIDGE, 'nud', 'reachable'];
    return new Promise((resolve, reject) =>
      execFile(this.#o.ip ?? 'ip', args, { timeout: 10_000 }, (e, _out, err) =>
        e
          ? reject(
              new RuntimeError(
                'EGRESS_RULES',
                `could not set the host's neighbour entry of ${ip}: ${err || e.message}`,
              ),
            )
          : resolve(),
      ),
    );
  }

  /** Takes sandbox `id` out of force: its resolver ends, its rules and set are removed. */
  release(id: string): Promise<void> {
    return this.#serial(async () => {
      const a = this.#active.get(id);
      this.#active.delete(id);
      await a?.resolver.stop();
      await removeResolverFiles(this.#o.dir, id);
      await this.#apply();
    });
  }

  /** The sandboxes in force (tests and diagnostics). */
  get inForce(): string[] {
    return [...this.#active.keys()];
  }

  /** Where sandbox `id`'s resolver listens, when in force (tests and diagnostics). */
  resolverOf(id: string): { host: string; port: number; pid: number | undefined } | undefined {
    const a = this.#active.get(id);
    return a && { host: a.resolver.spec.host, port: a.resolver.spec.port, pid: a.resolver.child.pid };
  }

  /** Ends the resolvers; the rules stay (fail-closed while the operator is down). */
  close(): Promise<void> {
    return this.#serial(async () => {
      this.#closed = true;
      for (const a of this.#active.values()) await a.resolver.stop();
      this.#active.clear();
    });
  }

  async #apply(): Promise<void> {
    const inForce: PolicedSandbox[] = [...this.#active.entries()].map(([id, a]) => ({
      id,
      mac: sandboxMac(id),
      resolver: { host: a.resolver.spec.host, port: a.resolver.spec.port },
    }));
    const keep = new Set(inForce.map((s) => setName(s.id)));
    const stale = (await listSets(this.#o.operatorId, this.#o.nft)).filter((n) => !keep.has(n));
    await applyNft(operatorTableScript(this.#o.operatorId, inForce, stale), this.#o.nft);
  }

  async #startResolver(id: string, policy: NetworkPolicy): Promise<RunningResolver> {
    let last: unknown;
    // A port found free can be taken before dnsmasq binds it: another is tried.
    for (let attempt = 0; attempt < 5; attempt++) {
      const port = await freeDnsPort(this.#gateway);
      try {
        const r = await startResolver(
          this.#o.dir,
          {
            sandboxId: id,
            operatorId: this.#o.operatorId,
            host: this.#gateway,
            port,
            domains: effectiveDomains(policy, this.#o.implicitDomains),
            upstream: this.#upstream,
          },
          this.#o.dnsmasq,
        );
        r.child.once('exit', (code, signal) => this.#exited(id, r, code, signal));
        return r;
      } catch (e) {
        last = e;
        if (!/address already in use/i.test((e as Error).message)) throw e;
      }
    }
    throw last;
  }

  /** A resolver that died on its own is started again (its sandbox would resolve nothing). */
  #exited(id: string, r: RunningResolver, code: number | null, signal: string | null): void {
    const a = this.#active.get(id);
    if (this.#closed || a?.resolver !== r) return;
    this.#o.log.warn({ sandboxId: id, code, signal }, 'a sandbox resolver exited; starting it again');
    void this.#serial(async () => {
      if (this.#active.get(id)?.resolver !== r) return;
      this.#active.set(id, { policy: a.policy, resolver: await this.#startResolver(id, a.policy) });
      await this.#apply();
    }).catch((err) =>
      this.#o.log.error({ sandboxId: id, err: String(err) }, 'could not restart a sandbox resolver'),
    );
  }
}

/** A port free for both UDP and TCP on `host`. */
export async function freeDnsPort(host: string): Promise<number> {
  for (;;) {
    const udp = createSocket('udp4');
    udp.bind(0, host);
    await once(udp, 'listening');
    const port = udp.address().port;
    const tcp = createServer();
    const ok = await new Promise<boolean>((resolve) => {
      tcp.once('error', () => resolve(false));
      tcp.listen(port, host, () => resolve(true));
    });
    udp.close();
    if (ok) {
      await new Promise((r) => tcp.close(r));
      return port;
    }
  }
}

/**
 * Why this host cannot enforce per-sandbox policies (undefined: it can): nftables and dnsmasq are
 * needed (and root, which installing the rules then checks).
 */
export async function policyUnavailableReason(nft = 'nft', dnsmasq = 'dnsmasq'): Promise<string | undefined> {
  const works = (bin: string) =>
    new Promise<boolean>((resolve) => execFile(bin, ['--version'], { timeout: 10_000 }, (e) => resolve(!e)));
  if (!(await works(nft))) return 'nft (nftables) is not installed';
  if (!(await works(dnsmasq))) return 'dnsmasq is not installed (apt-get install dnsmasq-base)';
  return undefined;
}
