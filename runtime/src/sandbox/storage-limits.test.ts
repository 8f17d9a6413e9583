// Snapshot storage limits on the real engine: a per-sandbox cap and an operator-wide budget on
// POST snapshot and the GC tiers. Over either → STORAGE_LIMIT naming the limit and its variable,
// and nothing half-written: no archive or temp file, no new image, the record unchanged.
import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { LABEL_ID } from '../docker/labels.ts';
import type { SandboxRecord } from './record.ts';
import { archiveDirOf } from './storage.ts';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 300_000 });

const MiB = 1024 * 1024;
const image = inject('sandboxImage');
const owner = '0x00000000000000000000000000000000000000cc';
let rig: TestRig;

beforeAll(async () => {
  rig = await makeRig(image, {
    snapshotMaxBytes: 16 * MiB,
    storageBudgetBytes: 24 * MiB,
    gcHotRetentionSeconds: 100,
    gcWarmRetentionSeconds: 200,
    gcColdRetentionSeconds: 300,
  });
});
afterAll(async () => {
  await rig?.cleanup();
});

const write = (id: string, mb: number) =>
  sidecarExec(
    rig.manager.sidecarEndpoint(id),
    `rm -f /home/agent/big && head -c ${mb * MiB} /dev/urandom > /home/agent/big && echo ok`,
  );

async function leftovers(rec: SandboxRecord): Promise<{ files: string[]; images: string[] }> {
  const files = await readdir(archiveDirOf({ cfg: rig.manager.config } as never, rec.id)).catch(() => []);
  const images = await rig.manager.driver.imagesWithLabel(LABEL_ID, rec.id);
  return { files, images };
}

describe('snapshot storage limits', () => {
  it('refuses a snapshot over the per-sandbox cap or the operator budget, leaving nothing; GC obeys both', async () => {
    const a = await rig.manager.create({ owner, serviceId: 1, callId: 'lim-a' });
    const b = await rig.manager.create({ owner, serviceId: 1, callId: 'lim-b' });

    // Per-sandbox cap (16 MiB): a 20 MiB workspace cannot be snapshotted.
    expect((await write(a.id, 20)).stdout).toBe('ok\n');
    const capErr = await rig.manager.snapshot(a.id).catch((e) => e);
    expect(capErr).toMatchObject({ code: 'STORAGE_LIMIT' });
    expect(capErr.message).toContain('SANDBOX_SNAPSHOT_MAX_MB');
    expect(capErr.message).toContain('Nothing was written');
    expect(await leftovers(a)).toEqual({ files: [], images: [] });
    expect(rig.manager.get(a.id).snapshotImageId).toBeNull();

    // Under it, it works and is counted.
    await write(a.id, 10);
    await rig.manager.snapshot(a.id);
    expect((await leftovers(a)).files).toEqual(['workspace.tar']);

    // Operator budget (24 MiB): 10 MiB held by a, so 15 MiB for b is refused though under the cap.
    await write(b.id, 15);
    const budgetErr = await rig.manager.snapshot(b.id).catch((e) => e);
    expect(budgetErr).toMatchObject({ code: 'STORAGE_LIMIT' });
    expect(budgetErr.message).toContain('SANDBOX_STORAGE_BUDGET_MB');
    expect(await leftovers(b)).toEqual({ files: [], images: [] });
    // A stop's snapshot is refused the same way; the stopped container keeps everything.
    await rig.manager.stop(b.id);
    expect(rig.manager.get(b.id)).toMatchObject({ state: 'stopped', tier: 'hot', snapshotImageId: null });
    expect(await leftovers(b)).toEqual({ files: [], images: [] });
    await rig.manager.delete(b.id);

    // GC: hot -> warm fits; warm -> cold needs image.tar (every layer, ~the image's size) and is
    // refused: the sandbox stays warm with nothing half-written, and resumes from warm.
    await rig.manager.stop(a.id);
    const t = rig.manager.get(a.id).tierSince!;
    const g1 = await rig.manager.gcTick(t + 100_000);
    expect(g1.acted).toEqual([{ id: a.id, action: 'hot->warm' }]);
    const g2 = await rig.manager.gcTick(t + 400_000);
    expect(g2.acted).toEqual([]);
    expect(g2.errors).toHaveLength(1);
    expect(g2.errors[0]!.error).toContain('SANDBOX_SNAPSHOT_MAX_MB');
    expect(rig.manager.get(a.id).tier).toBe('warm');
    expect((await leftovers(a)).files).toEqual(['workspace.tar']);
    await rig.manager.resume(a.id);
    const out = await sidecarExec(rig.manager.sidecarEndpoint(a.id), 'stat -c %s /home/agent/big');
    expect(out.stdout).toBe(`${10 * MiB}\n`);
    await rig.manager.delete(a.id);
  });
});
