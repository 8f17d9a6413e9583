// The demo's instance walk, run against the shared test devnet on a free port (the demo itself
// binds 8545/9090-9093): request → the operator's `requests list`/`approve` → the service's
// sandbox (exec in it) → `service terminate` → the operator deletes it. Role tools only.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { iTangleAbi } from '@agent-sandbox/contracts';
import Docker from 'dockerode';
import { createPublicClient, http } from 'viem';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { instanceWalkthrough } from './instance.ts';

const LABEL = 'agent-sandbox.test.suite=demo-instance';
let dir = '';
const freePort = (): Promise<number> =>
  new Promise((res) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });

afterAll(async () => {
  const docker = new Docker();
  for (const c of await docker.listContainers({ all: true, filters: { label: [LABEL] } })) {
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => {});
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('demo instance walk', () => {
  it('request → operator approval → sandbox → terminate, with the role tools', async () => {
    const devnet = inject('devnet');
    dir = await mkdtemp(join(tmpdir(), 'demo-instance-'));
    const r = await instanceWalkthrough({
      devnet,
      dir,
      port: await freePort(),
      image: inject('sandboxImage'),
      label: `agent-sandbox.test=1,${LABEL}`,
    });
    expect(r.execOutput).toMatch(/^hello from \S+ as \S+/m);
    expect(r.sandboxId).toMatch(/^sbx-/);
    expect(r.gone).toBe(true);
    // On chain: the approved request became this service, and terminate ended it.
    const pub = createPublicClient({ transport: http(devnet.rpcUrl) });
    const active = await pub.readContract({
      address: devnet.contracts.tangle,
      abi: iTangleAbi,
      functionName: 'isServiceActive',
      args: [BigInt(r.serviceId)],
    });
    expect(active).toBe(false);
    const service = await pub.readContract({
      address: devnet.contracts.tangle,
      abi: iTangleAbi,
      functionName: 'getService',
      args: [BigInt(r.serviceId)],
    });
    expect(service.owner).toBe(devnet.accounts.user.address);
    // One call is the whole walk: a request, two operator commands, an operator that provisions a
    // container, and four CLI processes; the default 60 s is for single operations.
  }, 300_000);
});
