// A policed sandbox is reachable from the host at once, whatever the host's neighbour table held
// for the address it was handed. Policed sandboxes have MACs of their own (the rules are keyed by
// them), not Docker's IP-derived ones, so an address handed on from a deleted sandbox still maps
// to that sandbox's MAC on the host until the entry ages out: the new sandbox's health check went
// nowhere meanwhile (seen as HEALTH_CHECK_TIMEOUT when the runc and runsc policy suites shared the
// bridge). Here the stale entries are made permanent (they never age), for every free address the
// sandbox could be handed, so the old code fails every time and the fix must overwrite them.
// Serial: it writes the host's neighbour table for the shared policy bridge.
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { sandboxNetworkNames } from '../../docker/sandbox-network.ts';
import { makeRig, sidecarExec, type TestRig } from '../testing/rig.ts';
import { deleteOperatorTable, POLICY_BRIDGE, sandboxMac } from './rules.ts';

vi.setConfig({ testTimeout: 180_000 });

const image = inject('sandboxImage');
const STALE_MAC = '02:de:ad:be:ef:01';
const POLICY_NET = sandboxNetworkNames('policy').name;
const ip = (...a: string[]) =>
  execFileSync('ip', a, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
let rig: TestRig;
const seeded: string[] = [];

beforeAll(async () => {
  rig = await makeRig(image, { egress: 'open' });
});

afterAll(async () => {
  for (const a of seeded) {
    try {
      ip('neigh', 'del', a, 'dev', POLICY_BRIDGE);
    } catch {}
  }
  await rig?.cleanup();
  if (rig) await deleteOperatorTable(rig.operatorId);
});

describe('a policed sandbox on an address with a stale neighbour entry', () => {
  it('is healthy and reachable: its start sets the entry to its own MAC', async () => {
    // A first policed sandbox, gone again: the policy bridge and this rig's rules exist, and an
    // address was handed out and given back, as on a busy operator.
    const first = await rig.manager.create({
      owner: '0xabc0000000000000000000000000000000000001',
      serviceId: 1,
      callId: 'neigh-0',
      network: { mode: 'default' },
    });
    await rig.manager.delete(first.id);
    const net = await rig.manager.driver.docker.getNetwork(POLICY_NET).inspect();
    const subnet = net.IPAM?.Config?.[0]?.Subnet as string;
    const gateway = net.IPAM?.Config?.[0]?.Gateway as string;
    expect(subnet).toMatch(/^\d+\.\d+\.\d+\.\d+\/\d+$/);
    const base = subnet.split('/')[0]!.split('.').map(Number);
    const inUse = new Set(
      Object.values(net.Containers ?? {}).map(
        (c) => (c as { IPv4Address: string }).IPv4Address.split('/')[0],
      ),
    );
    // Every address the engine could hand out next: the first 60 after the gateway, not in use.
    for (let k = 1; k <= 60; k++) {
      const a = `${base[0]}.${base[1]}.${base[2]}.${base[3]! + k}`;
      if (a === gateway || inUse.has(a)) continue;
      ip('neigh', 'replace', a, 'lladdr', STALE_MAC, 'dev', POLICY_BRIDGE, 'nud', 'permanent');
      seeded.push(a);
    }
    const rec = await rig.manager.create({
      owner: '0xabc0000000000000000000000000000000000001',
      serviceId: 1,
      callId: 'neigh-1',
      network: { mode: 'default' },
    });
    const info = await rig.manager.driver.docker.getContainer(rec.containerId!).inspect();
    const addr = info.NetworkSettings.Networks[POLICY_NET]!.IPAddress;
    // The address was one of the seeded ones, so the test tested what it says.
    expect(seeded).toContain(addr);
    expect(ip('neigh', 'show', addr, 'dev', POLICY_BRIDGE)).toContain(sandboxMac(rec.id));
    const r = await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'echo reachable');
    expect(r.stdout.trim()).toBe('reachable');
    await rig.manager.delete(rec.id);
  });
});
