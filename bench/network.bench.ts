// Benchmark: what sandbox network isolation costs at create, on the real engine and image.
// (1) the choice: the engine's create → start → healthy sidecar for the same container spec on
//     (floor) Docker's default bridge, (a) one shared bridge with inter-container traffic off
//     (what the runtime uses), (b) a network of its own per sandbox (created with it, removed
//     with it; its create + remove counted) — interleaved, N rounds;
// (2) the product's create-to-ready (SandboxManager.create) before and after the change, in the
//     same run: egress open (Docker's default bridge, no rules: the old behaviour) vs public
//     (shared ICC-off bridge + the operator's egress rules) vs none (Docker's `none` network,
//     loopback only, the sidecar on a Unix socket), interleaved, with the ratio to (1)'s floor.
// Run: npx tsx bench/network.bench.ts [--n 15]
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeOperatorObjects } from '@agent-sandbox/runtime/testing';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import type Docker from 'dockerode';
import { buildContainerSpec } from '../runtime/src/docker/container-spec.ts';
import { DockerDriver } from '../runtime/src/docker/driver.ts';
import { waitForHealth } from '../runtime/src/docker/health.ts';
import { ensureSandboxNetwork } from '../runtime/src/docker/sandbox-network.ts';
import { SandboxManager } from '../runtime/src/sandbox/manager.ts';
import { EncryptedStore } from '../runtime/src/store/index.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg('n', 15);
const BENCH_LABEL = 'agent-sandbox.bench';
const LABELS = { 'agent-sandbox.test': '1', [BENCH_LABEL]: 'network' };
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};
const ms = (x: number) => `${x.toFixed(1)} ms`;
const line = (label: string, xs: number[], floor: number) => {
  const m = quantile(xs, 0.5);
  console.log(
    `  ${label.padEnd(44)} median ${ms(m).padStart(9)}  p99 ${ms(quantile(xs, 0.99)).padStart(9)}  ratio ${(m / floor).toFixed(2)}`,
  );
};

/** One container of the sandbox spec on `network` (undefined: default bridge), until healthy. */
async function engineOnce(
  driver: DockerDriver,
  image: string,
  tag: string,
  network: string | undefined | 'own',
): Promise<number> {
  const docker: Docker = driver.docker;
  const name = `asbx-bench-net-${process.pid}-${tag}`;
  const t0 = performance.now();
  let netName = network;
  if (network === 'own') {
    netName = name;
    await docker.createNetwork({
      Name: name,
      Driver: 'bridge',
      Options: { 'com.docker.network.bridge.enable_icc': 'false' },
      Labels: LABELS,
    });
  }
  const spec = buildContainerSpec({
    name,
    image,
    env: { SIDECAR_AUTH_TOKEN: randomBytes(32).toString('hex'), SIDECAR_PORT: '8080' },
    labels: LABELS,
    volumeName: name,
    volumeLabels: LABELS,
    sidecarPort: 8080,
    cpuCores: 1,
    memoryMb: 256,
    diskGb: 1,
    enforceDisk: false,
    pidsLimit: 1024,
    tmpfsSizeMb: 64,
    networkName: netName,
  });
  const c = await docker.createContainer(spec);
  const started = await driver.start(c.id, 8080);
  const health = await waitForHealth(
    { host: '127.0.0.1', port: started.hostPort },
    {
      timeoutMs: 60_000,
      intervalMs: 10,
      maxIntervalMs: 25,
    },
  );
  started.cancel();
  if (!health.ok) throw new Error(health.reason);
  const up = performance.now() - t0;
  // Removal is part of (b)'s price: the network goes with its sandbox.
  const t1 = performance.now();
  await driver.removeContainer(c.id);
  if (network === 'own') await docker.getNetwork(name).remove();
  const down = performance.now() - t1;
  await driver.removeVolume(name);
  return network === 'own' ? up + down : up;
}

async function main(): Promise<void> {
  const { tag: image } = await ensureSandboxImage({
    onProgress: (l) => process.stderr.write(`[image] ${l}\n`),
  });
  const driver = new DockerDriver();
  const shared = await ensureSandboxNetwork(driver.docker, 'public');
  const dir = await mkdtemp(join(tmpdir(), 'asbx-bench-net-'));
  const secret = randomBytes(32).toString('hex');
  const ids = {
    open: `bench-open-${randomBytes(4).toString('hex')}`,
    public: `bench-pub-${randomBytes(4).toString('hex')}`,
    none: `bench-none-${randomBytes(4).toString('hex')}`,
  };
  const managers: Record<'open' | 'public' | 'none', SandboxManager> = {} as never;
  const stores: EncryptedStore[] = [];
  try {
    for (const egress of ['open', 'public', 'none'] as const) {
      const store = await EncryptedStore.open({ dir: join(dir, egress), secret });
      stores.push(store);
      managers[egress] = await SandboxManager.open({
        store,
        driver,
        config: {
          operatorId: ids[egress],
          image,
          egress,
          snapshotDir: join(dir, `snap-${egress}`),
          extraLabels: LABELS,
          defaultMemoryMb: 256,
          healthTimeoutMs: 120_000,
        },
      });
    }
    let call = 0;
    const owner = '0x00000000000000000000000000000000000000be';
    const create = async (egress: 'open' | 'public' | 'none') => {
      const t0 = performance.now();
      const rec = await managers[egress].create({ owner, serviceId: 1, callId: `net-${++call}` });
      const dt = performance.now() - t0;
      await managers[egress].delete(rec.id);
      return dt;
    };
    // Warm-up of every path (image cache, disk-quota probe, first network use).
    await engineOnce(driver, image, 'w0', undefined);
    await engineOnce(driver, image, 'w1', shared.name);
    await engineOnce(driver, image, 'w2', 'own');
    await create('open');
    await create('public');
    await create('none');

    const floor: number[] = [];
    const sharedBridge: number[] = [];
    const own: number[] = [];
    const before: number[] = [];
    const after: number[] = [];
    const isolated: number[] = [];
    for (let i = 0; i < N; i++) {
      floor.push(await engineOnce(driver, image, `f${i}`, undefined));
      sharedBridge.push(await engineOnce(driver, image, `s${i}`, shared.name));
      own.push(await engineOnce(driver, image, `o${i}`, 'own'));
      before.push(await create('open'));
      after.push(await create('public'));
      isolated.push(await create('none'));
    }
    const f = quantile(floor, 0.5);
    console.log(
      `network choice: engine create → healthy sidecar, ${N} rounds interleaved (ratio to the floor)`,
    );
    line('floor: default bridge', floor, f);
    line('(a) shared bridge, ICC off', sharedBridge, f);
    line('(b) own network per sandbox (+ its create/rm)', own, f);
    console.log(`create-to-ready (SandboxManager.create), ${N} each, interleaved with the above`);
    line('before: egress open (default bridge, no rules)', before, f);
    line('after: egress public (shared bridge + rules)', after, f);
    line('egress none (no network, sidecar on a socket)', isolated, f);
  } finally {
    for (const m of Object.values(managers)) await m.close().catch(() => {});
    for (const s of stores) await s.close().catch(() => {});
    for (const id of Object.values(ids)) await removeOperatorObjects(driver, id);
    const left = await driver.docker.listContainers({
      all: true,
      filters: { label: [`${BENCH_LABEL}=network`] },
    });
    for (const c of left) await driver.removeContainer(c.Id);
    const nets = await driver.docker.listNetworks({ filters: { label: [`${BENCH_LABEL}=network`] } });
    for (const n of nets)
      await driver.docker
        .getNetwork(n.Id)
        .remove()
        .catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
