// A/B of two sandbox images on the cold path: SandboxManager.create -> ready with image A, then B,
// interleaved pair by pair on the same manager, so both see the same machine load. Used for the
// sidecar change of issue 17 (app loaded as soon as the server listens). Not run by `npm run bench`.
// Run: npx tsx bench/image-ab.ts <image A> <image B> [pairs, default 15]
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeOperatorObjects } from '@agent-sandbox/runtime/testing';
import { DockerDriver } from '../runtime/src/docker/driver.ts';
import { SandboxManager } from '../runtime/src/sandbox/manager.ts';
import { EncryptedStore } from '../runtime/src/store/index.ts';
import { median } from './lib/figures.ts';

const [A, B] = [process.argv[2], process.argv[3]];
if (!A || !B) throw new Error('usage: npx tsx bench/image-ab.ts <image A> <image B> [pairs]');
const PAIRS = Number(process.argv[4] ?? 15);
const dir = await mkdtemp(join(tmpdir(), 'asbx-bench-ab-'));
const operatorId = `bench-ab-${randomBytes(4).toString('hex')}`;
const driver = new DockerDriver();
const store = await EncryptedStore.open({ dir: join(dir, 'store'), secret: randomBytes(32).toString('hex') });
const config = {
  operatorId,
  image: A,
  snapshotDir: join(dir, 'snapshots'),
  extraLabels: { 'agent-sandbox.test': '1', 'agent-sandbox.bench': 'image-ab' },
  defaultMemoryMb: 256,
};
const m = await SandboxManager.open({ config, store, driver });
const t: Record<'A' | 'B', number[]> = { A: [], B: [] };
let call = 0;
try {
  // Pair 0 warms both images up and is not counted.
  for (let i = 0; i <= PAIRS; i++) {
    for (const [k, image] of [
      ['A', A],
      ['B', B],
    ] as const) {
      const t0 = performance.now();
      const r = await m.create({
        owner: '0x00000000000000000000000000000000000000be',
        serviceId: 1,
        callId: `ab-${++call}`,
        image,
      });
      if (i > 0) t[k].push(performance.now() - t0);
      await m.delete(r.id);
    }
  }
  const wins = t.A.filter((a, i) => (t.B[i] ?? Number.POSITIVE_INFINITY) < a).length;
  console.log(
    `A ${A}: median ${median(t.A).toFixed(0)} ms; B ${B}: median ${median(t.B).toFixed(0)} ms; B faster in ${wins}/${t.A.length} pairs`,
  );
} finally {
  await m.close();
  await store.close();
  await removeOperatorObjects(driver, operatorId);
  await rm(dir, { recursive: true, force: true });
}
