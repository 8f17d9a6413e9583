// gVisor (runsc) as a sandbox runtime, on the real engine: a create naming runsc runs under
// gVisor's kernel (not the host's), keeps it across stop, resume and a warm round trip, and says
// so in the view; a runtime the operator does not offer, and runsc under SANDBOX_EGRESS=none, are
// refused before anything is created. The isolation suites run under runsc too (*.runsc.test.ts).
import { release } from 'node:os';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { sandboxView } from '../api/views.ts';
import { parseSandboxRuntimeConfig } from './config.ts';
import { assertEngineRuntimes } from './runtimes.ts';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 300_000 });

const image = inject('sandboxImage');
const owner = '0x00000000000000000000000000000000000000e5';
let rig: TestRig;
let call = 0;

beforeAll(async () => {
  rig = await makeRig(image, { runtimesAllowed: ['runsc'], gcHotRetentionSeconds: 100 });
});
afterAll(async () => {
  await rig?.cleanup();
});

const create = (extra: Record<string, unknown> = {}) =>
  rig.manager.create({ owner, serviceId: 7, callId: `runsc-${++call}`, ...extra });
/** The kernel the sandbox's code talks to: gVisor answers its own release and boot log. */
const kernel = async (id: string) =>
  (await sidecarExec(rig.manager.sidecarEndpoint(id), 'uname -r; dmesg 2>/dev/null | head -3')).stdout;
const engineRuntime = async (containerId: string) =>
  (await rig.manager.driver.docker.getContainer(containerId).inspect()).HostConfig.Runtime;

describe('runsc (gVisor) sandboxes', () => {
  it("a create naming runsc runs under gVisor's kernel, across stop, resume and a warm round trip; runc stays the default", async () => {
    const g = await create({ runtime: 'runsc' });
    const plain = await create();
    expect(g.runtime).toBe('runsc');
    expect(plain.runtime).toBe('runc');
    expect(sandboxView(g).runtime).toBe('runsc');
    expect(sandboxView(plain).runtime).toBe('runc');
    expect(await engineRuntime(g.containerId!)).toBe('runsc');

    // The host's kernel answers the runc sandbox; gVisor's own (its release, its boot log) the other.
    expect((await kernel(plain.id)).split('\n')[0]).toBe(release());
    const inside = await kernel(g.id);
    expect(inside.split('\n')[0]).not.toBe(release());
    expect(inside).toMatch(/gVisor/);

    // Stop + resume (the stopped container), then warm → resume (a new container): still gVisor.
    await sidecarExec(rig.manager.sidecarEndpoint(g.id), 'echo kept > /home/agent/f');
    await rig.manager.stop(g.id);
    await rig.manager.resume(g.id);
    expect(await kernel(g.id)).toMatch(/gVisor/);
    await rig.manager.stop(g.id);
    await rig.manager.gcTick(rig.manager.get(g.id).tierSince! + 100_000);
    expect(rig.manager.get(g.id).tier).toBe('warm');
    const back = await rig.manager.resume(g.id);
    expect(back.runtime).toBe('runsc');
    expect(await engineRuntime(back.containerId!)).toBe('runsc');
    expect(await kernel(g.id)).toMatch(/gVisor/);
    expect((await sidecarExec(rig.manager.sidecarEndpoint(g.id), 'cat /home/agent/f')).stdout).toBe('kept\n');

    // A fork of a gVisor sandbox runs under the runtime its own create names (default: runc).
    const fork = await create({ fromSandbox: g.id, runtime: 'runsc' });
    expect(fork.runtime).toBe('runsc');
    expect(await kernel(fork.id)).toMatch(/gVisor/);
    for (const s of [g, plain, fork]) await rig.manager.delete(s.id);
  });

  it('a runtime the operator does not offer is refused at create, naming the offered ones; nothing is created', async () => {
    const only = await makeRig(image);
    try {
      await expect(
        only.manager.create({ owner, serviceId: 7, callId: 'not-offered', runtime: 'runsc' }),
      ).rejects.toMatchObject({
        code: 'VALIDATION',
        message: expect.stringContaining('runtime runsc is not offered by this operator (it runs runc'),
        details: { field: 'runtime' },
      });
      await expect(
        only.manager.create({ owner, serviceId: 7, callId: 'unknown', runtime: 'kata' as 'runc' }),
      ).rejects.toMatchObject({ code: 'VALIDATION', details: { field: 'runtime' } });
      expect(await only.manager.driver.listManaged(only.operatorId)).toEqual([]);
      expect(only.manager.list()).toEqual([]);
    } finally {
      await only.cleanup();
    }
  });

  it('runsc under SANDBOX_EGRESS=none is refused by the config, and a runtime the engine lacks at open', () => {
    const base = { image, snapshotDir: '/tmp/x' };
    expect(() => parseSandboxRuntimeConfig({ ...base, egress: 'none', runtime: 'runsc' })).toThrow(
      /runsc, which cannot run under SANDBOX_EGRESS=none/,
    );
    expect(() => parseSandboxRuntimeConfig({ ...base, egress: 'none', runtimesAllowed: ['runsc'] })).toThrow(
      /SANDBOX_EGRESS=none/,
    );
    expect(parseSandboxRuntimeConfig({ ...base, egress: 'public', runtime: 'runsc' }).runtime).toBe('runsc');
    expect(() => assertEngineRuntimes(['runc', 'io.containerd.runc.v2'], ['runc', 'runsc'])).toThrow(
      /name runsc, which the Docker engine does not have .*scripts\/ensure-toolchain\.sh/,
    );
    expect(() => assertEngineRuntimes(['runc', 'runsc'], ['runc', 'runsc'])).not.toThrow();
  });
});
