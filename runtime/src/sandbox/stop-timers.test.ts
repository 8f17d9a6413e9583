// The model's stop timers on the real engine and the real reaper, with an injected clock:
// - deleteAfterStoppedSeconds: a stopped sandbox is deleted (container, volume and snapshots
//   removed; an `expired` tombstone kept so the chain is told) that long after its stop; a resume
//   restarts the clock; the default is the operator's (30 days);
// - maxLifetimeSeconds: each resume starts a new interval (activity never extends it);
// - the sandbox view says when each timer fires.
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { timerDeadlines } from '../api/views.ts';
import { makeRig, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 180_000 });

const image = inject('sandboxImage');
const owner = '0x00000000000000000000000000000000000000bb';
let rig: TestRig;
let n = 0;

beforeAll(async () => {
  rig = await makeRig(image, {
    defaultIdleTimeoutSeconds: 3600,
    defaultMaxLifetimeSeconds: 7200,
    // GC far away, so only the stop timer can remove anything here.
    gcHotRetentionSeconds: 10 ** 9,
    snapshotAutoCommit: false,
  });
});
afterAll(async () => {
  await rig?.cleanup();
});

const create = (extra: Record<string, unknown> = {}) =>
  rig.manager.create({ owner, serviceId: 1, callId: `timer-${++n}`, ...extra });

const objectsOf = async (id: string) => {
  const docker = new Docker();
  const filters = { label: [`agent-sandbox.id=${id}`] };
  const containers = await docker.listContainers({ all: true, filters });
  const volumes = (await docker.listVolumes({ filters })).Volumes ?? [];
  return containers.length + volumes.length;
};

describe('deleteAfterStoppedSeconds', () => {
  it('defaults to 30 days, is clamped to the cap, and a create may set it', async () => {
    const d = await create();
    expect(d.timers.deleteAfterStoppedSeconds).toBe(30 * 86400);
    const set = await create({ deleteAfterStoppedSeconds: 100 });
    expect(set.timers.deleteAfterStoppedSeconds).toBe(100);
    const capped = await create({ deleteAfterStoppedSeconds: 10 ** 9 });
    expect(capped.timers.deleteAfterStoppedSeconds).toBe(90 * 86400);
    for (const r of [d, set, capped]) await rig.manager.delete(r.id);
  });

  it('deletes a stopped sandbox that long after its stop; a resume restarts the clock', async () => {
    const t0 = rig.clock.now;
    const kept = await create({ deleteAfterStoppedSeconds: 100 });
    const gone = await create({ deleteAfterStoppedSeconds: 100 });
    await rig.manager.stop(kept.id);
    await rig.manager.stop(gone.id);
    expect(timerDeadlines(rig.manager.get(gone.id)).delete_at).toBe(t0 + 100_000);

    // 90 s later: nothing yet; `kept` is resumed and stopped again (its clock starts over).
    rig.clock.now = t0 + 90_000;
    expect((await rig.manager.reaperTick(rig.clock.now)).acted).toEqual([]);
    await rig.manager.resume(kept.id);
    await rig.manager.stop(kept.id);
    expect(timerDeadlines(rig.manager.get(kept.id)).delete_at).toBe(t0 + 190_000);

    rig.clock.now = t0 + 100_000;
    const r1 = await rig.manager.reaperTick(rig.clock.now);
    expect(r1).toEqual({ acted: [{ id: gone.id, action: 'deleted:delete_after_stopped' }], errors: [] });
    const tomb = rig.manager.get(gone.id);
    expect(tomb.state).toBe('expired');
    expect(tomb.error).toMatch(/deleteAfterStoppedSeconds/);
    expect(tomb.userEnv).toEqual({});
    expect(await objectsOf(gone.id)).toBe(0);
    await expect(rig.manager.resume(gone.id)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(rig.manager.get(kept.id).state).toBe('stopped');

    rig.clock.now = t0 + 190_000;
    expect((await rig.manager.reaperTick(rig.clock.now)).acted).toEqual([
      { id: kept.id, action: 'deleted:delete_after_stopped' },
    ]);
    expect(await objectsOf(kept.id)).toBe(0);
  });

  it('never deletes a running sandbox nor an expiry-exempt (instance) one', async () => {
    const t0 = rig.clock.now;
    const running = await create({ deleteAfterStoppedSeconds: 1 });
    const exempt = await create({ deleteAfterStoppedSeconds: 1, expiryExempt: true });
    await rig.manager.stop(exempt.id);
    rig.clock.now = t0 + 5_000;
    expect((await rig.manager.reaperTick(rig.clock.now)).acted).toEqual([]);
    expect(timerDeadlines(rig.manager.get(exempt.id))).toEqual({
      idle_stop_at: null,
      max_lifetime_stop_at: null,
      delete_at: null,
    });
    for (const r of [running, exempt]) await rig.manager.delete(r.id);
  });
});

describe('maxLifetimeSeconds', () => {
  it('each resume starts a new interval; activity does not extend it', async () => {
    const t0 = rig.clock.now;
    const r = await create({ maxLifetimeSeconds: 100 });
    expect(timerDeadlines(rig.manager.get(r.id)).max_lifetime_stop_at).toBe(t0 + 100_000);
    rig.clock.now = t0 + 99_000;
    await rig.manager.touch(r.id);
    rig.clock.now = t0 + 100_000;
    expect((await rig.manager.reaperTick(rig.clock.now)).acted).toEqual([
      { id: r.id, action: 'stopped:max_lifetime' },
    ]);
    // Resumed at t0+150 s: a new interval of 100 s from there, not from the create.
    rig.clock.now = t0 + 150_000;
    await rig.manager.resume(r.id);
    expect(timerDeadlines(rig.manager.get(r.id)).max_lifetime_stop_at).toBe(t0 + 250_000);
    rig.clock.now = t0 + 249_000;
    expect((await rig.manager.reaperTick(rig.clock.now)).acted).toEqual([]);
    rig.clock.now = t0 + 250_000;
    expect((await rig.manager.reaperTick(rig.clock.now)).acted).toEqual([
      { id: r.id, action: 'stopped:max_lifetime' },
    ]);
    await rig.manager.delete(r.id);
  });
});

describe('on real timers', () => {
  it('the background reaper deletes a sandbox stopped past deleteAfterStoppedSeconds', async () => {
    // The wall clock and the manager's own interval loop: nothing is ticked by hand.
    const real = await makeRig(image, { reaperIntervalSeconds: 0.2, snapshotAutoCommit: false });
    Object.defineProperty(real.clock, 'now', { get: () => Date.now() });
    try {
      const r = await real.manager.create({
        owner,
        serviceId: 1,
        callId: 'real-timer',
        deleteAfterStoppedSeconds: 1,
      });
      await real.manager.stop(r.id);
      real.manager.startBackground();
      // Bounded by the test timeout, not by a guess at how fast the machine is.
      while (real.manager.get(r.id).state !== 'expired') await new Promise((res) => setTimeout(res, 100));
      expect(real.manager.get(r.id).timers.deleteAfterStoppedSeconds).toBe(1);
      expect(await objectsOf(r.id)).toBe(0);
    } finally {
      await real.cleanup();
    }
  });
});
