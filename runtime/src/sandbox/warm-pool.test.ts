// The warm pool on the real engine: pooled containers hardened like sandboxes and unreachable before
// a claim; a claim gets its own token (the bootstrap one dies), env and fresh workspace; two claims
// never share a container; refill, health-failure replacement, capacity, and kill -9 + reconcile.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { LABEL_ID, LABEL_OPERATOR } from '../docker/labels.ts';
import { isRuntimeError } from '../errors.ts';
import { publicView } from './record.ts';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

// Real containers on a shared 2-core machine: allow for a slow engine.
vi.setConfig({ testTimeout: 180_000 });

const image = inject('sandboxImage');
const owner = '0x00000000000000000000000000000000000000aa';
const CHILD = fileURLToPath(new URL('./testdata/pool-child.ts', import.meta.url));
let rig: TestRig;
let n = 0;
const create = (extra: Record<string, unknown> = {}) =>
  rig.manager.create({ owner, serviceId: 4, callId: `wp-${++n}`, ...extra });
const phasesOf = async (callId: string) =>
  (await rig.manager.getProvision(callId, 4)).phases.map((p) => p.phase);

/** The operator's containers the engine has, by sandbox-id label. */
async function containersOf(r: TestRig): Promise<Map<string, string>> {
  const list = await r.manager.driver.docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_OPERATOR}=${r.operatorId}`] },
  });
  return new Map(list.map((c) => [c.Labels[LABEL_ID] ?? '', c.Id]));
}

async function bootstrapToken(containerId: string): Promise<string> {
  const info = await rig.manager.driver.docker.getContainer(containerId).inspect();
  const e = info.Config.Env.find((x) => x.startsWith('SIDECAR_AUTH_TOKEN='));
  return e?.split('=')[1] ?? '';
}

const fill = async (r: TestRig) => {
  r.manager.warmPool!.refill();
  await r.manager.warmPool!.settled();
};

beforeAll(async () => {
  rig = await makeRig(image, { warmPool: 2, snapshotAutoCommit: false });
});
afterAll(async () => {
  await rig?.cleanup();
});

describe('warm pool', () => {
  it('pooled containers are hardened like a sandbox, healthy, and no owner can reach one before its claim', async () => {
    await fill(rig);
    const pool = rig.manager.warmPool!;
    expect(pool.size).toBe(2);
    const engine = await containersOf(rig);
    const ids = [...pool.ids()];
    expect(ids.every((id) => engine.has(id))).toBe(true);
    // No record: nothing lists it, addresses it or hands out its token.
    expect(rig.manager.list()).toEqual([]);
    for (const id of ids) {
      for (const reach of [() => rig.manager.get(id), () => rig.manager.sidecarEndpoint(id)]) {
        let err: unknown;
        try {
          reach();
        } catch (e) {
          err = e;
        }
        expect(isRuntimeError(err) && err.code).toBe('NOT_FOUND');
      }
    }
    const hc = (await rig.manager.driver.docker.getContainer(engine.get(ids[0]!)!).inspect()).HostConfig;
    expect(hc.CapDrop).toEqual(['ALL']);
    expect(hc.SecurityOpt).toContain('no-new-privileges:true');
    expect(hc.ReadonlyRootfs).toBe(true);
    expect(hc.Privileged).toBe(false);
    expect(hc.Memory).toBe(256 * 1024 * 1024);
    // Same hardening as a cold sandbox, field by field (a create with a non-default shape is cold).
    const cold = await create({ memoryMb: 300 });
    expect(await phasesOf(cold.callId)).not.toContain('pool_claim');
    const coldHc = (await rig.manager.driver.docker.getContainer(cold.containerId!).inspect()).HostConfig;
    for (const k of [
      'CapDrop',
      'CapAdd',
      'SecurityOpt',
      'ReadonlyRootfs',
      'PidsLimit',
      'Tmpfs',
      'NetworkMode',
      'Init',
    ] as const)
      expect(hc[k]).toEqual(coldHc[k]);
    await rig.manager.delete(cold.id);
  });

  it('a claim gets its own token (the bootstrap one dies), its env and a fresh workspace; the pool refills', async () => {
    await fill(rig);
    const before = rig.manager.warmPool!.ids();
    const rec = await create({ env: { GREETING: 'hi' } });
    expect(await phasesOf(rec.callId)).toEqual(['queued', 'pool_claim', 'ready']);
    expect(before.has(rec.id)).toBe(true);
    expect(rig.manager.warmPool!.ids().has(rec.id)).toBe(false);
    const boot = await bootstrapToken(rec.containerId!);
    expect(boot).toMatch(/^[0-9a-f]{64}$/);
    expect(rec.token).not.toBe(boot);
    // The API's view of the record carries neither token.
    const view = JSON.stringify(publicView(rig.manager.get(rec.id)));
    expect(view).not.toContain(boot);
    expect(view).not.toContain(rec.token);
    const ep = rig.manager.sidecarEndpoint(rec.id);
    await expect(sidecarExec({ ...ep, token: boot }, 'true')).rejects.toThrow(/403/);
    expect((await sidecarExec(ep, 'id -u; echo $GREETING')).stdout).toBe('1000\nhi\n');
    // The workspace holds what a cold sandbox's does (the image's skeleton), nothing more.
    const cold = await create({ memoryMb: 300 });
    const ls = 'ls -A /home/agent | sort';
    expect((await sidecarExec(ep, ls)).stdout).toBe(
      (await sidecarExec(rig.manager.sidecarEndpoint(cold.id), ls)).stdout,
    );
    expect(rec.volumeName).toContain(rec.id);
    await rig.manager.warmPool!.settled();
    expect(rig.manager.warmPool!.size).toBe(2);
    // Stop and resume: the restarted sidecar starts on the bootstrap token, the resume rotates it again.
    await rig.manager.stop(rec.id);
    await rig.manager.resume(rec.id);
    const ep2 = rig.manager.sidecarEndpoint(rec.id);
    await expect(sidecarExec({ ...ep2, token: boot }, 'true')).rejects.toThrow(/403/);
    expect((await sidecarExec(ep2, 'echo $GREETING')).stdout).toBe('hi\n');
    await rig.manager.delete(rec.id);
    await rig.manager.delete(cold.id);
  });

  it('two concurrent claims never get the same container; a create beyond the pool goes cold', async () => {
    await fill(rig);
    const recs = await Promise.all([create(), create(), create()]);
    const containers = new Set(recs.map((r) => r.containerId));
    expect(containers.size).toBe(3);
    const claimed = [];
    for (const r of recs) if ((await phasesOf(r.callId)).includes('pool_claim')) claimed.push(r);
    expect(claimed.length).toBeGreaterThanOrEqual(2);
    for (const r of recs) await rig.manager.delete(r.id);
  });

  it('a pooled container that fails its health check is replaced; one dead at its claim sends the create cold', async () => {
    await fill(rig);
    const pool = rig.manager.warmPool!;
    const [victim] = [...pool.ids()];
    const engine = await containersOf(rig);
    await rig.manager.driver.docker.getContainer(engine.get(victim!)!).kill();
    const { replaced } = await pool.check();
    expect(replaced).toEqual([victim]);
    expect(pool.size).toBe(2);
    expect(pool.ids().has(victim!)).toBe(false);
    expect((await containersOf(rig)).has(victim!)).toBe(false);
    // Both die without a check: the claim finds out, removes it and provisions cold.
    const now = await containersOf(rig);
    for (const id of pool.ids()) await rig.manager.driver.docker.getContainer(now.get(id)!).kill();
    const rec = await create();
    expect(await phasesOf(rec.callId)).toEqual([
      'queued',
      'pool_claim',
      'image_pull',
      'container_create',
      'container_start',
      'health_check',
      'ready',
    ]);
    expect((await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'echo ok')).stdout).toBe('ok\n');
    await rig.manager.delete(rec.id);
    await pool.check();
  });
});

describe('warm pool and capacity', () => {
  let small: TestRig;
  beforeAll(async () => {
    small = await makeRig(image, { warmPool: 2, maxSandboxes: 2, snapshotAutoCommit: false });
  });
  afterAll(async () => {
    await small?.cleanup();
  });

  it('shrinks to zero as live sandboxes reach the maximum, and never counts as one', async () => {
    await fill(small);
    const pool = small.manager.warmPool!;
    expect(pool.size).toBe(2);
    const mk = (i: number) => small.manager.create({ owner, serviceId: 5, callId: `cap-${i}` });
    const a = await mk(1);
    await pool.settled();
    expect(pool.size).toBe(1);
    const b = await mk(2);
    await pool.settled();
    expect(pool.size).toBe(0);
    expect((await containersOf(small)).size).toBe(2);
    await expect(mk(3)).rejects.toMatchObject({ code: 'CAPACITY_EXHAUSTED' });
    await small.manager.delete(a.id);
    await pool.check();
    expect(pool.size).toBe(1);
    await small.manager.delete(b.id);
  });
});

describe('warm pool after kill -9', () => {
  let crash: TestRig;
  beforeAll(async () => {
    crash = await makeRig(image, { warmPool: 1, snapshotAutoCommit: false }, { openManager: false });
  });
  afterAll(async () => {
    await crash?.cleanup();
  });

  /** Runs the child until it prints `lines` JSON lines (or dies), then SIGKILLs it. */
  async function runChild(
    callId: string,
    lines: number,
    killAt?: string,
  ): Promise<Array<Record<string, unknown>>> {
    const arg = { storeDir: crash.storeDir, secret: crash.secret, config: crash.config, callId, killAt };
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(arg)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const out: Array<Record<string, unknown>> = [];
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    for await (const line of createInterface({ input: child.stdout })) {
      out.push(JSON.parse(line) as Record<string, unknown>);
      if (out.length >= lines) break;
    }
    child.kill('SIGKILL');
    await exited;
    return out;
  }

  it('reconcile removes the unclaimed pool containers and keeps the claimed sandbox', async () => {
    const [first, done] = await runChild('crash-1', 2);
    const claimed = done!.claimed as string;
    const unclaimed = [...(first!.pooled as string[]), ...(done!.pooled as string[])].filter(
      (id) => id !== claimed,
    );
    expect(unclaimed.length).toBe(1);
    const manager = await crash.reopen();
    const report = await manager.reconcile();
    const engine = await containersOf(crash);
    expect([...engine.keys()]).toEqual([claimed]);
    expect(report.removedContainers.length).toBe(1);
    expect(manager.get(claimed).state).toBe('running');
    expect((await sidecarExec(manager.sidecarEndpoint(claimed), 'echo ok')).stdout).toBe('ok\n');
    await manager.delete(claimed);
  });

  it('a claim cut short is started over cold by the redelivered create, under the same id', async () => {
    await crash.close();
    const [first] = await runChild('crash-2', 2, 'pool_claim');
    const manager = await crash.reopen();
    const report = await manager.reconcile();
    expect(report.resumed.length).toBe(1);
    const id = report.resumed[0]!;
    expect(first!.pooled as string[]).toContain(id);
    expect((await containersOf(crash)).size).toBe(0);
    const rec = await manager.create({
      owner: '0x00000000000000000000000000000000000000cc',
      serviceId: 3,
      callId: 'crash-2',
    });
    expect(rec.id).toBe(id);
    expect(rec.containerToken ?? null).toBeNull();
    expect((await sidecarExec(manager.sidecarEndpoint(id), 'echo ok')).stdout).toBe('ok\n');
    await manager.delete(id);
  });
});
