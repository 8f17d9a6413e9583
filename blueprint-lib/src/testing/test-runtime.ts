// Test helper: one real runtime for blueprint-lib's tests — an EncryptedStore on disk and a
// SandboxManager on the real Docker engine, in a fresh temp dir, its containers labelled as test
// containers; close() deletes its sandboxes, closes both and removes the dir.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EncryptedStore, SandboxManager, type SandboxRuntimeConfigInput } from '@agent-sandbox/runtime';

export const TEST_LABELS = { 'agent-sandbox.test': '1', 'agent-sandbox.test.suite': 'blueprint-lib' };

export interface TestRuntime {
  dir: string;
  store: EncryptedStore;
  manager: SandboxManager;
  close(): Promise<void>;
}

export interface TestRuntimeOptions {
  /** Operator id (also the temp dir's prefix): unique per test file and run. */
  operatorId: string;
  image: string;
  /** Store secret (32 bytes hex); a fixed test value by default. */
  secret?: string;
  /** Further runtime settings (GC retentions, memory caps, ...). */
  config?: Partial<SandboxRuntimeConfigInput>;
  /** Wraps the store the manager gets (a test that counts store calls). */
  wrapStore?: (store: EncryptedStore) => EncryptedStore;
}

export async function openTestRuntime(o: TestRuntimeOptions): Promise<TestRuntime> {
  const dir = await mkdtemp(join(tmpdir(), `${o.operatorId}-`));
  const store = await EncryptedStore.open({ dir: join(dir, 'store'), secret: o.secret ?? 'ef'.repeat(32) });
  let manager: SandboxManager;
  try {
    manager = await SandboxManager.open({
      store: o.wrapStore ? o.wrapStore(store) : store,
      config: {
        operatorId: o.operatorId,
        image: o.image,
        snapshotDir: join(dir, 'snapshots'),
        extraLabels: TEST_LABELS,
        ...o.config,
      },
    });
  } catch (e) {
    await store.close();
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    dir,
    store,
    manager,
    async close() {
      for (const r of manager.list()) await manager.delete(r.id).catch(() => {});
      await manager.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
