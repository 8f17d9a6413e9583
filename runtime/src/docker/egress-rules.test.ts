// The egress rule set each policy installs, and the refusal (saying why and what to do) when the
// rules cannot be installed; the rules' effect is tested on the real engine in
// sandbox/hostile-neighbour-network.test.ts.
import { describe, expect, it } from 'vitest';
import { isRuntimeError } from '../errors.ts';
import { chainNames, EgressRules, hostNameservers, NON_PUBLIC_V4, ruleSet } from './egress-rules.ts';

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
    expect(
      hostNameservers('search x\nnameserver 10.255.255.53\nnameserver ::1\n nameserver 1.1.1.1\n'),
    ).toEqual(['10.255.255.53', '1.1.1.1']);
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
