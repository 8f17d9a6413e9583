// Issue 29, disk full, as a create meets it: the operator's store and snapshots on a small tmpfs the
// test mounts and fills (real LevelDB, real Docker, the devnet's chain). A create during it ends
// with one clear failed result (STORE_FULL; no container, no record left), not a hang or a throw;
// once space returns the next create is served, with no restart.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EncryptedStore, SandboxManager } from '@agent-sandbox/runtime';
import { decodeJobResult, type JobContext } from '@agent-sandbox/sdk';
import Docker from 'dockerode';
import pino from 'pino';
import type { Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { blueprintRouter } from './blueprint-router.ts';
import { BlueprintChain } from './chain.ts';
import { JOB_SANDBOX_CREATE, SANDBOX_CREATE_OUTPUT } from './jobs.ts';
import { testCreateInput } from './testing/create-input.ts';
import { DevnetJobs } from './testing/devnet-service.ts';
import { TEST_LABELS } from './testing/test-runtime.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `bldf-${Date.now().toString(36)}`;
const root = process.getuid?.() === 0;
const SECRET = '6b'.repeat(32);
const log = pino({ level: 'silent' });

let mnt: string;
let jobs: DevnetJobs;
let store: EncryptedStore;
let manager: SandboxManager;

beforeAll(async () => {
  if (!root) return;
  mnt = mkdtempSync(join(tmpdir(), `${RUN}-`));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', mnt]);
  jobs = new DevnetJobs(devnet);
  await jobs.newCloudService();
  store = await EncryptedStore.open({ dir: join(mnt, 'store'), secret: SECRET });
  manager = await SandboxManager.open({
    store,
    config: { operatorId: RUN, image, snapshotDir: join(mnt, 'snapshots'), extraLabels: TEST_LABELS },
  });
});

afterAll(async () => {
  if (!root || !mnt) return;
  for (const r of manager?.list() ?? []) await manager.delete(r.id).catch(() => {});
  await manager?.close();
  await store?.close();
  execFileSync('umount', [mnt]);
  rmSync(mnt, { recursive: true, force: true });
});

function create(name: string) {
  return async () => {
    const call = await jobs.submit(JOB_SANDBOX_CREATE, testCreateInput({ name }));
    const { router } = blueprintRouter({
      operator: call.operator!,
      mode: 'cloud',
      chain: new BlueprintChain({ httpRpcUrl: devnet.rpcUrl, blueprint: devnet.contracts.cloud }),
      sandboxes: manager,
      store,
      policy: {
        defaultImage: image,
        imageAllowlist: [],
        shapes: {
          presets: { default: { cpuCores: 1, memoryMb: 1024, diskGb: 5 } },
          defaultPreset: 'default',
          ceiling: { cpuCores: 2, memoryMb: 2048, diskGb: 10 },
        },
        teeAvailable: false,
      },
      operatorApiUrl: 'http://127.0.0.1:9999',
    });
    const ctx: JobContext = {
      serviceId: jobs.serviceId,
      callId: call.callId,
      jobIndex: JOB_SANDBOX_CREATE,
      caller: jobs.caller.address,
      blockNumber: call.blockNumber,
      transactionHash: call.transactionHash,
      log,
      signal: new AbortController().signal,
    };
    const out = await router.dispatch(
      { jobIndex: JOB_SANDBOX_CREATE, input: testCreateInput({ name }) },
      ctx,
    );
    return { call, out };
  };
}

/** This run's sandbox containers (a refused create may leave none). */
async function containers(): Promise<number> {
  const all = await new Docker().listContainers({
    all: true,
    filters: { label: [`agent-sandbox.operator=${RUN}`, 'agent-sandbox.kind=sandbox'] },
  });
  return all.length;
}

describe.skipIf(!root)('a create while the data dir is full', () => {
  it('ends with one clear failed result and leaves nothing; the next create after space returns is served', async () => {
    const before = manager.list().length;
    const running = await containers();
    // Something else fills the filesystem, and the store has met it (a write was refused).
    const filler = join(mnt, 'filler');
    try {
      writeFileSync(filler, Buffer.alloc(8_000_000));
    } catch {
      // ENOSPC: the filler took what there was.
    }
    const junk = store.collection<string>('junk');
    let refused: unknown;
    for (let i = 0; i < 100 && !refused; i++)
      await junk.put(`j${i}`, 'x'.repeat(4000)).catch((e) => (refused = e));
    expect(refused).toMatchObject({ code: 'STORE_FULL' });

    const { call, out } = await create('while-full')();
    if (out.kind !== 'result') throw new Error(`the create did not answer (${out.kind})`);
    const v = decodeJobResult(SANDBOX_CREATE_OUTPUT, out.output as Hex);
    expect(v.sandboxId).toBe('');
    expect(JSON.parse(v.json)).toMatchObject({
      code: 'STORE_FULL',
      error: expect.stringMatching(/disk is full: nothing of the sandbox was kept/),
    });
    expect(manager.list()).toHaveLength(before);
    expect(await containers()).toBe(running);
    expect(await manager.getProvision(`${call.callId}`, `${jobs.serviceId}`).catch((e) => e.code)).toBe(
      'NOT_FOUND',
    );

    // Space returns: served at once, no restart.
    rmSync(filler);
    const next = await create('after-space')();
    if (next.out.kind !== 'result') throw new Error('the create after space returned did not answer');
    const id = decodeJobResult(SANDBOX_CREATE_OUTPUT, next.out.output as Hex).sandboxId;
    expect(id).toMatch(/^sbx-/);
    expect(manager.get(id).state).toBe('running');
    expect(await containers()).toBe(running + 1);
  });
});
