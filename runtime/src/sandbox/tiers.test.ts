// Timers and tiers on the real engine with an injected clock: the reaper stops idle and
// over-lifetime sandboxes; GC demotes hot -> warm -> cold -> gone; resume restores from warm and
// cold with the same id, token and workspace files; a reaper tick racing a resume ends consistent.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

// Real containers on a shared 2-core machine: allow for a slow engine.
vi.setConfig({ testTimeout: 180_000 });

const image = inject('sandboxImage');
const owner = '0x00000000000000000000000000000000000000aa';
let rig: TestRig;
let n = 0;

beforeAll(async () => {
  rig = await makeRig(image, {
    defaultIdleTimeoutSeconds: 60,
    defaultMaxLifetimeSeconds: 600,
    gcHotRetentionSeconds: 100,
    gcWarmRetentionSeconds: 200,
    gcColdRetentionSeconds: 300,
  });
});
afterAll(async () => {
  await rig?.cleanup();
});

const create = (extra: Record<string, unknown> = {}) =>
  rig.manager.create({ owner, serviceId: 1, callId: `tier-${++n}`, ...extra });

describe('reaper', () => {
  it('stops an idle sandbox, keeps a touched one, and stops on max lifetime even with activity', async () => {
    const t0 = rig.clock.now;
    const idle = await create();
    const busy = await create({ maxLifetimeSeconds: 100 });
    rig.clock.now = t0 + 50_000;
    await rig.manager.touch(busy.id);
    rig.clock.now = t0 + 61_000;
    const r1 = await rig.manager.reaperTick(rig.clock.now);
    expect(r1.acted).toEqual([{ id: idle.id, action: 'stopped:idle' }]);
    expect(rig.manager.get(idle.id).stopReason).toBe('idle');
    expect(rig.manager.get(busy.id).state).toBe('running');
    await rig.manager.touch(busy.id);
    rig.clock.now = t0 + 101_000;
    const r2 = await rig.manager.reaperTick(rig.clock.now);
    expect(r2.acted).toEqual([{ id: busy.id, action: 'stopped:max_lifetime' }]);
    expect(rig.manager.get(busy.id)).toMatchObject({
      state: 'stopped',
      stopReason: 'max_lifetime',
      tier: 'hot',
    });
    // Ticks are idempotent.
    expect((await rig.manager.reaperTick(rig.clock.now)).acted).toEqual([]);
    const text = await rig.registry.metrics();
    expect(text).toMatch(/agent_sandbox_reaped_total\{reason="idle"\} 1/);
    expect(text).toMatch(/agent_sandbox_reaped_total\{reason="max_lifetime"\} 1/);
    await rig.manager.delete(idle.id);
    await rig.manager.delete(busy.id);
  });

  it('an expiry-exempt sandbox (an instance) is never reaped, and never demoted by GC when stopped', async () => {
    const t0 = rig.clock.now;
    const pinned = await create({ expiryExempt: true, maxLifetimeSeconds: 100 });
    expect(pinned.expiryExempt).toBe(true);
    rig.clock.now = t0 + 10_000_000;
    const reaped = await rig.manager.reaperTick(rig.clock.now);
    expect(reaped.acted.filter((a) => a.id === pinned.id)).toEqual([]);
    expect(rig.manager.get(pinned.id).state).toBe('running');
    // Stopped by its owner: kept hot past every retention, so it can always be resumed.
    await rig.manager.stop(pinned.id);
    rig.clock.now += 10_000_000;
    const gc = await rig.manager.gcTick(rig.clock.now);
    expect(gc.acted.filter((a) => a.id === pinned.id)).toEqual([]);
    expect(rig.manager.get(pinned.id)).toMatchObject({ state: 'stopped', tier: 'hot' });
    await rig.manager.delete(pinned.id);
  });

  it('restartIfEngineStopped: a dead container of a running sandbox is restarted (files kept); an owner stop is left alone', async () => {
    const rec = await create({ expiryExempt: true });
    await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'echo still-here > /home/agent/f.txt');
    // What an engine restart does to it: the container stops behind the operator's back.
    await rig.manager.driver.docker.getContainer(rig.manager.get(rec.id).containerId!).kill();
    const back = await rig.manager.restartIfEngineStopped(rec.id);
    expect(back).toMatchObject({ id: rec.id, state: 'running', token: rec.token });
    expect(
      (await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'cat /home/agent/f.txt')).stdout.trim(),
    ).toBe('still-here');
    // Healthy: nothing to do.
    expect((await rig.manager.restartIfEngineStopped(rec.id)).startedAt).toBe(back.startedAt);
    await rig.manager.stop(rec.id);
    expect((await rig.manager.restartIfEngineStopped(rec.id)).state).toBe('stopped');
    await rig.manager.delete(rec.id);
  });

  it('a reaper tick racing a resume ends consistent (running, or stopped then resumed)', async () => {
    const rec = await create();
    await rig.manager.stop(rec.id);
    rig.clock.now += 1;
    // The resume sets a fresh lastActivity; a tick at a time past the idle timeout of the old
    // activity must not stop the sandbox it just resumed.
    const [resumed, tick] = await Promise.all([
      rig.manager.resume(rec.id),
      rig.manager.reaperTick(rig.clock.now),
    ]);
    expect(resumed.state).toBe('running');
    expect(tick.errors).toEqual([]);
    expect(rig.manager.get(rec.id).state).toBe('running');
    const live = await rig.manager.driver.listManaged(rig.operatorId);
    expect(live.filter((c) => c.sandboxId === rec.id && c.state === 'running')).toHaveLength(1);
    await rig.manager.delete(rec.id);
  });
});

describe('GC tiers', () => {
  // Several `docker save`/`load` rounds of the full image: slow on a loaded machine.
  it('demotes hot -> warm -> cold -> gone, and resume restores files from warm and from cold', {
    timeout: 600_000,
  }, async () => {
    const rec = await create();
    const ep = rig.manager.sidecarEndpoint(rec.id);
    await sidecarExec(ep, 'mkdir -p /home/agent/proj && echo tiered > /home/agent/proj/a.txt');
    await rig.manager.stop(rec.id);
    const stoppedAt = rig.manager.get(rec.id).tierSince!;

    // hot -> warm: container and volume gone, image + workspace archive kept.
    expect((await rig.manager.gcTick(stoppedAt + 99_000)).acted).toEqual([]);
    const g1 = await rig.manager.gcTick(stoppedAt + 100_000);
    expect(g1.acted).toEqual([{ id: rec.id, action: 'hot->warm' }]);
    const warm = rig.manager.get(rec.id);
    expect(warm).toMatchObject({ state: 'stopped', tier: 'warm', containerId: null });
    expect(await rig.manager.driver.volumeExists(rec.volumeName)).toBe(false);
    // The warm image is the scrubbed copy: no container config (with the token) in the engine either.
    const warmImage = await rig.manager.driver.docker.getImage(warm.snapshotImageId!).inspect();
    expect(JSON.stringify(warmImage)).not.toContain(rec.token);
    expect((await stat(join(warm.snapshotArchiveDir!, 'workspace.tar'))).size).toBeGreaterThan(0);

    // resume from warm: same id/token, files back.
    const fromWarm = await rig.manager.resume(rec.id);
    expect(fromWarm.token).toBe(rec.token);
    const ep2 = rig.manager.sidecarEndpoint(rec.id);
    expect(
      (await sidecarExec(ep2, 'cat /home/agent/proj/a.txt; stat -c %U /home/agent/proj/a.txt')).stdout,
    ).toBe('tiered\nagent\n');
    await sidecarExec(ep2, 'echo second > /home/agent/proj/b.txt');

    // Down again, through warm to cold.
    await rig.manager.stop(rec.id);
    const s2 = rig.manager.get(rec.id).tierSince!;
    await rig.manager.gcTick(s2 + 100_000);
    const w2 = rig.manager.get(rec.id);
    const g2 = await rig.manager.gcTick(w2.tierSince! + 200_000);
    expect(g2.acted).toEqual([{ id: rec.id, action: 'warm->cold' }]);
    const cold = rig.manager.get(rec.id);
    expect(cold.tier).toBe('cold');
    expect(await rig.manager.driver.inspectImage(cold.snapshotImageId!)).toBeUndefined();
    const imageTar = await readFile(join(cold.snapshotArchiveDir!, 'image.tar'));
    // The saved image config blanks the sidecar token (it would otherwise be on disk in clear).
    expect(imageTar.includes(rec.token)).toBe(false);

    const fromCold = await rig.manager.resume(rec.id);
    expect(fromCold).toMatchObject({ id: rec.id, token: rec.token, owner, state: 'running' });
    const ep3 = rig.manager.sidecarEndpoint(rec.id);
    expect((await sidecarExec(ep3, 'cat /home/agent/proj/a.txt /home/agent/proj/b.txt')).stdout).toBe(
      'tiered\nsecond\n',
    );

    // All the way: hot -> warm -> cold -> gone.
    await rig.manager.stop(rec.id);
    const t = rig.manager.get(rec.id).tierSince!;
    await rig.manager.gcTick(t + 100_000);
    await rig.manager.gcTick(t + 300_000);
    const g3 = await rig.manager.gcTick(t + 600_000);
    expect(g3.acted).toEqual([{ id: rec.id, action: 'cold->gone' }]);
    const gone = rig.manager.get(rec.id);
    expect(gone.state).toBe('expired');
    await expect(stat(cold.snapshotArchiveDir!)).rejects.toThrow();
    await expect(rig.manager.resume(rec.id)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await rig.registry.metrics()).toMatch(
      /agent_sandbox_gc_demotions_total\{from="cold",to="gone"\} 1/,
    );
  });
});
