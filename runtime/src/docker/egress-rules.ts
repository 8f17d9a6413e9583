// Host firewall rules that enforce a sandbox network's egress policy, in chains of our own:
// forwarded traffic from the bridge is filtered from DOCKER-USER (Docker's hook, evaluated before
// its own rules), traffic from the bridge to the host itself (its gateway address, services on
// 0.0.0.0 such as the operator API or a chain node) from INPUT. Replies to connections the host
// opened (the sidecar's published port) pass. Installed at operator start and removed at shutdown;
// installing first sweeps this operator's leftovers (a SIGKILLed run's chains and jumps, any bridge).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { RuntimeError } from '../errors.ts';

const run = promisify(execFile);

/**
 * What `public` refuses: private (RFC 1918), CGNAT, link-local, loopback, reserved, and the one
 * public address a cloud keeps for its own platform. The clouds' special addresses, checked:
 * - AWS: instance metadata 169.254.169.254, DNS 169.254.169.253, NTP 169.254.169.123 (link-local);
 *   the VPC resolver at the subnet's base + 2 (RFC 1918).
 * - GCP, Oracle, DigitalOcean, OpenStack: metadata and DNS 169.254.169.254 (link-local).
 * - Alibaba: metadata 100.100.100.200, DNS 100.100.2.136/.138 (CGNAT).
 * - Azure: IMDS 169.254.169.254 (link-local), and 168.63.129.16, a public address every VM
 *   reaches on its host: WireServer (:80, the VM's goal state and extension settings), the
 *   HostGAPlugin (:32526), DNS (:53) and the load balancer's health probes. The Azure agent's own
 *   guard is an OUTPUT rule, which traffic forwarded from a container never passes.
 * Their IPv6 twins (AWS fd00:ec2::254/253/123, GCP fd20:ce::254, all in fc00::/7) are out of
 * reach: the sandbox networks have no IPv6 and the sandboxes run with it disabled.
 * Port 53 of a listed resolver is let through before these (a cloud's resolver is one of them).
 */
export const NON_PUBLIC_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '168.63.129.16/32',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
] as const;

export interface EgressRulesOptions {
  policy: 'public' | 'none';
  bridge: string;
  /** Chains are per operator, so two operators on one host install and remove independently. */
  operatorId: string;
  /** Resolvers the sandboxes may query on port 53 under `public` (default: Docker's, hostNameservers). */
  nameservers?: readonly string[];
  iptables?: string;
}

/** The host files Docker reads to pick the resolvers its embedded DNS forwards to. */
export interface ResolverFiles {
  resolvConf: string;
  /** /run/systemd/resolve/resolv.conf: systemd-resolved's list of the real upstreams. */
  systemdResolvConf: string;
  /** /etc/docker/daemon.json: its `dns` list, when set, replaces the host's. */
  daemonJson: string;
}

const nameserversOf = (text: string): string[] =>
  [...text.matchAll(/^\s*nameserver\s+(\S+)\s*$/gm)].map((m) => m[1] as string);
const V4 = /^\d+\.\d+\.\d+\.\d+$/;

/**
 * The IPv4 resolvers Docker's embedded DNS forwards the sandboxes' queries to (from inside their
 * network namespace, so through the egress rules), picked as the engine does: the daemon's `dns`
 * setting; else /etc/resolv.conf, or systemd-resolved's upstream list when that file names only
 * its stub 127.0.0.53; loopback ones dropped (Docker drops them too, and falls back to public
 * resolvers when none is left, which `public` lets through anyway).
 */
export function hostNameservers(files: ResolverFiles = readResolverFiles()): string[] {
  let listed: string[] = [];
  try {
    const dns = (JSON.parse(files.daemonJson || '{}') as { dns?: unknown }).dns;
    if (Array.isArray(dns)) listed = dns.filter((x): x is string => typeof x === 'string');
  } catch {
    // dockerd refuses to start with an unreadable daemon.json, so this one is not in use.
  }
  if (listed.length === 0) {
    listed = nameserversOf(files.resolvConf);
    if (listed.length === 1 && listed[0] === '127.0.0.53') listed = nameserversOf(files.systemdResolvConf);
  }
  return [...new Set(listed.filter((ns) => V4.test(ns) && !ns.startsWith('127.')))];
}

function readResolverFiles(): ResolverFiles {
  return {
    resolvConf: safeRead('/etc/resolv.conf'),
    systemdResolvConf: safeRead('/run/systemd/resolve/resolv.conf'),
    daemonJson: safeRead('/etc/docker/daemon.json'),
  };
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

export function chainNames(operatorId: string): { forward: string; input: string } {
  const h = createHash('sha256').update(operatorId).digest('hex').slice(0, 10);
  return { forward: `ASBX-${h}-FWD`, input: `ASBX-${h}-IN` };
}

/** The rules of both chains, as iptables argument lists (after `-A <chain>`). */
export function ruleSet(o: EgressRulesOptions): { forward: string[][]; input: string[][] } {
  const reject = ['-j', 'REJECT', '--reject-with', 'icmp-admin-prohibited'];
  const established = ['-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'RETURN'];
  const forward: string[][] = [established];
  if (o.policy === 'public') {
    for (const ns of o.nameservers ?? hostNameservers()) {
      for (const proto of ['udp', 'tcp'])
        forward.push(['-d', ns, '-p', proto, '--dport', '53', '-j', 'RETURN']);
    }
    for (const net of NON_PUBLIC_V4) forward.push(['-d', net, ...reject]);
    forward.push(['-j', 'RETURN']);
  } else {
    forward.push(reject);
  }
  // Nothing from a sandbox may open a connection to the host itself, whatever the policy.
  return { forward, input: [established, reject] };
}

export class EgressRules {
  readonly #o: EgressRulesOptions;
  readonly #bin: string;
  readonly chains: { forward: string; input: string };

  constructor(o: EgressRulesOptions) {
    this.#o = o;
    this.#bin = o.iptables ?? 'iptables';
    this.chains = chainNames(o.operatorId);
  }

  async #ipt(args: string[]): Promise<void> {
    await run(this.#bin, ['-w', '5', ...args], { timeout: 15_000 });
  }

  async #ok(args: string[]): Promise<boolean> {
    return this.#ipt(args).then(
      () => true,
      () => false,
    );
  }

  /** Installs (or replaces) the chains and their jumps; throws saying why when it cannot. */
  async install(): Promise<void> {
    const { forward, input } = this.chains;
    const rules = ruleSet(this.#o);
    try {
      if (!(await this.#ok(['-L', 'DOCKER-USER', '-n']))) {
        throw new Error('the DOCKER-USER chain is missing (is dockerd running with its iptables rules?)');
      }
      // A previous run of this operator killed with SIGKILL left its chains and jumps (maybe on
      // another bridge): sweep them first. Only this operator's chains are touched.
      await this.#sweep();
      for (const [chain, list] of [
        [forward, rules.forward],
        [input, rules.input],
      ] as const) {
        await this.#ipt(['-N', chain]);
        for (const r of list) await this.#ipt(['-A', chain, ...r]);
      }
      await this.#jump('DOCKER-USER', forward);
      await this.#jump('INPUT', input);
    } catch (e) {
      const msg = (e as { stderr?: string }).stderr?.trim() || (e as Error).message;
      throw new RuntimeError(
        'EGRESS_RULES',
        `cannot install the sandbox egress rules for bridge ${this.#o.bridge} (${msg}); the operator needs root and iptables, or set SANDBOX_EGRESS=open to run sandboxes without network isolation`,
        { cause: e },
      );
    }
  }

  async #jump(from: string, to: string): Promise<void> {
    const spec = ['-i', this.#o.bridge, '-j', to];
    if (!(await this.#ok(['-C', from, ...spec]))) await this.#ipt(['-I', from, '1', ...spec]);
  }

  /** Deletes every jump to this operator's chains (whatever the bridge) and the chains themselves. */
  async #sweep(): Promise<void> {
    const { forward, input } = this.chains;
    for (const [from, to] of [
      ['DOCKER-USER', forward],
      ['INPUT', input],
    ] as const) {
      const listed = await run(this.#bin, ['-w', '5', '-S', from], { timeout: 15_000 }).then(
        (r) => r.stdout,
        () => '',
      );
      for (const line of listed.split('\n')) {
        const rule = line.trim().split(/\s+/);
        if (rule[0] !== '-A' || rule.at(-2) !== '-j' || rule.at(-1) !== to) continue;
        await this.#ok(['-D', ...rule.slice(1)]);
      }
      await this.#ok(['-F', to]);
      await this.#ok(['-X', to]);
    }
  }

  /** Removes the jumps and the chains (missing ones are fine). */
  async remove(): Promise<void> {
    await this.#sweep();
    for (const to of [this.chains.forward, this.chains.input]) {
      if (await this.#ok(['-L', to, '-n'])) {
        throw new RuntimeError(
          'EGRESS_RULES',
          `could not remove the egress chain ${to}; remove it by hand (iptables -F ${to}; iptables -X ${to})`,
        );
      }
    }
  }
}
