// Benchmark: the sandbox runtime on the real engine with the real sandbox image.
// (1) cold create-to-ready (request -> healthy sidecar with its env) median/p99 over N sequential
//     creates, next to a floor measured in the same run, interleaved: `docker run -d` of the same
//     image with the same flags (volume, caps, limits, loopback port), /health polled every 10 ms;
// (2) warm-pool create (SANDBOX_WARM_POOL=2): claim -> ready to exec, N sequential claims (the
//     pool refilled before each), next to one authenticated sidecar exec round trip as the floor;
// (3) CONCURRENT creates submitted at once (small sandboxes): all ready?, total time, and this
//     process's RSS (the runtime half of the operator) with that many running;
// (4) reconcile of RECORDS records (the live sandboxes plus stopped/deleted ones written to the
//     store), after reopening the store: store load and reconcile time.
// Run: npx tsx bench/runtime.bench.ts [--n 30] [--concurrent 100] [--records 1000]
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { removeOperatorObjects, sidecarExec } from '@agent-sandbox/runtime/testing';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import { Registry } from 'prom-client';
import { SIDECAR_CAPS } from '../runtime/src/docker/container-spec.ts';
import { DockerDriver } from '../runtime/src/docker/driver.ts';
import { probeHealth } from '../runtime/src/docker/health.ts';
import { SandboxManager } from '../runtime/src/sandbox/manager.ts';
import { type SandboxRecord, SandboxRecordSchema } from '../runtime/src/sandbox/record.ts';
import { EncryptedStore } from '../runtime/src/store/index.ts';
import { figure, median, p99 } from './lib/figures.ts';

const run = promisify(execFile);
const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg('n', 30);
const CONCURRENT = arg('concurrent', 100);
const RECORDS = arg('records', 1000);
const LABELS = { 'agent-sandbox.test': '1', 'agent-sandbox.bench': 'runtime' };
const quantile = (xs: number[], q: number) => (q === 0.5 ? median(xs) : p99(xs));
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
    const fp = quantile(floor, 0.99);
    const op = quantile(ours, 0.99);
    const coldMet = m <= 1.0 * f;
    figure({
      id: 'cold-create',
      name: 'cold create-to-ready (runtime: SandboxManager.create)',
      unit: 'ms',
      n: N,
      median: m,
      p99: op,
      floor: { name: 'docker run -> /health of the same image', median: f, p99: fp },
      target: {
        text: 'cold create-to-ready <= 1.0x the docker run -> /health floor, median (the sidecar is ready when it first answers)',
        met: coldMet,
        ...(coldMet
          ? {}
          : {
              why: `median ${(m / f).toFixed(2)}x, p99 ${(op / fp).toFixed(2)}x: the env delivery (PUT /env) and the phase records come on top of the floor's start and /health`,
            }),
      },
    });

    await warmPool(config, driver);

    // Small sandboxes, so that CONCURRENT of them fit a 2-core machine.
    const small = () =>
      manager.create({ owner, serviceId: 1, callId: `bench-${++call}`, cpuCores: 0.1, memoryMb: 128 });
    const rssBefore = process.memoryUsage().rss;
    const t1 = performance.now();
    const results = await Promise.allSettled(Array.from({ length: CONCURRENT }, small));
    const total = performance.now() - t1;
    const ready = results.filter((r) => r.status === 'fulfilled' && r.value.state === 'running').length;
    const failed = results
      .filter((r) => r.status === 'rejected')
      .map((r) => String((r as PromiseRejectedResult).reason));
    console.log(
      `${CONCURRENT} concurrent creates: ${ready} ready in ${ms(total)} (${ms(total / CONCURRENT)} per sandbox)` +
        (failed.length ? `; ${failed.length} failed, first: ${failed[0]}` : ''),
    );
    figure({
      id: 'concurrent-creates-runtime',
      name: `${CONCURRENT} creates submitted at once (runtime, 0.1 cpu / 128 MB sandboxes): time until all ready`,
      unit: 'ms',
      n: CONCURRENT,
      median: total,
      target: {
        text: `${CONCURRENT} creates submitted at once all ready`,
        met: ready === CONCURRENT,
        ...(ready === CONCURRENT
          ? {}
          : { why: `${ready} of ${CONCURRENT} ready; first failure: ${failed[0]}` }),
      },
    });
    global.gc?.();
    const live = manager.list().filter((r) => r.state === 'running').length;
    const rss = process.memoryUsage().rss / 2 ** 20;
    console.log(
      `  process RSS before ${(rssBefore / 2 ** 20).toFixed(0)} MiB, with ${live} running ${rss.toFixed(0)} MiB`,
    );
    figure({
      id: 'rss-100-runtime',
      name: `RSS of the runtime process (SandboxManager + tsx) with ${live} running sandboxes`,
      unit: 'MiB',
      median: rss,
      target: {
        text: 'operator RSS <= 150 MiB with 100 running sandboxes',
        met: rss <= 150 && live >= 100,
        ...(rss <= 150 && live >= 100
          ? {}
          : { why: live < 100 ? `only ${live} sandboxes were running` : 'over the budget' }),
      },
      note: 'this bench process (runtime only, under tsx), not the operator program; the e2e bench reports the operator processes',
    });

    // A restart with RECORDS records: the live ones plus stopped (warm tier, no container) and
    // deleted tombstones written to the store, as a long-running operator accumulates them.
    await manager.close();
    await store.close();
    store = await EncryptedStore.open({ dir: join(dir, 'store'), secret });
    const coll = store.collection('sandboxes', SandboxRecordSchema);
    const model = (await coll.entries())[0]?.[1];
    const extra = Math.max(0, RECORDS - (await coll.entries()).length);
    if (model) {
      for (let i = 0; i < extra; i++) {
        const id = `sbx-${randomBytes(16).toString('hex')}`;
        const r: SandboxRecord = {
          ...model,
          id,
          callId: `filler-${i}`,
          volumeName: `agent-sandbox-ws-${id}`,
          containerId: null,
          hostPort: null,
          sidecarUrl: null,
          ...(i % 2 === 0
            ? {
                state: 'stopped',
                tier: 'warm',
                tierSince: Date.now(),
                stoppedAt: Date.now(),
                stopReason: 'idle',
              }
            : { state: 'deleted', tier: null }),
        };
        await coll.put(id, r);
      }
    }
    await store.close();
    const t2 = performance.now();
    store = await EncryptedStore.open({ dir: join(dir, 'store'), secret });
    const storeMs = performance.now() - t2;
    manager = await SandboxManager.open({ config, store, registry: new Registry(), driver });
    const openMs = performance.now() - t2 - storeMs;
    const report = await manager.reconcile();
    const running = manager.list().filter((r) => r.state === 'running').length;
    const changed = report.failed.length + report.stopped.length + report.removedContainers.length;
    console.log(
      `reconcile with ${report.records} records (${running} live containers): ${ms(report.durationMs)} ` +
        `(before it: store open ${ms(storeMs)}, manager open = records load + network and egress rules ${ms(openMs)}); changed: ${changed}`,
    );
    const met = report.durationMs <= 1000 && report.records >= 1000;
    figure({
      id: 'reconcile-1000',
      name: `reconcile after a restart with ${report.records} records (${running} live containers)`,
      unit: 'ms',
      median: report.durationMs,
      target: {
        text: 'reconcile of 1,000 records <= 1 s',
        met,
        ...(met ? {} : { why: report.records < 1000 ? `only ${report.records} records` : 'over 1 s' }),
      },
      note: `before it, store open ${ms(storeMs)} and manager open (records load, network, egress rules) ${ms(openMs)}; ${changed} records changed`,
    });
  } finally {
    await manager.close();
    await store.close().catch(() => {});
    await removeOperatorObjects(driver, operatorId);
    await rm(dir, { recursive: true, force: true });
  }
}

/** (2): claims from a pool of 2 (refilled before each), next to one sidecar exec round trip. */
async function warmPool(base: Record<string, unknown>, driver: DockerDriver): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'asbx-bench-pool-'));
  const operatorId = `bench-pool-${randomBytes(4).toString('hex')}`;
  const store = await EncryptedStore.open({
    dir: join(dir, 'store'),
    secret: randomBytes(32).toString('hex'),
  });
  const config = { ...base, operatorId, snapshotDir: join(dir, 'snapshots'), warmPool: 2 } as Parameters<
    typeof SandboxManager.open
  >[0]['config'];
  const m = await SandboxManager.open({ config, store, registry: new Registry(), driver });
  const owner = '0x00000000000000000000000000000000000000bf';
  try {
    const pool = m.warmPool!;
    const claims: number[] = [];
    const execs: number[] = [];
    for (let i = -1; i < N; i++) {
      pool.refill();
      await pool.settled();
      const t0 = performance.now();
      const rec = await m.create({ owner, serviceId: 1, callId: `pool-${i}`, env: { GREETING: 'hi' } });
      const dt = performance.now() - t0;
      const ep = m.sidecarEndpoint(rec.id);
      const t1 = performance.now();
      const r = await sidecarExec(ep, 'true');
      const de = performance.now() - t1;
      if (r.exitCode !== 0) throw new Error(`exec in a claimed sandbox failed: ${JSON.stringify(r)}`);
      const phases = (await m.getProvision(`pool-${i}`, 1)).phases.map((p) => p.phase);
      if (!phases.includes('pool_claim'))
        throw new Error(`create ${i} did not claim from the pool: ${phases}`);
      if (i >= 0) {
        claims.push(dt);
        execs.push(de);
      }
      await m.delete(rec.id);
    }
    const mc = median(claims);
    console.log(`warm-pool create (claim -> ready), ${N} sequential claims:`);
    console.log(`  claim   median ${ms(mc)}  p99 ${ms(p99(claims))}`);
    console.log(`  floor: one sidecar exec round trip median ${ms(median(execs))}  p99 ${ms(p99(execs))}`);
    figure({
      id: 'pool-claim',
      name: 'warm-pool create (runtime: claim -> ready to exec)',
      unit: 'ms',
      n: N,
      median: mc,
      p99: p99(claims),
      floor: {
        name: 'one authenticated sidecar exec (`true`) round trip',
        median: median(execs),
        p99: p99(execs),
      },
      target: {
        text: 'warm-pool create median <= 100 ms',
        met: mc <= 100,
        ...(mc <= 100
          ? {}
          : { why: 'the claim (store writes + PUT /env rotating the token) took longer on this machine' }),
      },
    });
  } finally {
    await m.close();
    await store.close();
    await removeOperatorObjects(driver, operatorId);
    await rm(dir, { recursive: true, force: true });
  }
}

// npm run bench stops a bench over its time with SIGINT: clean up (the finally in main) first.
process.on('SIGINT', () => {
  console.error('SIGINT: finishing the clean-up first');
});
await main();
