// GET /api/provisions/{callId} is public: one lookup must cost one store read, not a decrypting
// scan of every provision the operator ever recorded. Real EncryptedStore and SandboxManager; the
// store is wrapped only to count the calls made on the provisions collection. And where a
// workflow runs: its sandbox (cloud) or the instance sandbox, resolved when it runs.
import type { EncryptedStore } from '@agent-sandbox/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HandledCalls } from './handled-calls.ts';
import { apiSandboxes, workflowSandbox } from './runtime-adapters.ts';
import { openTestRuntime, type TestRuntime } from './testing/test-runtime.ts';

describe('apiSandboxes.getProvision', () => {
  let rt: TestRuntime;
  const calls: string[] = [];
  // Counts the calls on the provisions collection the manager makes (the store is otherwise itself).
  const counting = (store: EncryptedStore): EncryptedStore =>
    new Proxy(store, {
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

  beforeAll(async () => {
    rt = await openTestRuntime({ operatorId: 'api-prov', image: 'unused:latest', wrapStore: counting });
    const provisions = rt.store.collection('provisions');
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
  afterAll(() => rt?.close());

  it('reads one record by key, whatever the number stored', async () => {
    calls.length = 0;
    const api = apiSandboxes(rt.manager, new HandledCalls(rt.store), 7n);
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
