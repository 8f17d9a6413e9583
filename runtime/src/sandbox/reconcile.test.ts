// Reconcile on the real engine: containers removed behind the operator's back, orphans, and an
// operator SIGKILLed mid-provision (a real child process) and restarted.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { DockerDriver } from '../docker/driver.ts';
import { waitForHealth } from '../docker/health.ts';
import { sandboxLabels } from '../docker/labels.ts';
import { socketPath } from '../docker/sidecar-socket.ts';
import { makeRig, sidecarExec, TEST_LABELS, type TestRig } from './testing/rig.ts';

// Real containers on a shared 2-core machine: allow for a slow engine.
vi.setConfig({ testTimeout: 180_000 });

const image = inject('sandboxImage');
const owner = '0x00000000000000000000000000000000000000bb';
const CHILD = fileURLToPath(new URL('./testdata/provision-child.ts', import.meta.url));
let rig: TestRig;
let n = 0;

beforeAll(async () => {
  rig = await makeRig(image, { snapshotAutoCommit: false });
});
afterAll(async () => {
  await rig?.cleanup();
});
const create = () => rig.manager.create({ owner, serviceId: 2, callId: `rc-${++n}` });

describe('reconcile', () => {
  it('a container removed behind the operator: stopped when its volume is left (files kept), failed when nothing is', async () => {
    const keep = await create();
    await sidecarExec(rig.manager.sidecarEndpoint(keep.id), 'echo still-here > /home/agent/k.txt');
    const lost = await create();
    await rig.manager.driver.docker.getContainer(keep.containerId!).remove({ force: true });
    await rig.manager.driver.docker.getContainer(lost.containerId!).remove({ force: true });
    await rig.manager.driver.removeVolume(lost.volumeName);
    const report = await rig.manager.reconcile();
    expect(report.stopped).toContain(keep.id);
    expect(report.failed).toContain(lost.id);
    expect(rig.manager.get(keep.id)).toMatchObject({
      state: 'stopped',
      stopReason: 'engine',
      containerId: null,
    });
    expect(rig.manager.get(lost.id).state).toBe('failed');
    expect(rig.manager.get(lost.id).error).toMatch(/removed outside the operator/);
    // GC with only the volume left: archived through a never-started container, then resumed.
    const gc = await rig.manager.gcTick(rig.manager.get(keep.id).tierSince! + 86_400_000);
    expect(gc.acted).toContainEqual({ id: keep.id, action: 'hot->warm' });
    expect(rig.manager.get(keep.id)).toMatchObject({ tier: 'warm', snapshotImageId: null });
    expect(await rig.manager.driver.volumeExists(keep.volumeName)).toBe(false);
    // Resume from the archived workspace: same id and token, files back.
    const back = await rig.manager.resume(keep.id);
    expect(back.token).toBe(keep.token);
    expect((await sidecarExec(rig.manager.sidecarEndpoint(keep.id), 'cat /home/agent/k.txt')).stdout).toBe(
      'still-here\n',
    );
    await rig.manager.delete(keep.id);
  });

  it('stop of a sandbox whose container vanished (no reconcile yet) ends consistent', async () => {
    const rec = await create();
    await rig.manager.driver.docker.getContainer(rec.containerId!).remove({ force: true });
    const [a, b] = await Promise.all([rig.manager.stop(rec.id), rig.manager.stop(rec.id)]);
    expect(a.state).toBe('stopped');
    expect(b.state).toBe('stopped');
    await rig.manager.delete(rec.id);
  });

  it('removes a labelled container that has no record, and leaves other operators alone', async () => {
    const stray = await rig.manager.driver.docker.createContainer({
      Image: image,
      Cmd: ['true'],
      Labels: sandboxLabels(
        { id: 'sbx-stray', owner, serviceId: '2', operatorId: rig.operatorId },
        'sandbox',
        TEST_LABELS,
      ),
    });
    const other = await rig.manager.driver.docker.createContainer({
      Image: image,
      Cmd: ['true'],
      Labels: sandboxLabels(
        { id: 'sbx-other', owner, serviceId: '2', operatorId: `${rig.operatorId}-x` },
        'sandbox',
        TEST_LABELS,
      ),
    });
    try {
      const report = await rig.manager.reconcile();
      expect(report.removedContainers).toContain(stray.id);
      expect(await rig.manager.driver.exists(stray.id)).toBeUndefined();
      expect(await rig.manager.driver.exists(other.id)).toBeDefined();
    } finally {
      await rig.manager.driver.removeContainer(other.id);
    }
  });
});

/** Runs the child until its sandbox container runs, SIGKILLs it, and waits for it to be gone. */
async function killMidProvision(child: TestRig, callId: string, cmd: string[]): Promise<void> {
  const driver = new DockerDriver();
  const arg = JSON.stringify({
    storeDir: child.storeDir,
    secret: child.secret,
    config: child.config,
    callId,
    cmd,
  });
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, arg], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<NodeJS.Signals | number | null>((r) =>
    proc.on('exit', (code, sig) => r(sig ?? code)),
  );
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const list = await driver.listManaged(child.operatorId);
    if (list.some((c) => c.state === 'running')) break;
    if (proc.exitCode !== null) throw new Error(`child exited early: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 300)); // now inside health_check
  proc.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
}

/** Runs the child with `killAt`: it SIGKILLs itself as soon as that phase is recorded. */
async function killAtPhase(child: TestRig, callId: string, killAt: string): Promise<void> {
  const arg = JSON.stringify({
    storeDir: child.storeDir,
    secret: child.secret,
    config: child.config,
    callId,
    killAt,
  });
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, arg], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (d) => {
    stderr += d;
  });
  const how = await new Promise<NodeJS.Signals | number | null>((r) =>
    proc.on('exit', (code, sig) => r(sig ?? code)),
  );
  if (how !== 'SIGKILL') throw new Error(`child was not killed at ${killAt} (exit ${how}): ${stderr}`);
}

describe('operator killed mid-provision and restarted', () => {
  // kill -9 at every phase: the restarted operator carries the same create (same sandbox id) to
  // a running sandbox, with exactly one container, when its create job comes again.
  for (const killAt of ['image_pull', 'container_create', 'container_start', 'health_check', 'ready']) {
    it(`killed at ${killAt}: resumed to a running sandbox, one container, nothing orphaned`, async () => {
      const child = await makeRig(image, { healthTimeoutMs: 60_000 }, { openManager: false });
      try {
        const callId = `kill-${killAt}`;
        await killAtPhase(child, callId, killAt);
        const m = await child.reopen();
        const p0 = await m.getProvision(callId);
        const report = await m.reconcile();
        expect(report.failed).toEqual([]);
        expect([...report.resumed, ...report.finished, p0.sandboxId]).toContain(p0.sandboxId);
        // The create job comes again (the runner redelivers an unanswered call): same call id.
        const rec = await m.create({
          owner: '0x00000000000000000000000000000000000000cc',
          serviceId: 3,
          callId,
        });
        expect(rec.id).toBe(p0.sandboxId);
        expect(rec.state).toBe('running');
        const containers = await m.driver.listManaged(child.operatorId);
        expect(containers.map((c) => c.id)).toEqual([rec.containerId]);
        expect((await sidecarExec(m.sidecarEndpoint(rec.id), 'id -u')).stdout).toBe('1000\n');
        // And again: the same record, no second container.
        const again = await m.create({
          owner: '0x00000000000000000000000000000000000000cc',
          serviceId: 3,
          callId,
        });
        expect(again.containerId).toBe(rec.containerId);
        expect(await m.driver.listManaged(child.operatorId)).toHaveLength(1);
      } finally {
        await child.cleanup();
      }
    });
  }

  it('a provision cut short longer ago than the resume window is cleaned up and failed, never resumed', async () => {
    const child = await makeRig(image, { healthTimeoutMs: 60_000 }, { openManager: false });
    try {
      await killMidProvision(child, 'crash-1', ['sleep', '600']);
      child.clock.now = Date.now() + 2 * 3_600_000;
      const m = await child.reopen();
      expect(await m.driver.listManaged(child.operatorId)).toHaveLength(1); // the orphan the crash left
      const p0 = await m.getProvision('crash-1');
      const report = await m.reconcile();
      expect(report.failed).toEqual([p0.sandboxId]);
      expect(await m.driver.listManaged(child.operatorId)).toEqual([]);
      const rec = m.get(p0.sandboxId);
      expect(rec.state).toBe('failed');
      expect(rec.error).toMatch(/operator restarted during provisioning/);
      expect(await m.driver.volumeExists(rec.volumeName)).toBe(false);
      // The same call id is not provisioned twice.
      await expect(m.create({ owner, serviceId: 3, callId: 'crash-1' })).rejects.toMatchObject({
        code: 'PROVISION_FAILED',
      });
    } finally {
      await child.cleanup();
    }
  });

  it('finishes a provision whose sidecar came up after the crash', async () => {
    const child = await makeRig(image, { healthTimeoutMs: 60_000 }, { openManager: false });
    try {
      // The real sidecar, started 2 s late: the child dies while polling /health.
      await killMidProvision(child, 'crash-2', ['sh', '-c', 'sleep 2; exec node /opt/sidecar/sidecar.cjs']);
      await new Promise((r) => setTimeout(r, 3000));
      const m = await child.reopen();
      const report = await m.reconcile();
      const p = await m.getProvision('crash-2');
      expect(report.finished).toEqual([p.sandboxId]);
      expect(p.phase).toBe('ready');
      const rec = m.get(p.sandboxId);
      expect(rec.state).toBe('running');
      expect((await sidecarExec(m.sidecarEndpoint(rec.id), 'id -u')).stdout).toBe('1000\n');
    } finally {
      await child.cleanup();
    }
  });

  it('under egress none, finishes such a provision through the sidecar socket', async () => {
    const child = await makeRig(image, { healthTimeoutMs: 60_000, egress: 'none' }, { openManager: false });
    try {
      await killMidProvision(child, 'crash-none', [
        'sh',
        '-c',
        'sleep 2; exec node /opt/sidecar/sidecar.cjs',
      ]);
      const [c] = await new DockerDriver().listManaged(child.operatorId);
      const sock = socketPath(child.config.sidecarSocketDir!, c!.sandboxId!);
      // The sidecar comes up on its socket after the crash; reconcile then finds it healthy.
      await expect(
        waitForHealth({ socketPath: sock }, { timeoutMs: 30_000, intervalMs: 50, maxIntervalMs: 200 }),
      ).resolves.toMatchObject({ ok: true });
      const m = await child.reopen();
      const report = await m.reconcile();
      const p = await m.getProvision('crash-none');
      expect(report.finished).toEqual([p.sandboxId]);
      const rec = m.get(p.sandboxId);
      expect([rec.state, rec.hostPort, rec.sidecarUrl]).toEqual(['running', null, `unix:${sock}`]);
      expect((await sidecarExec(m.sidecarEndpoint(rec.id), 'ls /sys/class/net')).stdout).toBe('lo\n');
    } finally {
      await child.cleanup();
    }
  });
});
