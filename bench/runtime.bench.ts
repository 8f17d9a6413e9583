// Benchmark: the sandbox runtime on the real engine with the real sandbox image.
// (1) create-to-ready (request -> healthy sidecar) median/p99 over N sequential creates, next to a
//     floor measured in the same run, interleaved: `docker run -d` of the same image with the same
//     flags (volume, caps, limits, loopback port), polling /health every 10 ms until it answers;
// (2) 50 concurrent creates: total time and this process's peak RSS;
// (3) reconcile with 100 records (100 live sandboxes), after reopening the store.
// Run: npx tsx bench/runtime.bench.ts [--n 30] [--concurrent 50]
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { removeOperatorObjects } from '@agent-sandbox/runtime/testing';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import { Registry } from 'prom-client';
import { SIDECAR_CAPS } from '../runtime/src/docker/container-spec.ts';
import { DockerDriver } from '../runtime/src/docker/driver.ts';
import { probeHealth } from '../runtime/src/docker/health.ts';
import { SandboxManager } from '../runtime/src/sandbox/manager.ts';
import { EncryptedStore } from '../runtime/src/store/index.ts';

const run = promisify(execFile);
const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg('n', 30);
const CONCURRENT = arg('concurrent', 50);
const LABELS = { 'agent-sandbox.test': '1', 'agent-sandbox.bench': 'runtime' };
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};
const ms = (x: number) => `${x.toFixed(1)} ms`;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** The floor: `docker run` of the same container, then GET /health every 10 ms. */
async function floorOnce(image: string, i: number): Promise<number> {
  const port = await freePort();
  const name = `asbx-bench-floor-${process.pid}-${i}`;
  const caps = SIDECAR_CAPS.flatMap((c) => ['--cap-add', c]);
  const t0 = performance.now();
  await run('docker', [
    'run',
    '-d',
    '--name',
    name,
    '--label',
    'agent-sandbox.test=1',
    '--label',
    'agent-sandbox.bench=runtime',
    '--cap-drop',
    'ALL',
    ...caps,
    '--security-opt',
    'no-new-privileges:true',
    '--tmpfs',
    '/tmp:rw,nosuid,nodev,size=256m',
    '--cpus',
    '1',
    '--memory',
    '256m',
    '--pids-limit',
    '1024',
    '--mount',
    `type=volume,source=${name},target=/home/agent`,
    '-p',
    `127.0.0.1:${port}:8080`,
    '-e',
    'SIDECAR_PORT=8080',
    '-e',
    `SIDECAR_AUTH_TOKEN=${randomBytes(32).toString('hex')}`,
    '-e',
    'AGENT_WORKSPACE_ROOT=/home/agent',
    '-e',
    'AGENT_SUBPROCESS_UID=1000',
    '-e',
    'AGENT_SUBPROCESS_GID=1000',
    image,
  ]);
  while (!(await probeHealth({ host: '127.0.0.1', port }, 1000))) await new Promise((r) => setTimeout(r, 10));
  const dt = performance.now() - t0;
  await run('docker', ['rm', '-f', '-v', name]);
  await run('docker', ['volume', 'rm', '-f', name]).catch(() => {});
  return dt;
}

async function main(): Promise<void> {
  const { tag: image } = await ensureSandboxImage({
    onProgress: (l) => process.stderr.write(`[image] ${l}\n`),
  });
  const dir = await mkdtemp(join(tmpdir(), 'asbx-bench-rt-'));
  const secret = randomBytes(32).toString('hex');
  const operatorId = `bench-${randomBytes(4).toString('hex')}`;
  const config = {
    operatorId,
    image,
    snapshotDir: join(dir, 'snapshots'),
    extraLabels: LABELS,
    defaultMemoryMb: 256,
    maxSandboxes: 0,
    healthTimeoutMs: 120_000,
  };
  const driver = new DockerDriver();
  let store = await EncryptedStore.open({ dir: join(dir, 'store'), secret });
  let manager = await SandboxManager.open({ config, store, registry: new Registry(), driver });
  const owner = '0x00000000000000000000000000000000000000be';
  let call = 0;
  const create = () => manager.create({ owner, serviceId: 1, callId: `bench-${++call}` });
  try {
    // Warm-up: the disk-quota probe and first-container caches, for both paths.
    await manager.delete((await create()).id);
    await floorOnce(image, -1);

    const ours: number[] = [];
    const floor: number[] = [];
    for (let i = 0; i < N; i++) {
      floor.push(await floorOnce(image, i));
      const t0 = performance.now();
      const rec = await create();
      ours.push(performance.now() - t0);
      await manager.delete(rec.id);
    }
    const m = quantile(ours, 0.5);
    const f = quantile(floor, 0.5);
    console.log(`create-to-ready, ${N} sequential creates (interleaved with the floor):`);
    console.log(`  SandboxManager.create   median ${ms(m)}  p99 ${ms(quantile(ours, 0.99))}`);
    console.log(`  floor: docker run+health median ${ms(f)}  p99 ${ms(quantile(floor, 0.99))}`);
    console.log(`  ratio (median ours / floor): ${(m / f).toFixed(2)}`);

    let peakRss = process.memoryUsage().rss;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
    }, 10);
    const rssBefore = process.memoryUsage().rss;
    const t1 = performance.now();
    await Promise.all(Array.from({ length: CONCURRENT }, create));
    const total = performance.now() - t1;
    clearInterval(sampler);
    console.log(
      `${CONCURRENT} concurrent creates: total ${ms(total)} (${ms(total / CONCURRENT)} per sandbox)`,
    );
    console.log(
      `  process RSS before ${(rssBefore / 2 ** 20).toFixed(0)} MiB, peak ${(peakRss / 2 ** 20).toFixed(0)} MiB`,
    );

    // Up to 100 live sandboxes, then a restart: reopen the store and reconcile.
    const more = Math.max(0, 100 - CONCURRENT);
    await Promise.all(Array.from({ length: more }, create));
    await manager.close();
    await store.close();
    const t2 = performance.now();
    store = await EncryptedStore.open({ dir: join(dir, 'store'), secret });
    manager = await SandboxManager.open({ config, store, registry: new Registry(), driver });
    const loadMs = performance.now() - t2;
    const report = await manager.reconcile();
    const live = manager.list().filter((r) => r.state === 'running').length;
    console.log(
      `reconcile with ${report.records} records (${live} live containers): ${ms(report.durationMs)} ` +
        `(store open + load ${ms(loadMs)}); changed: ${report.failed.length + report.stopped.length + report.removedContainers.length}`,
    );
  } finally {
    await manager.close();
    await store.close().catch(() => {});
    await removeOperatorObjects(driver, operatorId);
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
