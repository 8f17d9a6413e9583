// The egress rule set each policy installs, the refusal (saying why and what to do) when the
// rules cannot be installed, and the sweep of a killed operator's leftovers on real iptables; the rules' effect is tested on the real engine in
// sandbox/hostile-neighbour-network.serial-test.ts.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { isRuntimeError } from '../errors.ts';
import { chainNames, EgressRules, hostNameservers, NON_PUBLIC_V4, ruleSet } from './egress-rules.ts';

const run = promisify(execFile);

function inCidr(ip: string, cidr: string): boolean {
  const toInt = (a: string) => a.split('.').reduce((n, o) => n * 256 + Number(o), 0);
  const [net, bits] = cidr.split('/') as [string, string];
  const size = 2 ** (32 - Number(bits));
  return Math.floor(toInt(ip) / size) === Math.floor(toInt(net) / size);
}

describe('egress rules', () => {
  it('public: replies pass, DNS to the host resolvers passes, every non-public range is rejected, the rest returns to Docker', () => {
    const r = ruleSet({
      policy: 'public',
      bridge: 'asbx-public',
      operatorId: 'op',
      nameservers: ['10.0.0.53'],
    });
    expect(r.forward[0]).toEqual(['-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'RETURN']);
    expect(r.forward[1]).toEqual(['-d', '10.0.0.53', '-p', 'udp', '--dport', '53', '-j', 'RETURN']);
    const rejected = r.forward.filter((x) => x.includes('REJECT')).map((x) => x[1]);
    expect(rejected).toEqual([...NON_PUBLIC_V4]);
    expect(rejected).toEqual(expect.arrayContaining(['169.254.0.0/16', '100.64.0.0/10', '127.0.0.0/8']));
    expect(r.forward.at(-1)).toEqual(['-j', 'RETURN']);
    // Nothing new from a sandbox to the host itself.
    expect(r.input).toEqual([r.forward[0], ['-j', 'REJECT', '--reject-with', 'icmp-admin-prohibited']]);
  });

  it('none: everything but replies is rejected, DNS included', () => {
    const r = ruleSet({ policy: 'none', bridge: 'asbx-none', operatorId: 'op', nameservers: ['10.0.0.53'] });
    expect(r.forward).toHaveLength(2);
    expect(r.forward[1]).toEqual(['-j', 'REJECT', '--reject-with', 'icmp-admin-prohibited']);
    expect(r.input).toEqual(r.forward);
  });

  it('chain names are per operator and fit iptables (≤ 28 characters)', () => {
    const a = chainNames('0x70997970c51812dc3a010c7d01b50e0d17dc79c8');
    expect(a.forward).toMatch(/^ASBX-[0-9a-f]{10}-FWD$/);
    expect(a.forward.length).toBeLessThanOrEqual(28);
    expect(chainNames('other').forward).not.toBe(a.forward);
  });

  it('reads the IPv4 resolvers of resolv.conf', () => {
    const files = { systemdResolvConf: '', daemonJson: '' };
    expect(
      hostNameservers({
        ...files,
        resolvConf: 'search x\nnameserver 10.255.255.53\nnameserver ::1\n nameserver 1.1.1.1\n',
      }),
    ).toEqual(['10.255.255.53', '1.1.1.1']);
  });

  it("under a systemd-resolved stub (127.0.0.53) lists the real upstreams Docker forwards to, not the stub; the daemon's dns setting wins", () => {
    const stub = 'nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch internal.cloudapp.net\n';
    const upstream =
      '# This is /run/systemd/resolve/resolv.conf\nnameserver 168.63.129.16\nnameserver 10.1.0.2\n';
    expect(hostNameservers({ resolvConf: stub, systemdResolvConf: upstream, daemonJson: '' })).toEqual([
      '168.63.129.16',
      '10.1.0.2',
    ]);
    // Only the lone stub sends Docker to systemd-resolved's file; loopback resolvers are dropped.
    expect(
      hostNameservers({
        resolvConf: 'nameserver 127.0.0.53\nnameserver 10.0.0.2\n',
        systemdResolvConf: upstream,
        daemonJson: '',
      }),
    ).toEqual(['10.0.0.2']);
    expect(
      hostNameservers({
        resolvConf: stub,
        systemdResolvConf: upstream,
        daemonJson: '{"dns":["10.9.9.9","::1"]}',
      }),
    ).toEqual(['10.9.9.9']);
    const rules = ruleSet({
      policy: 'public',
      bridge: 'asbx-public',
      operatorId: 'op',
      nameservers: hostNameservers({ resolvConf: stub, systemdResolvConf: upstream, daemonJson: '' }),
    });
    expect(rules.forward.map((r) => r[1])).not.toContain('127.0.0.53');
  });

  it("public refuses Azure's platform address (WireServer :80, HostGAPlugin :32526) and every cloud's metadata and DNS, but DNS to a listed resolver among them", () => {
    const r = ruleSet({
      policy: 'public',
      bridge: 'asbx-public',
      operatorId: 'op',
      nameservers: ['168.63.129.16'],
    });
    const dns = r.forward.filter((x) => x.includes('--dport'));
    expect(dns).toEqual([
      ['-d', '168.63.129.16', '-p', 'udp', '--dport', '53', '-j', 'RETURN'],
      ['-d', '168.63.129.16', '-p', 'tcp', '--dport', '53', '-j', 'RETURN'],
    ]);
    const firstReject = r.forward.findIndex((x) => x.includes('REJECT'));
    expect(r.forward.indexOf(dns[1]!)).toBeLessThan(firstReject);
    const rejected = r.forward.filter((x) => x.includes('REJECT')).map((x) => x[1] as string);
    const refuses = (ip: string) => rejected.some((net) => inCidr(ip, net));
    for (const ip of [
      '168.63.129.16', // Azure WireServer, HostGAPlugin, DNS
      '169.254.169.254', // AWS/GCP/Azure/Oracle/DigitalOcean metadata
      '169.254.169.253', // AWS DNS
      '169.254.169.123', // AWS NTP
      '100.100.100.200', // Alibaba metadata
      '100.100.2.136', // Alibaba DNS
      '10.0.0.2', // an AWS VPC resolver
    ])
      expect(refuses(ip), ip).toBe(true);
    for (const ip of ['1.1.1.1', '168.63.129.17', '8.8.8.8']) expect(refuses(ip), ip).toBe(false);
  });

  it('refuses with EGRESS_RULES, saying why and how to run without isolation, when iptables is missing', async () => {
    const rules = new EgressRules({
      policy: 'public',
      bridge: 'asbx-public',
      operatorId: 'op',
      iptables: '/nonexistent/iptables',
    });
    const err = await rules.install().catch((e: unknown) => e);
    expect(isRuntimeError(err, 'EGRESS_RULES')).toBe(true);
    expect((err as Error).message).toMatch(/cannot install the sandbox egress rules .*SANDBOX_EGRESS=open/);
  });
});

// Real iptables: an operator killed with SIGKILL leaves its chains and jumps behind (possibly on
// another bridge); the next install of the same operator sweeps them, touching no other operator's.
describe('egress rules on the real iptables', () => {
  const ipt = (args: string[]) => run('iptables', ['-w', '5', ...args]).then((r) => r.stdout);
  const tag = randomBytes(4).toString('hex');
  const mine = chainNames(`sweep-${tag}`);
  const theirs = chainNames(`other-${tag}`);
  const jumpsTo = async (chain: string) =>
    (await ipt(['-S', 'DOCKER-USER']))
      .split('\n')
      .concat((await ipt(['-S', 'INPUT'])).split('\n'))
      .filter((l) => l.endsWith(`-j ${chain}`));

  afterAll(async () => {
    for (const id of [`sweep-${tag}`, `other-${tag}`])
      await new EgressRules({ policy: 'none', bridge: 'asbx-swtest', operatorId: id })
        .remove()
        .catch(() => {});
  });

  it("install sweeps this operator's stale chains and jumps (any bridge), and only this operator's", async () => {
    for (const [c, from, bridge] of [
      [mine.forward, 'DOCKER-USER', 'asbx-stale0'],
      [mine.input, 'INPUT', 'asbx-stale0'],
      [theirs.forward, 'DOCKER-USER', 'asbx-swother'],
      [theirs.input, 'INPUT', 'asbx-swother'],
    ] as const) {
      await ipt(['-N', c]);
      await ipt(['-A', c, '-s', '192.0.2.1', '-j', 'RETURN']);
      await ipt(['-I', from, '1', '-i', bridge, '-j', c]);
    }
    const theirsBefore = [await ipt(['-S', theirs.forward]), await jumpsTo(theirs.forward)];

    const rules = new EgressRules({ policy: 'none', bridge: 'asbx-swtest', operatorId: `sweep-${tag}` });
    await rules.install();

    expect(await jumpsTo(mine.forward)).toEqual([`-A DOCKER-USER -i asbx-swtest -j ${mine.forward}`]);
    expect(await jumpsTo(mine.input)).toEqual([`-A INPUT -i asbx-swtest -j ${mine.input}`]);
    expect(await ipt(['-S', mine.forward])).not.toContain('192.0.2.1');
    expect([await ipt(['-S', theirs.forward]), await jumpsTo(theirs.forward)]).toEqual(theirsBefore);

    await rules.remove();
    expect(await jumpsTo(mine.forward)).toEqual([]);
    expect(await ipt(['-S', mine.forward]).catch(() => 'gone')).toBe('gone');
  });
});
