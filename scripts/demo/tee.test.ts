// The demo's TEE-instance step, run against the shared test devnet on a free port (the demo itself
// binds 8545/9090-9092): provision on the test PKI, tee verify, sealed secret, exec sees it.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { teeWalkthrough } from './tee.ts';

const LABEL = 'agent-sandbox.test.suite=demo-tee';
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

describe('demo --tee step', () => {
  it('verifies, seals and shows the secret in the TEE sandbox', async () => {
    dir = await mkdtemp(join(tmpdir(), 'demo-tee-'));
    const r = await teeWalkthrough({
      devnet: inject('devnet'),
      dir,
      port: await freePort(),
      image: inject('sandboxImage'),
      label: `agent-sandbox.test=1,${LABEL}`,
      keep: true,
    });
    expect(r.secretSeen).toBe(true);
    expect(r.sandboxId).toMatch(/\S/);
    // Kept: the operator still answers (its instance check included) until stop().
    expect((await fetch(`${r.url}/health`)).status).toBe(200);
    await r.stop();
    await expect(fetch(`${r.url}/health`)).rejects.toThrow();
    // One call is the whole demo step: a service, an operator that provisions a container, and
    // three CLI processes; the default 60 s is for single operations.
  }, 180_000);
});
