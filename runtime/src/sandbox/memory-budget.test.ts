// The host memory budget on the real engine: a create whose memory limit would pass it is refused
// with MEMORY_BUDGET_EXCEEDED (naming the variable) before anything exists in Docker, and admitted
// again once a sandbox is deleted; the default comes from the host's memory; the warm pool keeps
// only what the budget leaves.
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { LABEL_OPERATOR } from '../docker/labels.ts';
import { isRuntimeError } from '../errors.ts';
import { committedMemoryMb, defaultMemoryBudgetMb, poolRoomInMemoryBudget } from './memory-budget.ts';
import type { SandboxRecord } from './record.ts';
import { makeRig, type TestRig } from './testing/rig.ts';

// Real containers on a shared 2-core machine: allow for a slow engine.
vi.setConfig({ testTimeout: 180_000 });

const image = inject('sandboxImage');
const owner = '0x00000000000000000000000000000000000000ab';
let rig: TestRig;
let n = 0;
const create = (memoryMb: number) =>
  rig.manager.create({ owner, serviceId: 6, callId: `mb-${++n}`, memoryMb });

async function containerCount(): Promise<number> {
  const list = await rig.manager.driver.docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_OPERATOR}=${rig.operatorId}`] },
  });
  return list.length;
}

beforeAll(async () => {
  rig = await makeRig(image, { memoryBudgetMb: 400 });
});
afterAll(async () => {
  await rig?.cleanup();
});

describe('host memory budget', () => {
  it('refuses a create past the budget with a named error, leaving nothing, and admits it after a delete', async () => {
    const a = await create(256);
    expect(a.state).toBe('running');
    const err = await create(256).catch((e: unknown) => e);
    expect(isRuntimeError(err, 'MEMORY_BUDGET_EXCEEDED')).toBe(true);
    expect((err as Error).message).toMatch(
      /needs 256 MB .* already hold 256 MB of its 400 MB host memory budget \(SANDBOX_MEMORY_BUDGET_MB\)/,
    );
    // Nothing of the refused create: no record, no progress, no container.
    expect(rig.manager.list().map((r) => r.id)).toEqual([a.id]);
    expect(await containerCount()).toBe(1);
    // What fits still fits.
    const small = await create(128);
    expect(small.state).toBe('running');
    await rig.manager.delete(a.id);
    const b = await create(256);
    expect(b.state).toBe('running');
    await rig.manager.delete(small.id);
    await rig.manager.delete(b.id);
  });

  it('defaults to the host memory less max(1 GiB, 10 %)', () => {
    expect(defaultMemoryBudgetMb(24 * 1024 ** 3)).toBe(24576 - 2458);
    expect(defaultMemoryBudgetMb(4 * 1024 ** 3)).toBe(4096 - 1024);
    expect(defaultMemoryBudgetMb(512 * 1024 ** 2)).toBe(0);
  });

  it('leaves the warm pool only what the live sandboxes do not hold', () => {
    const rec = (state: string, memoryMb: number) => ({ state, resources: { memoryMb } }) as SandboxRecord;
    const records = [
      rec('running', 512),
      rec('provisioning', 256),
      rec('stopped', 4096),
      rec('deleted', 999),
    ];
    expect(committedMemoryMb(records)).toBe(768);
    const ctx = (budget: number) => ({
      cfg: { memoryBudgetMb: budget, defaultMemoryMb: 256 } as TestRig['manager']['config'],
      records: { all: () => records } as never,
    });
    expect(poolRoomInMemoryBudget(ctx(1800))).toBe(4);
    expect(poolRoomInMemoryBudget(ctx(800))).toBe(0);
  });
});
