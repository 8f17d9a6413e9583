// Forks and branches on the real engine: a create from a snapshot the caller owns, a branch of a
// sandbox the caller owns (new id, new token, a copy of the workspace, no secret, no token of the
// source), refused for another tenant's snapshot or sandbox, and an operator killed mid-branch
// ending with exactly one sandbox.
import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { DockerDriver } from '../docker/driver.ts';
import { waitForHealth } from '../docker/health.ts';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

// Real containers on a shared 2-core machine: allow for a slow engine.
vi.setConfig({ testTimeout: 240_000 });

const image = inject('sandboxImage');
const alice = '0x00000000000000000000000000000000000000a1';
const mallory = '0x00000000000000000000000000000000000000e7';
const SECRET = `sk-fork-${'5e'.repeat(12)}`;
const CHILD = fileURLToPath(new URL('./testdata/provision-child.ts', import.meta.url));
let rig: TestRig;
let n = 0;

beforeAll(async () => {
  rig = await makeRig(image, { snapshotAutoCommit: false });
});
afterAll(async () => {
  await rig?.cleanup();
});

const create = (owner: string, extra: Record<string, unknown> = {}) =>
  rig.manager.create({ owner, serviceId: 7, callId: `fk-${++n}`, ...extra });

/** Alice's sandbox with a file in its workspace, a create env value and a secret. */
async function aliceSandbox() {
  const src = await create(alice, { env: { GREETING: 'hello-from-source' } });
  await sidecarExec(
    rig.manager.sidecarEndpoint(src.id),
    'mkdir -p /home/agent/proj && echo v1 > /home/agent/proj/a.txt',
  );
  await rig.manager.injectSecrets(src.id, { API_KEY: SECRET });
  return rig.manager.get(src.id);
}

describe('another tenant', () => {
  it("refuses another owner's sandbox and snapshot as a source, with the same answer as for none, and makes nothing", async () => {
    const src = await aliceSandbox();
    const snap = await rig.manager.snapshot(src.id);
    const before = rig.manager.list().length;
    const attempts: Array<Record<string, unknown>> = [
      { fromSandbox: src.id },
      { fromSnapshot: snap.snapshotImageId },
    ];
    for (const extra of attempts) {
      const err = await create(mallory, extra).catch((e) => e);
      expect(err, JSON.stringify(extra)).toMatchObject({ code: 'SOURCE_NOT_FOUND' });
      // No oracle: another tenant's id gets the answer an id that exists nowhere gets.
      const key = Object.keys(extra)[0]!;
      const value = String(extra[key]);
      const none = value.startsWith('sbx-') ? `sbx-${'0'.repeat(32)}` : `sha256:${'0'.repeat(64)}`;
      const err2 = await create(mallory, { [key]: none }).catch((e) => e);
      expect(err2.code).toBe('SOURCE_NOT_FOUND');
      expect(err2.message.replace(none, 'ID')).toBe(err.message.replace(value, 'ID'));
    }
    expect(rig.manager.list()).toHaveLength(before);
    expect(rig.manager.list({ owner: mallory })).toEqual([]);
    // The source is untouched.
    expect(rig.manager.get(src.id)).toMatchObject({ state: 'running', owner: alice });
    await rig.manager.delete(src.id);
  });

  it('refuses a malformed source id before anything is looked up or created', async () => {
    for (const extra of [
      { fromSandbox: '../../etc/passwd' },
      { fromSandbox: `sbx-${'a'.repeat(31)}/` },
      { fromSnapshot: 'agent-sandbox-snapshot:sbx-1' },
      { fromSnapshot: `sha256:${'A'.repeat(64)}` },
      { fromSandbox: `sbx-${'a'.repeat(32)}`, fromSnapshot: `sha256:${'a'.repeat(64)}` },
    ]) {
      await expect(create(alice, extra), JSON.stringify(extra)).rejects.toMatchObject({ code: 'VALIDATION' });
    }
  });
});

describe('branch and create from a snapshot', () => {
  it('a branch is a new sandbox with a copy of the workspace, a new token, and no secret or token of its source', async () => {
    const src = await aliceSandbox();
    const branch = await create(alice, { fromSandbox: src.id });
    expect(branch.id).not.toBe(src.id);
    expect(branch.state).toBe('running');
    expect(branch.token).not.toBe(src.token);
    expect(branch.owner).toBe(alice);
    expect(branch.userEnv).toEqual({});
    expect(branch.baseEnv).toEqual({});
    expect(branch.source).toEqual({ kind: 'sandbox', sandboxId: src.id });
    const ep = rig.manager.sidecarEndpoint(branch.id);
    expect((await sidecarExec(ep, 'cat /home/agent/proj/a.txt')).stdout).toBe('v1\n');
    // Neither the secret, nor the create env, nor the source's token: not in its env, not on disk.
    const env = (await sidecarExec(ep, 'env')).stdout;
    for (const needle of [SECRET, 'API_KEY', 'hello-from-source', src.token])
      expect(env).not.toContain(needle);
    const grep = await sidecarExec(
      ep,
      `grep -rl -e '${SECRET}' -e '${src.token}' /home/agent /tmp /var/tmp 2>/dev/null; echo done`,
    );
    expect(grep.stdout).toBe('done\n');
    const info = await rig.manager.driver.docker.getContainer(branch.containerId!).inspect();
    expect(JSON.stringify(info.Config.Env)).not.toContain(src.token);
    expect(JSON.stringify(info.Config.Env)).not.toContain(SECRET);
    // The source's token opens nothing on the branch (the sidecar's answer to a wrong token: 403).
    const res = await fetch(`${ep.url}/terminals/commands`, {
      method: 'POST',
      headers: { authorization: `Bearer ${src.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'true' }),
    });
    expect(res.status).toBe(403);
    // Two sandboxes from here on: a write in one is not in the other.
    await sidecarExec(ep, 'echo branch-only > /home/agent/proj/b.txt');
    const inSource = await sidecarExec(rig.manager.sidecarEndpoint(src.id), 'ls /home/agent/proj');
    expect(inSource.stdout).toBe('a.txt\n');
    expect(rig.manager.get(src.id)).toMatchObject({ state: 'running', userEnv: { API_KEY: SECRET } });
    // The owner sets secrets again on the branch.
    await rig.manager.injectSecrets(branch.id, { API_KEY: 'set-again' });
    const again = await sidecarExec(rig.manager.sidecarEndpoint(branch.id), 'echo "[$API_KEY]"');
    expect(again.stdout).toBe('[set-again]\n');
    const p = await rig.manager.getProvision(branch.callId, branch.serviceId);
    expect(p.phases.map((x) => x.phase)).toEqual([
      'queued',
      'image_pull',
      'workspace_copy',
      'container_create',
      'container_start',
      'health_check',
      'ready',
    ]);
    await rig.manager.delete(branch.id);
    await rig.manager.delete(src.id);
  });

  it('a stopped sandbox can be branched too', async () => {
    const src = await aliceSandbox();
    await rig.manager.stop(src.id);
    const branch = await create(alice, { fromSandbox: src.id });
    expect(
      (await sidecarExec(rig.manager.sidecarEndpoint(branch.id), 'cat /home/agent/proj/a.txt')).stdout,
    ).toBe('v1\n');
    expect(rig.manager.get(src.id).state).toBe('stopped');
    await rig.manager.delete(branch.id);
    await rig.manager.delete(src.id);
  });

  it('a create from a snapshot gets the workspace as it was at the snapshot, no secret, and its own token', async () => {
    const src = await aliceSandbox();
    const snap = await rig.manager.snapshot(src.id);
    await sidecarExec(rig.manager.sidecarEndpoint(src.id), 'echo later > /home/agent/proj/later.txt');
    const copy = await create(alice, { fromSnapshot: snap.snapshotImageId });
    expect(copy.source).toEqual({ kind: 'snapshot', sandboxId: src.id, snapshotId: snap.snapshotImageId });
    expect(copy.token).not.toBe(src.token);
    const ep = rig.manager.sidecarEndpoint(copy.id);
    expect((await sidecarExec(ep, 'ls /home/agent/proj')).stdout).toBe('a.txt\n');
    expect((await sidecarExec(ep, 'env')).stdout).not.toContain(SECRET);
    // The owner address is matched whatever its case (a checksummed address is the same owner).
    const upper = await create(alice.toUpperCase().replace('0X', '0x'), {
      fromSnapshot: snap.snapshotImageId,
    });
    expect(upper.state).toBe('running');
    for (const id of [copy.id, upper.id, src.id]) await rig.manager.delete(id);
    // Deleted with its source: the snapshot is gone too.
    await expect(create(alice, { fromSnapshot: snap.snapshotImageId })).rejects.toMatchObject({
      code: 'SOURCE_NOT_FOUND',
    });
  });
});

/** Runs the child provision with `params`; it SIGKILLs itself as soon as phase `killAt` is recorded. */
async function killAtPhase(
  child: TestRig,
  callId: string,
  killAt: string,
  params: Record<string, unknown>,
  cmd?: string[],
) {
  const arg = JSON.stringify({
    storeDir: child.storeDir,
    secret: child.secret,
    config: child.config,
    callId,
    killAt,
    params,
    ...(cmd ? { cmd } : {}),
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

describe('operator killed mid-branch', () => {
  const owner = '0x00000000000000000000000000000000000000cc';
  for (const killAt of ['workspace_copy', 'container_create']) {
    it(`killed at ${killAt}: the redelivered create ends with exactly one branch, running, with the copy`, async () => {
      const child = await makeRig(image, { healthTimeoutMs: 60_000, snapshotAutoCommit: false });
      try {
        const src = await child.manager.create({ owner, serviceId: 3, callId: 'src' });
        await sidecarExec(child.manager.sidecarEndpoint(src.id), 'echo kept > /home/agent/k.txt');
        await child.close();
        const callId = `branch-${killAt}`;
        await killAtPhase(child, callId, killAt, { fromSandbox: src.id });
        const m = await child.reopen();
        const p0 = await m.getProvision(callId);
        const report = await m.reconcile();
        expect(report.failed).toEqual([]);
        // The create job comes again (the runner redelivers an unanswered call): same call id.
        const rec = await m.create({ owner, serviceId: 3, callId, fromSandbox: src.id });
        expect(rec.id).toBe(p0.sandboxId);
        expect(rec.state).toBe('running');
        expect((await sidecarExec(m.sidecarEndpoint(rec.id), 'cat /home/agent/k.txt')).stdout).toBe('kept\n');
        const again = await m.create({ owner, serviceId: 3, callId, fromSandbox: src.id });
        expect(again.containerId).toBe(rec.containerId);
        const containers = (await m.driver.listManaged(child.operatorId)).map((c) => c.id).sort();
        expect(containers).toEqual([src.containerId, rec.containerId].sort());
        expect(
          m
            .list()
            .map((r) => r.id)
            .sort(),
        ).toEqual([src.id, rec.id].sort());
      } finally {
        await child.cleanup();
      }
    });
  }

  it('killed at health_check with its sidecar coming up after the crash: reconcile finishes the branch and drops the copy', async () => {
    const child = await makeRig(image, { healthTimeoutMs: 60_000, snapshotAutoCommit: false });
    try {
      const src = await child.manager.create({ owner, serviceId: 3, callId: 'src' });
      await sidecarExec(child.manager.sidecarEndpoint(src.id), 'echo kept > /home/agent/k.txt');
      await child.close();
      // The real sidecar, started 2 s late: the child dies as soon as health_check is recorded.
      const late = ['sh', '-c', 'sleep 2; exec node /opt/sidecar/sidecar.cjs'];
      await killAtPhase(child, 'branch-late', 'health_check', { fromSandbox: src.id }, late);
      const driver = new DockerDriver();
      const m0 = await child.reopen();
      const p0 = await m0.getProvision('branch-late');
      const [c] = (await driver.listManaged(child.operatorId)).filter((x) => x.sandboxId === p0.sandboxId);
      const port = c!.loopbackPorts[m0.config.sidecarPort]!;
      const up = await waitForHealth(
        { host: '127.0.0.1', port },
        { timeoutMs: 30_000, intervalMs: 50, maxIntervalMs: 200 },
      );
      expect(up.ok).toBe(true);
      const report = await m0.reconcile();
      expect(report.finished).toEqual([p0.sandboxId]);
      const rec = m0.get(p0.sandboxId);
      expect(rec.state).toBe('running');
      expect((await sidecarExec(m0.sidecarEndpoint(rec.id), 'cat /home/agent/k.txt')).stdout).toBe('kept\n');
      const dir = join(child.config.snapshotDir!, rec.id);
      expect((await readdir(dir).catch(() => [])).filter((f) => f.startsWith('fork-'))).toEqual([]);
    } finally {
      await child.cleanup();
    }
  });
});
