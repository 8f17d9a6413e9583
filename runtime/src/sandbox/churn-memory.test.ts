// Create/delete churn leaves nothing behind in the manager's memory: a deleted sandbox's record
// leaves the in-memory record book (its tombstone stays in the store, so a second delete and a
// redelivered create of the same call still answer as before). Found by heap snapshots of the
// operator program under churn (issue 24): one record per cycle, held forever.
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { makeRig, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 240_000 });

const image = inject('sandboxImage');
let rig: TestRig;
const base = { owner: '0xAbC0000000000000000000000000000000000001', serviceId: 7 };

beforeAll(async () => {
  rig = await makeRig(image);
});
afterAll(async () => {
  await rig?.cleanup();
});

describe('create/delete churn', () => {
  it('holds no record per deleted sandbox in memory; delete and a redelivered create stay idempotent', async () => {
    const keep = await rig.manager.create({ ...base, callId: 'churn-keep' });
    const held = rig.manager.recordsHeld;
    expect(held).toBe(1);
    const CYCLES = 4;
    const gone: Array<{ id: string; callId: string }> = [];
    for (let i = 0; i < CYCLES; i++) {
      const callId = `churn-${i}`;
      const rec = await rig.manager.create({ ...base, callId });
      expect(rig.manager.recordsHeld).toBe(held + 1);
      await rig.manager.delete(rec.id);
      gone.push({ id: rec.id, callId });
    }
    // Before the fix: held + CYCLES (every tombstone kept in memory for the life of the process).
    expect(rig.manager.recordsHeld).toBe(held);
    for (const g of gone) {
      // Idempotent as before: the second delete answers with the tombstone, not NOT_FOUND.
      expect((await rig.manager.delete(g.id)).state).toBe('deleted');
      // A redelivered create of a deleted sandbox's call answers with that (deleted) sandbox.
      const again = await rig.manager.create({ ...base, callId: g.callId });
      expect(again).toMatchObject({ id: g.id, state: 'deleted' });
      expect(() => rig.manager.get(g.id)).toThrow(/does not exist/);
    }
    expect(rig.manager.recordsHeld).toBe(held);
    expect(rig.manager.list().map((r) => r.id)).toEqual([keep.id]);
    // A restart loads no tombstones into memory either.
    const reopened = await rig.reopen();
    expect(reopened.recordsHeld).toBe(held);
    expect((await reopened.delete(gone[0]!.id)).state).toBe('deleted');
  });
});
