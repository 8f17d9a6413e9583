// Fault test: the Docker engine restarts while a create is in container_start/health_check.
// Restarting dockerd breaks every other test using the engine, so this file is not in the
// parallel run: vitest.serial.config.ts runs it alone, after the main run (scripts/test.sh).
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 300_000 });

const run = promisify(execFile);
const image = inject('sandboxImage');
const owner = '0x00000000000000000000000000000000000000dd';
let rig: TestRig;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function engineAnswers(): Promise<boolean> {
  return run('docker', ['info'], { timeout: 10_000 }).then(
    () => true,
    () => false,
  );
}

async function dockerdPid(): Promise<number | undefined> {
  const out = await run('pgrep', ['-x', 'dockerd']).catch(() => ({ stdout: '' }));
  const pid = Number(out.stdout.trim().split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Starts dockerd exactly as scripts/ensure-toolchain.sh does, detached from this process. */
async function startEngine(): Promise<void> {
  const sh = spawn('sh', ['-c', 'nohup dockerd >/var/log/dockerd.log 2>&1 &'], {
    detached: true,
    stdio: 'ignore',
  });
  sh.unref();
  for (let i = 0; i < 120; i++) {
    if (await engineAnswers()) return;
    await sleep(500);
  }
  throw new Error('dockerd did not come up in 60 s; see /var/log/dockerd.log');
}

/** SIGTERMs dockerd, waits for it to exit, starts it again; resolves once `docker info` answers. */
async function restartEngine(): Promise<void> {
  const pid = await dockerdPid();
  if (!pid) throw new Error('no dockerd process found (this test needs a dockerd it may restart)');
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 90_000;
  while (alive(pid)) {
    if (Date.now() > deadline) throw new Error(`dockerd ${pid} did not exit within 90 s of SIGTERM`);
    await sleep(200);
  }
  await startEngine();
}

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error('this test restarts dockerd and must run as root');
  rig = await makeRig(image, { healthTimeoutMs: 60_000 });
});

afterAll(async () => {
  // Whatever happened, leave an engine running for whatever comes next.
  if (!(await engineAnswers())) await startEngine();
  await rig?.cleanup();
});

describe('the Docker engine restarting during a provision', () => {
  it('the in-flight create ends failed and cleaned up, reconcile agrees, and a new create works', async () => {
    const m = rig.manager;
    // The sidecar starts late so the create sits in health_check when the engine goes away.
    const inflight = m
      .create(
        { owner, serviceId: 4, callId: 'engine-1' },
        { cmd: ['sh', '-c', 'sleep 30; exec node /opt/sidecar/sidecar.cjs'] },
      )
      .then(
        (r) => ({ ok: true as const, r }),
        (e: unknown) => ({ ok: false as const, e }),
      );
    const deadline = Date.now() + 60_000;
    let phase = '';
    while (Date.now() < deadline) {
      phase = await m.getProvision('engine-1', 4).then(
        (p) => p.phase,
        () => '',
      );
      if (phase === 'health_check' || phase === 'failed') break;
      await sleep(50);
    }
    expect(phase).toBe('health_check');
    await sleep(300);

    const t0 = performance.now();
    await restartEngine();
    const restartMs = performance.now() - t0;

    const outcome = await inflight;
    const p = await m.getProvision('engine-1', 4);
    const rec = m.get(p.sandboxId);
    console.info(
      `[engine-restart] engine restart took ${Math.round(restartMs)} ms; create ${
        outcome.ok ? 'resolved' : `rejected: ${String((outcome.e as Error).message)}`
      }; record ${rec.state}; provision phase ${p.phase}`,
    );
    // Its container was stopped by the engine going down and has no restart policy: the create
    // cannot have succeeded, and must have failed with a reason.
    expect(outcome.ok).toBe(false);
    expect(rec.state).toBe('failed');
    expect(rec.error).toBeTruthy();
    expect(rec.containerId).toBeNull();
    expect(p.phase).toBe('failed');

    // Reconcile on the restarted engine: nothing left of the failed create, no record claiming
    // running without a running container, no labelled container without a record.
    const report = await m.reconcile();
    console.info(`[engine-restart] reconcile: ${JSON.stringify({ ...report, durationMs: undefined })}`);
    const containers = await m.driver.listManaged(rig.operatorId);
    const records = m.list();
    for (const c of containers) expect(records.map((r) => r.id)).toContain(c.sandboxId);
    for (const r of records.filter((x) => x.state === 'running'))
      expect(containers.find((c) => c.id === r.containerId)?.state).toBe('running');
    expect(containers.filter((c) => c.sandboxId === rec.id)).toEqual([]);
    expect(await m.driver.volumeExists(rec.volumeName)).toBe(false);
    expect(m.get(rec.id).state).toBe('failed');

    // A new create after the restart works, with a healthy sidecar.
    const fresh = await m.create({ owner, serviceId: 4, callId: 'engine-2' });
    expect(fresh.state).toBe('running');
    expect((await sidecarExec(m.sidecarEndpoint(fresh.id), 'id -u')).stdout).toBe('1000\n');
    await m.delete(fresh.id);
  });
});
