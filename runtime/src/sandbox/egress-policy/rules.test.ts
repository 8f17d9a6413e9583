// What the policy tables and a sandbox's resolver are made of, checked by nft itself (-c: parsed
// and validated by the kernel's rules, nothing installed) and against the model's decisions; the
// effect is tested on real parts in enforce.test.ts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NON_PUBLIC_V4 } from '../../docker/egress-rules.ts';
import { resolverConfig } from './resolver.ts';
import {
  operatorTableScript,
  POLICY_BRIDGE,
  sandboxMac,
  setName,
  sharedTableScript,
  tableName,
} from './rules.ts';

const id = `sbx-${'ab'.repeat(16)}`;

describe('policy rules', () => {
  it('names are per operator and per sandbox, within nftables limits; MACs are locally administered and stable', () => {
    expect(tableName('op-a')).toMatch(/^asbx_pol_[0-9a-f]{10}$/);
    expect(tableName('op-a')).not.toBe(tableName('op-b'));
    expect(setName(id).length).toBeLessThanOrEqual(31);
    expect(sandboxMac(id)).toMatch(/^02(:[0-9a-f]{2}){5}$/);
    expect(sandboxMac(id)).toBe(sandboxMac(id));
    expect(sandboxMac(id)).not.toBe(sandboxMac(`sbx-${'cd'.repeat(16)}`));
  });

  it('the scripts are valid nftables (nft -c) and key every rule by the sandbox MAC on the policy bridge', () => {
    const s = { id, mac: sandboxMac(id), resolver: { host: '172.30.0.1', port: 40053 } };
    const script = sharedTableScript() + operatorTableScript('op-a', [s]);
    execFileSync('nft', ['-c', '-f', '-'], { input: script });
    const rules = script.split('\n').filter((l) => l.startsWith('add rule'));
    for (const r of rules) expect(r).toContain(`iifname "${POLICY_BRIDGE}"`);
    const own = rules.filter((r) => r.includes(tableName('op-a')));
    for (const r of own) expect(r).toContain(`ether saddr ${s.mac}`);
    // DNS to anywhere goes to the sandbox's own resolver; a forward is marked only for a public
    // address in its set.
    expect(own.find((r) => r.includes('dnat'))).toContain('th dport 53 dnat ip to 172.30.0.1:40053');
    const fwd = own.find((r) => r.includes('p_fwd'))!;
    for (const net of NON_PUBLIC_V4) expect(fwd).toContain(net);
    expect(fwd).toContain(`ip daddr @${setName(id)}`);
    // The shared table rejects whatever no operator marked.
    expect(sharedTableScript()).toMatch(/p_fwd .*!= 0x01000000 reject/);
    expect(sharedTableScript()).toMatch(/p_in .*!= 0x02000000 reject/);
  });

  it('a rebuild keeps the sets in force, drops the ones no record claims, and never deletes the table', () => {
    const s = { id, mac: sandboxMac(id), resolver: { host: '172.30.0.1', port: 40053 } };
    const script = operatorTableScript('op-a', [s], ['a_stale']);
    expect(script).toContain(`add set inet ${tableName('op-a')} ${setName(id)}`);
    expect(script).toContain(`delete set inet ${tableName('op-a')} a_stale`);
    expect(script).not.toMatch(/delete table|flush table|flush ruleset/);
  });
});

describe('resolver config', () => {
  const conf = resolverConfig({
    sandboxId: id,
    operatorId: 'op-a',
    host: '172.30.0.1',
    port: 40053,
    domains: ['github.com', '*.tangle.tools'],
    upstream: ['10.0.0.53', '1.1.1.1#5353'],
    pidFile: '/run/x.pid',
  });
  const lines = conf.split('\n');

  it('answers only the allowed names (everything else NXDOMAIN), each sent upstream and its addresses put in the set', () => {
    expect(lines).toContain('address=/#/');
    expect(lines).toContain('server=/github.com/10.0.0.53');
    expect(lines).toContain('server=/github.com/1.1.1.1#5353');
    expect(lines).toContain('server=/*.tangle.tools/10.0.0.53');
    expect(lines).toContain(`nftset=/github.com/4#inet#${tableName('op-a')}#${setName(id)}`);
    expect(lines).toContain('no-resolv');
    expect(lines).toContain('listen-address=172.30.0.1');
    expect(lines).toContain('port=40053');
  });

  it('attack (rebinding): an answer in any non-public range is NXDOMAIN, nothing is cached', () => {
    for (const net of NON_PUBLIC_V4) expect(lines).toContain(`bogus-nxdomain=${net}`);
    expect(lines).toContain('stop-dns-rebind');
    expect(lines).toContain('cache-size=0');
  });

  it('is accepted by dnsmasq (--test: a bad option fails it)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'asbx-conf-'));
    const test = (text: string) => {
      writeFileSync(join(dir, 'c.conf'), text);
      execFileSync('dnsmasq', ['--test', `--conf-file=${join(dir, 'c.conf')}`], { stdio: 'pipe' });
    };
    expect(() => test(conf)).not.toThrow();
    expect(() => test(`${conf}no-such-option\n`)).toThrow();
    rmSync(dir, { recursive: true, force: true });
  });
});
