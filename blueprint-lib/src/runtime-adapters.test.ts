// GET /api/provisions/{callId} is public: one lookup must cost one store read, not a decrypting
// scan of every provision the operator ever recorded. Real EncryptedStore and SandboxManager; the
// store is wrapped only to count the calls made on the provisions collection. And where a
// workflow runs: its sandbox (cloud) or the instance sandbox, resolved when it runs.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EncryptedStore, SandboxManager } from '@agent-sandbox/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HandledCalls } from './handled-calls.ts';
import { apiSandboxes, workflowSandbox } from './runtime-adapters.ts';

describe('apiSandboxes.getProvision', () => {
  let dir: string;
  let store: EncryptedStore;
  const calls: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'api-prov-'));
    store = await EncryptedStore.open({ dir, secret: randomBytes(32).toString('hex') });
    const provisions = store.collection('provisions');
    for (let i = 0; i < 300; i++) {
      await provisions.put(`7:${i}`, {
        callId: String(i),
        sandboxId: `sb-${i}`,
        serviceId: '7',
        phase: 'ready',
        phases: [{ phase: 'queued', at: 1 }],
        failedPhase: null,
        error: null,
        startedAt: 1,
        updatedAt: 1,
      });
    }
  });
  afterAll(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('reads one record by key, whatever the number stored', async () => {
    const counting = new Proxy(store, {
      get(target, prop) {
        if (prop === 'collection') {
          return (name: string, schema?: unknown) => {
            const coll = (target.collection as (n: string, s?: unknown) => object)(name, schema);
            if (name !== 'provisions') return coll;
            return new Proxy(coll, {
              get(c, p) {
                const v = Reflect.get(c, p);
                if (typeof v !== 'function') return v;
                return (...a: unknown[]) => {
                  calls.push(String(p));
                  return v.apply(c, a);
                };
              },
            });
          };
        }
        const v = Reflect.get(target, prop);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const manager = await SandboxManager.open({
      config: { operatorId: 'prov-test', image: 'unused:latest', snapshotDir: join(dir, 'snap') },
      store: counting,
    });
    const api = apiSandboxes(manager, new HandledCalls(store), 7n);
    const p = (await api.getProvision('123')) as { sandboxId: string } | undefined;
    expect(p?.sandboxId).toBe('sb-123');
    expect(calls).toEqual(['get']);
  });
});

describe('workflowSandbox', () => {
  it('a sandbox workflow runs in its sandbox; an instance workflow in the instance sandbox of the moment', () => {
    let instance: string | undefined;
    const where = workflowSandbox(() => instance);
    expect(where({ targetKind: 0, targetSandboxId: 'sbx-a' })).toBe('sbx-a');
    expect(where({ targetKind: 0, targetSandboxId: '' })).toBeUndefined();
    expect(where({ targetKind: 1, targetSandboxId: '' })).toBeUndefined();
    instance = 'sbx-inst';
    expect(where({ targetKind: 1, targetSandboxId: '' })).toBe('sbx-inst');
  });
});
