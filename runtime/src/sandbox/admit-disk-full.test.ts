// Issue 29, disk full during admission: a create writes its sandbox record and its provision
// progress; the disk fills (and the store meets it) at the moment the progress is written. The two
// go to LevelDB in one batch, so the create is refused STORE_FULL with nothing of it kept — no
// `pending` record without a provision (which the old two writes left: listed, counted against
// capacity, never resumed, and a repeat of the call admitted a second sandbox beside it). Once space
// returns the same call is served with no restart, and the store holds exactly its one record.
// Real LevelDB on a real small ext4 filesystem (loop device), real Docker.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isRuntimeError } from '../errors.ts';
import type { StoreCollection } from '../store/store.ts';
import { EncryptedStore } from '../store/store.ts';
import { mountSmallFs, type SmallFs } from '../store/testing/small-fs.ts';
import { SandboxManager } from './manager.ts';

const image = inject('sandboxImage');
const RUN = `rtadf-${Date.now().toString(36)}`;
const root = process.getuid?.() === 0;
const OWNER = '0x000000000000000000000000000000000000dEaD';
let fs: SmallFs;
let store: EncryptedStore;
let manager: SandboxManager;
/** Set by a test: runs once, the moment the write it names is about to reach the store. */
let hook: { collection: string; method: 'put' | 'update'; run: () => Promise<void> } | undefined;

/**
 * The store as the manager sees it: before the write the hook names — by that method, or by the
 * `commit` of a batch holding a `putOp` of that collection (for a `put` hook) — the hook runs.
 */
function watched(s: EncryptedStore): EncryptedStore {
  let armed: (() => Promise<void>) | undefined;
  const take = (name: string, method: string) => {
    if (!hook || hook.collection !== name || hook.method !== method) return undefined;
    const run = hook.run;
    hook = undefined;
    return run;
  };
  const collection = <T>(name: string, schema?: never): StoreCollection<T> => {
    const c = s.collection<T>(name, schema);
    return new Proxy(c, {
      get(target, p) {
        const v = Reflect.get(target, p, target) as unknown;
        if (typeof v !== 'function') return v;
        const fn = v.bind(target) as (...a: unknown[]) => unknown;
        if (p === 'putOp')
          return (...a: unknown[]) => {
            armed ??= take(name, 'put');
            return fn(...a);
          };
        if (p === 'put' || p === 'update' || p === 'commit')
          return async (...a: unknown[]) => {
            const run = p === 'commit' ? armed : take(name, p);
            if (p === 'commit') armed = undefined;
            await run?.();
            return fn(...a);
          };
        return fn;
      },
    });
  };
  return new Proxy(s, {
    get(target, p) {
      if (p === 'collection') return collection;
      const v = Reflect.get(target, p, target) as unknown;
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

beforeAll(async () => {
  if (!root) return;
  fs = mountSmallFs(RUN, 16);
  store = await EncryptedStore.open({ dir: `${fs.dir}/store`, secret: '8d'.repeat(32) });
  manager = await SandboxManager.open({
    store: watched(store),
    config: {
      operatorId: RUN,
      image,
      snapshotDir: `${fs.dir}/snapshots`,
      extraLabels: { 'agent-sandbox.test': '1', 'agent-sandbox.test.suite': 'admit-disk-full' },
    },
  });
});

afterAll(async () => {
  if (!root) return;
  for (const r of manager?.list() ?? []) await manager.delete(r.id).catch(() => {});
  await manager?.close().catch(() => {});
  await store?.close();
  fs?.destroy();
});

/** The disk fills, and the store meets it (another write is refused), so every write is refused. */
async function diskFills(): Promise<void> {
  fs.fill();
  const junk = store.collection<string>('junk');
  const refused = await junk.put('j', 'x'.repeat(200_000)).catch((e: unknown) => e);
  expect(isRuntimeError(refused, 'STORE_FULL')).toBe(true);
}

describe.skipIf(!root)('a disk that fills while a create is admitted', () => {
  it('keeps nothing of the create (record and provision together or neither); the call is served once space returns', async () => {
    hook = { collection: 'provisions', method: 'put', run: diskFills };
    const err = await manager.create({ owner: OWNER, serviceId: '1', callId: '1' }).catch((e: unknown) => e);
    expect(isRuntimeError(err, 'STORE_FULL')).toBe(true);
    expect((err as Error).message).toMatch(/no space left on device.*free space on that filesystem/);
    // Nothing half there: no record in the list or on disk, no provision.
    expect(manager.list()).toEqual([]);
    expect(await store.collection('sandboxes').count()).toBe(0);
    expect(await store.collection('provisions').count()).toBe(0);

    // Space returns: the same call is served, with no restart, and it is the only sandbox.
    fs.unfill();
    const rec = await manager.create({ owner: OWNER, serviceId: '1', callId: '1' });
    expect(rec.state).toBe('running');
    expect(manager.list().map((r) => r.id)).toEqual([rec.id]);
    expect(await store.collection('sandboxes').count()).toBe(1);
    expect(await manager.getProvision('1', '1')).toMatchObject({ phase: 'ready', sandboxId: rec.id });
  });
  it('a disk that fills once the create is admitted: one STORE_FULL failure, recorded as such once space returns', async () => {
    // The first write after admission (the record moving to provisioning) meets the full disk.
    hook = { collection: 'sandboxes', method: 'update', run: diskFills };
    const err = await manager.create({ owner: OWNER, serviceId: '1', callId: '2' }).catch((e: unknown) => e);
    expect(isRuntimeError(err, 'STORE_FULL')).toBe(true);
    const admitted = manager.list().find((r) => r.callId === '2');
    expect(admitted?.state).toBe('pending'); // all the store holds of it while the disk is full
    // Space returns: the failure is recorded by itself (no restart, no later write needed), so no
    // `pending` record is left behind a create whose failure was answered.
    fs.unfill();
    const deadline = Date.now() + 45_000;
    const recorded = async () =>
      manager.list().find((r) => r.callId === '2')?.state === 'failed' &&
      (await manager.getProvision('2', '1')).phase === 'failed';
    while (!(await recorded())) {
      if (Date.now() > deadline) throw new Error('the failed provision was never recorded');
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await manager.getProvision('2', '1')).toMatchObject({
      phase: 'failed',
      error: expect.stringMatching(/no space left on device/),
    });
    expect(manager.list().filter((r) => r.state === 'running')).toHaveLength(1);
  });
});
