// A/B of two sandbox images on the cold path, each next to its own floor: per pair, in order,
// `docker run` -> /health of image A (the floor), SandboxManager.create -> ready with A, the floor
// of B, the create with B, on the same manager, so all four see the same machine load. Reports
// each median and p99, each image's create/floor ratio and the load average. The floor runs on a
// bridge network of the run's own (the engine's default bridge need not exist). Used for the
// sidecar changes of issue 17 (app loaded at listen) and issue 24 (a boot bundle that answers
// /health and PUT /env itself). Not run by `npm run bench`.
// Run: npx tsx bench/image-ab.ts <image A> <image B> [pairs, default 15]
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { removeOperatorObjects } from '@agent-sandbox/runtime/testing';
import { DockerDriver } from '../runtime/src/docker/driver.ts';
import { SandboxManager } from '../runtime/src/sandbox/manager.ts';
import { EncryptedStore } from '../runtime/src/store/index.ts';
import { median, p99 } from './lib/figures.ts';
import { type FloorShape, floorOnce } from './lib/floor.ts';

const exec = promisify(execFile);
const [A, B] = [process.argv[2], process.argv[3]];
if (!A || !B) throw new Error('usage: npx tsx bench/image-ab.ts <image A> <image B> [pairs]');
const PAIRS = Number(process.argv[4] ?? 15);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const dir = await mkdtemp(join(tmpdir(), 'asbx-bench-ab-'));
const operatorId = `bench-ab-${randomBytes(4).toString('hex')}`;
const run = `asbx-bench-ab-${process.pid}`;
const labels = { 'agent-sandbox.test': '1', 'agent-sandbox.bench': 'image-ab' };
const shape: FloorShape = {
  run,
  labels: Object.entries(labels).map(([k, v]) => `${k}=${v}`),
  runLabel: 'agent-sandbox.bench=image-ab',
  cpu: 1,
  memoryMb: 256,
  network: run,
};
const driver = new DockerDriver();
const store = await EncryptedStore.open({ dir: join(dir, 'store'), secret: randomBytes(32).toString('hex') });
const config = {
  operatorId,
  image: A,
  snapshotDir: join(dir, 'snapshots'),
  extraLabels: labels,
  defaultMemoryMb: 256,
};
const m = await SandboxManager.open({ config, store, driver });
type Key = 'A' | 'B';
const t: Record<Key, number[]> = { A: [], B: [] };
const f: Record<Key, number[]> = { A: [], B: [] };
let call = 0;
console.log(`image A/B, ${PAIRS} pairs (floor A, create A, floor B, create B); load at start ${load()}`);
await exec('docker', ['network', 'create', '--label', shape.runLabel, run]);
try {
  // Pair 0 warms both images up and is not counted.
  for (let i = 0; i <= PAIRS; i++) {
    for (const [k, image] of [
      ['A', A],
      ['B', B],
    ] as const) {
      const floor = await floorOnce(image, i * 2 + (k === 'A' ? 0 : 1), shape);
      const t0 = performance.now();
      const r = await m.create({
        owner: '0x00000000000000000000000000000000000000be',
        serviceId: 1,
        callId: `ab-${++call}`,
        image,
      });
      const dt = performance.now() - t0;
      await m.delete(r.id);
      if (i > 0) {
        t[k].push(dt);
        f[k].push(floor);
      }
    }
  }
  const line = (k: Key, image: string) =>
    `${k} ${image}: create median ${median(t[k]).toFixed(0)} ms (p99 ${p99(t[k]).toFixed(0)}), floor median ${median(f[k]).toFixed(0)} ms (p99 ${p99(f[k]).toFixed(0)}), ratio ${(median(t[k]) / median(f[k])).toFixed(2)}x (p99 ${(p99(t[k]) / p99(f[k])).toFixed(2)}x)`;
  console.log(line('A', A));
  console.log(line('B', B));
  const wins = t.A.filter((a, i) => (t.B[i] ?? Number.POSITIVE_INFINITY) < a).length;
  console.log(`B's create faster in ${wins}/${t.A.length} pairs; load at end ${load()}`);
} finally {
  await m.close();
  await store.close();
  await removeOperatorObjects(driver, operatorId);
  await exec('docker', ['network', 'rm', run]).catch(() => {});
  await rm(dir, { recursive: true, force: true });
}
