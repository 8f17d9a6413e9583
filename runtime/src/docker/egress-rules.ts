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

/** What `public` refuses: private (RFC 1918), CGNAT, link-local (metadata), loopback, reserved. */
export const NON_PUBLIC_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
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
  /** Resolvers the sandboxes may query on port 53 under `public` (default: /etc/resolv.conf's). */
  nameservers?: readonly string[];
  iptables?: string;
}

/** The IPv4 nameservers of /etc/resolv.conf (Docker's embedded DNS forwards to them). */
export function hostNameservers(text = safeRead('/etc/resolv.conf')): string[] {
  return [...text.matchAll(/^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/gm)].map((m) => m[1] as string);
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
