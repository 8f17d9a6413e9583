// Benchmark: the storage work of issue 11 on the real engine with the real sandbox image.
// (1) snapshot scrub: `docker commit` of a running sandbox alone (the floor), commit + the
//     config-only scrub (what every snapshot does now), commit + the full save -> scrub -> load
//     (the fallback), interleaved, median/p99 and ratio to the floor;
// (2) create-to-ready with a loop-disk workspace (mkfs + losetup per sandbox) vs without,
//     interleaved, median/p99 and ratio.
// Run: npx tsx bench/storage.bench.ts [--n 10]
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeOperatorObjects } from '@agent-sandbox/runtime/testing';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import { DockerDriver } from '../runtime/src/docker/driver.ts';
import { SandboxManager } from '../runtime/src/sandbox/manager.ts';
import { EncryptedStore } from '../runtime/src/store/index.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg('n', 10);
const LABELS = { 'agent-sandbox.test': '1', 'agent-sandbox.bench': 'storage' };
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};
const ms = (x: number) => `${x.toFixed(1)} ms`;
const report = (name: string, xs: number[], floor?: number[]) => {
  const med = quantile(xs, 0.5);
  const ratio = floor ? `  ratio ${(med / quantile(floor, 0.5)).toFixed(2)}x` : '';
  console.log(`${name.padEnd(34)} median ${ms(med)}  p99 ${ms(quantile(xs, 0.99))}${ratio}`);
};

async function open(dir: string, operatorId: string, image: string, loop: boolean) {
  const store = await EncryptedStore.open({
    dir: join(dir, `store-${loop}`),
    secret: randomBytes(32).toString('hex'),
  });
  const manager = await SandboxManager.open({
    store,
    driver: new DockerDriver(),
    config: {
      operatorId,
      image,
      snapshotDir: join(dir, `snapshots-${loop}`),
      extraLabels: LABELS,
      workspaceDisk: loop ? 'loop' : 'none',
      defaultMemoryMb: 256,
      stopTimeoutSeconds: 1,
    },
  });
  return { store, manager };
}

async function main(): Promise<void> {
  const { tag: image } = await ensureSandboxImage();
  const dir = await mkdtemp(join(tmpdir(), 'asbx-bench-storage-'));
  const operatorId = `bench-${randomBytes(6).toString('hex')}`;
  const plain = await open(dir, operatorId, image, false);
  const loop = await open(dir, operatorId, image, true);
  const driver = plain.manager.driver;
  try {
    // (1) scrub
    const sbx = await plain.manager.create({ owner: '0xbench', serviceId: 1, callId: 'scrub' });
    const commit = () =>
      driver.commit(sbx.containerId!, 'agent-sandbox-snapshot', `bench-${operatorId}`, {
        baseImageEnv: [],
        containerEnvKeys: ['SIDECAR_AUTH_TOKEN'],
        labels: { ...LABELS, 'agent-sandbox.operator': operatorId },
      });
    const tag = `agent-sandbox-snapshot:bench-${operatorId}`;
    const floor: number[] = [];
    const fast: number[] = [];
    const full: number[] = [];
    for (let i = 0; i < N; i++) {
      let t = performance.now();
      let id = await commit();
      floor.push(performance.now() - t);
      await driver.removeImage(id);
      t = performance.now();
      id = await driver.scrubImage(await commit(), tag);
      fast.push(performance.now() - t);
      await driver.removeImage(id);
      t = performance.now();
      id = await driver.scrubImageInEngine(await commit(), tag);
      full.push(performance.now() - t);
      await driver.removeImage(id);
    }
    console.log(`snapshot scrub, ${N} rounds interleaved`);
    report('docker commit (floor)', floor);
    report('commit + config-only scrub', fast, floor);
    report('commit + save/scrub/load', full, floor);
    await plain.manager.delete(sbx.id);

    // (2) create-to-ready, loop disk vs none
    const none: number[] = [];
    const disk: number[] = [];
    for (let i = 0; i < N; i++) {
      for (const [m, out] of [
        [plain.manager, none],
        [loop.manager, disk],
      ] as const) {
        const t = performance.now();
        const r = await m.create({ owner: '0xbench', serviceId: 1, callId: `c-${out === disk}-${i}` });
        out.push(performance.now() - t);
        await m.delete(r.id);
      }
    }
    console.log(`create-to-ready, ${N} each interleaved (disk_gb default 10)`);
    report('workspace not limited (floor)', none);
    report('workspace on a loop disk', disk, none);
  } finally {
    await removeOperatorObjects(driver, operatorId);
    await plain.store.close();
    await loop.store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
