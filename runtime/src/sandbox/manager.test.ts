// SandboxManager on the real Docker engine with the real sandbox image: create -> ready, progress,
// idempotency, stop/resume, delete, secrets, and the bad-input and fault cases.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { isRuntimeError } from '../errors.ts';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

// Real containers on a shared 2-core machine: allow for a slow engine.
vi.setConfig({ testTimeout: 180_000 });

const image = inject('sandboxImage');
let rig: TestRig;
let call = 0;
const nextCall = () => `call-${++call}`;
const base = { owner: '0xAbC0000000000000000000000000000000000001', serviceId: 7 };

async function allFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(join(e.parentPath, e.name));
  }
  return out;
}

beforeAll(async () => {
  rig = await makeRig(image);
});
afterAll(async () => {
  await rig?.cleanup();
});

describe('SandboxManager on the real engine', () => {
  it('provisions to a healthy sidecar with every phase recorded, hardened and loopback-only', async () => {
    const callId = nextCall();
    const rec = await rig.manager.create({ ...base, callId, env: { GREETING: 'hi' } });
    expect(rec.state).toBe('running');
    expect(rec.id).toMatch(/^sbx-[0-9a-f]{32}$/);
    expect(rec.token).toMatch(/^[0-9a-f]{64}$/);
    const p = await rig.manager.getProvision(callId);
    expect(p.phases.map((x) => x.phase)).toEqual([
      'queued',
      'image_pull',
      'container_create',
      'container_start',
      'health_check',
      'ready',
    ]);
    expect(p.sandboxId).toBe(rec.id);
    const info = await rig.manager.driver.docker.getContainer(rec.containerId!).inspect();
    const hc = info.HostConfig;
    expect(hc.CapDrop).toEqual(['ALL']);
    expect([...(hc.CapAdd ?? [])].sort()).toEqual(['CHOWN', 'DAC_OVERRIDE', 'KILL', 'SETGID', 'SETUID']);
    expect(hc.SecurityOpt).toContain('no-new-privileges:true');
    expect(hc.Privileged).toBe(false);
    expect(hc.Binds ?? []).toEqual([]);
    expect(info.Mounts.every((m) => m.Type === 'volume' || m.Type === 'tmpfs')).toBe(true);
    expect(hc.NanoCpus).toBe(1e9);
    expect(hc.Memory).toBe(256 * 1024 * 1024);
    expect(Object.keys(hc.Tmpfs ?? {}).sort()).toEqual(['/tmp', '/var/tmp']);
    expect(hc.ReadonlyRootfs).toBe(true);
    for (const b of Object.values(info.NetworkSettings.Ports).flat()) expect(b?.HostIp).toBe('127.0.0.1');
    expect(info.Config.Labels['agent-sandbox.owner']).toBe(base.owner);
    // The user's env is delivered to the sidecar for its children, never put in the container's.
    expect(info.Config.Env.some((e) => e.startsWith('GREETING='))).toBe(false);
    expect(info.Config.Env).toContain('AGENT_SUBPROCESS_UID=1000');
    const ep = rig.manager.sidecarEndpoint(rec.id);
    const r = await sidecarExec(ep, 'id -u; echo $GREETING');
    expect(r.stdout).toBe('1000\nhi\n');
    // KILL is kept: a timed-out command is really stopped (exit 124).
    expect((await sidecarExec(ep, 'sleep 30', 300)).exitCode).toBe(124);
    // Disk size: overlay2 on extfs has no quota; recorded as not enforced rather than hidden.
    expect(typeof rec.resources.diskEnforced).toBe('boolean');
  });

  it('is idempotent by call id: a repeat returns the same sandbox, and concurrent repeats make one container', async () => {
    const callId = nextCall();
    const [a, b] = await Promise.all([
      rig.manager.create({ ...base, callId }),
      rig.manager.create({ ...base, callId }),
    ]);
    expect(a.id).toBe(b.id);
    const again = await rig.manager.create({ ...base, callId });
    expect(again.id).toBe(a.id);
    const list = await rig.manager.driver.listManaged(rig.operatorId);
    expect(list.filter((c) => c.sandboxId === a.id)).toHaveLength(1);
    // Call ids count per service: the same call id on another service is another job.
    const other = await rig.manager.create({ ...base, serviceId: 8, callId, owner: '0xdef' });
    expect(other.id).not.toBe(a.id);
    expect(other.owner).toBe('0xdef');
    expect((await rig.manager.getProvision(callId, 7)).sandboxId).toBe(a.id);
    expect((await rig.manager.getProvision(callId, 8)).sandboxId).toBe(other.id);
    await rig.manager.delete(other.id);
  });

  it('refuses resources above the caps and below the minimum before creating anything', async () => {
    const before = (await rig.manager.driver.listManaged(rig.operatorId)).length;
    const tooBig = rig.manager.create({ ...base, callId: nextCall(), cpuCores: 64 });
    await expect(tooBig).rejects.toMatchObject({ code: 'RESOURCES_EXCEED_LIMIT' });
    await expect(
      rig.manager.create({ ...base, callId: nextCall(), memoryMb: 999_999 }),
    ).rejects.toMatchObject({
      code: 'RESOURCES_EXCEED_LIMIT',
    });
    await expect(rig.manager.create({ ...base, callId: nextCall(), memoryMb: 8 })).rejects.toMatchObject({
      code: 'VALIDATION',
      message: expect.stringMatching(/below the 128 MB/),
    });
    await expect(
      rig.manager.create({ ...base, callId: nextCall(), env: { SIDECAR_AUTH_TOKEN: 'mine' } }),
    ).rejects.toMatchObject({ code: 'VALIDATION' });
    expect((await rig.manager.driver.listManaged(rig.operatorId)).length).toBe(before);
  });

  it('fails fast on an unknown image with a clear message, and records it', async () => {
    const callId = nextCall();
    const err = await rig.manager
      .create({ ...base, callId, image: 'agent-sandbox/does-not-exist:nope' })
      .catch((e) => e);
    expect(isRuntimeError(err, 'IMAGE_NOT_FOUND')).toBe(true);
    expect(err.message).toMatch(/not present on this operator's engine and cannot be pulled/);
    const p = await rig.manager.getProvision(callId);
    expect(p.phase).toBe('failed');
    expect(p.failedPhase).toBe('image_pull');
    expect(rig.manager.get(p.sandboxId).state).toBe('failed');
    // The repeat returns the same failure, not a new attempt.
    await expect(rig.manager.create({ ...base, callId })).rejects.toMatchObject({ code: 'PROVISION_FAILED' });
  });

  it('a sidecar that never gets healthy times out, is cleaned up, and the sandbox is failed with the reason', async () => {
    const rig2 = await makeRig(image, { healthTimeoutMs: 1500 });
    try {
      const callId = 'never-healthy';
      // The real sandbox image, with its command replaced by one that serves nothing.
      const err = await rig2.manager.create({ ...base, callId }, { cmd: ['sleep', '600'] }).catch((e) => e);
      expect(err.code).toBe('HEALTH_CHECK_TIMEOUT');
      const p = await rig2.manager.getProvision(callId);
      expect(p.failedPhase).toBe('health_check');
      const rec = rig2.manager.get(p.sandboxId);
      expect(rec.state).toBe('failed');
      expect(rec.error).toMatch(/did not answer GET \/health/);
      expect(await rig2.manager.driver.listManaged(rig2.operatorId)).toEqual([]);
      expect(await rig2.manager.driver.volumeExists(rec.volumeName)).toBe(false);
      // A sidecar that exits fails with its exit status (the exit ends the wait, not the deadline).
      const err2 = await rig2.manager
        .create({ ...base, callId: 'exits' }, { cmd: ['false'] })
        .catch((e) => e);
      expect(err2.message).toMatch(/exited with status 1/);
    } finally {
      await rig2.cleanup();
    }
  });

  it('stop and resume keep id, token, owner and workspace files; two concurrent stops agree', async () => {
    const rec = await rig.manager.create({ ...base, callId: nextCall() });
    await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'echo kept > /home/agent/note.txt');
    const [s1, s2] = await Promise.all([rig.manager.stop(rec.id), rig.manager.stop(rec.id)]);
    expect(s1.state).toBe('stopped');
    expect(s2.state).toBe('stopped');
    expect(s1.tier).toBe('hot');
    expect(() => rig.manager.sidecarEndpoint(rec.id)).toThrow(/resume it first/);
    const back = await rig.manager.resume(rec.id);
    expect(back.state).toBe('running');
    expect(back.id).toBe(rec.id);
    expect(back.token).toBe(rec.token);
    expect(back.owner).toBe(rec.owner);
    const out = await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'cat /home/agent/note.txt');
    expect(out.stdout).toBe('kept\n');
    // resume on a running sandbox is a no-op.
    expect((await rig.manager.resume(rec.id)).containerId).toBe(back.containerId);
  });

  it('delete removes container, volume and snapshots; resume and get of a deleted sandbox are NOT_FOUND', async () => {
    const rec = await rig.manager.create({ ...base, callId: nextCall() });
    await rig.manager.stop(rec.id); // auto-commit: a snapshot image and archive exist
    const stopped = rig.manager.get(rec.id);
    expect(stopped.snapshotImageId).toBeTruthy();
    await rig.manager.delete(rec.id);
    await rig.manager.delete(rec.id); // idempotent
    await expect(rig.manager.resume(rec.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(() => rig.manager.get(rec.id)).toThrow(/does not exist/);
    expect(await rig.manager.driver.exists(rec.containerId!)).toBeUndefined();
    expect(await rig.manager.driver.volumeExists(rec.volumeName)).toBe(false);
    expect(await rig.manager.driver.inspectImage(stopped.snapshotImageId!)).toBeUndefined();
    await expect(rig.manager.stop('sbx-unknown')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('inject and wipe secrets recreate the container, keep identity and files, and never put them on disk in clear', async () => {
    const rec = await rig.manager.create({ ...base, callId: nextCall(), env: { MODE: 'base' } });
    await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'echo survived > /home/agent/w.txt');
    const secret = `sk-test-${'s3cr3t'.repeat(6)}`;
    await expect(rig.manager.injectSecrets(rec.id, { SIDECAR_AUTH_TOKEN: 'x' })).rejects.toMatchObject({
      code: 'VALIDATION',
    });
    const after = await rig.manager.injectSecrets(rec.id, { OPENAI_API_KEY: secret, MODE: 'secret' });
    expect(after.id).toBe(rec.id);
    expect(after.token).toBe(rec.token);
    expect(after.owner).toBe(rec.owner);
    expect(after.containerId).not.toBe(rec.containerId);
    const ep = rig.manager.sidecarEndpoint(rec.id);
    const out = await sidecarExec(ep, 'echo $OPENAI_API_KEY $MODE; cat /home/agent/w.txt');
    expect(out.stdout).toBe(`${secret} secret\nsurvived\n`);
    // A stop snapshots the container: the committed image must not carry the secret or token.
    await rig.manager.stop(rec.id);
    const snap = rig.manager.get(rec.id);
    const img = await rig.manager.driver.docker.getImage(snap.snapshotImageId!).inspect();
    expect(JSON.stringify(img.Config)).not.toContain(secret);
    expect(JSON.stringify(img.Config)).not.toContain(rec.token);
    await rig.manager.resume(rec.id);
    // Grep every file of the store and the snapshot dir.
    for (const f of await allFiles(rig.dir)) {
      const bytes = await readFile(f);
      expect(bytes.includes(secret), f).toBe(false);
      expect(bytes.includes(rec.token), f).toBe(false);
    }
    const wiped = await rig.manager.wipeSecrets(rec.id);
    expect(wiped.userEnv).toEqual({});
    const out2 = await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'echo "[$OPENAI_API_KEY]" $MODE');
    expect(out2.stdout).toBe('[] base\n');
  });

  it('an image upgrade keeps id, token, owner and workspace files', async () => {
    const tag = String(Date.now());
    const upgraded = `agent-sandbox-upgrade-test:${tag}`;
    await rig.manager.driver.docker.getImage(image).tag({ repo: 'agent-sandbox-upgrade-test', tag });
    try {
      const rec = await rig.manager.create({ ...base, callId: nextCall() });
      await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'echo before-upgrade > /home/agent/u.txt');
      await expect(rig.manager.upgradeImage(rec.id, 'agent-sandbox/nope:1')).rejects.toMatchObject({
        code: 'IMAGE_NOT_FOUND',
      });
      const after = await rig.manager.upgradeImage(rec.id, upgraded);
      expect(after).toMatchObject({
        id: rec.id,
        token: rec.token,
        owner: rec.owner,
        image: upgraded,
        state: 'running',
      });
      const info = await rig.manager.driver.docker.getContainer(after.containerId!).inspect();
      expect(info.Config.Image).toBe(upgraded);
      const out = await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'cat /home/agent/u.txt');
      expect(out.stdout).toBe('before-upgrade\n');
      await rig.manager.delete(rec.id);
    } finally {
      await rig.manager.driver.removeImage(upgraded, false);
    }
  });

  it('lists by owner (case-insensitive) and exposes metrics', async () => {
    const mine = rig.manager.list({ owner: base.owner.toLowerCase() });
    expect(mine.length).toBeGreaterThan(0);
    expect(rig.manager.list({ owner: '0xsomeoneelse' })).toEqual([]);
    const text = await rig.registry.metrics();
    expect(text).toMatch(/agent_sandbox_active \d+/);
    expect(text).toMatch(/agent_sandbox_provision_phase_seconds_bucket\{le="[^"]+",phase="health_check"\}/);
    expect(text).toMatch(/agent_sandbox_provision_failures_total [1-9]/);
  });
});
