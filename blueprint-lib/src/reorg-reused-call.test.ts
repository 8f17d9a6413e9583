// Issue 29, a reorg under a served create, as the operator's handlers and the real runtime meet it
// (real Docker, the devnet's chain for the call): the create was served on a fork that is gone, so
// the runner reports its call vanished — the sandbox built for it is deleted, no container left —
// and the new fork's create that reuses the call id (same id, another block hash) gets a sandbox of
// its own, running, never the vanished one's id. (The chain's side of the reorg — fork found,
// rescan, nonce, re-sent results — is sdk/src/reorg.test.ts on anvil snapshots.)

import { mkdtempSync, rmSync } from 'node:fs';
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
const RUN = `blrr-${Date.now().toString(36)}`;
const log = pino({ level: 'silent' });
let dir: string;
let jobs: DevnetJobs;
let store: EncryptedStore;
let manager: SandboxManager;
let app: ReturnType<typeof blueprintRouter>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), `${RUN}-`));
  jobs = new DevnetJobs(devnet);
  await jobs.newCloudService();
  store = await EncryptedStore.open({ dir: join(dir, 'store'), secret: '4f'.repeat(32) });
  manager = await SandboxManager.open({
    store,
    config: { operatorId: RUN, image, snapshotDir: join(dir, 'snapshots'), extraLabels: TEST_LABELS },
  });
});

afterAll(async () => {
  for (const r of manager?.list() ?? []) await manager.delete(r.id).catch(() => {});
  await manager?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const containersOf = async (sandboxId: string) =>
  (await new Docker().listContainers({ all: true, filters: { label: [`agent-sandbox.id=${sandboxId}`] } }))
    .length;

describe('a reorg under a served create, and the call id reused on the new fork', () => {
  it('deletes the vanished create’s sandbox and serves the reused id with a sandbox of its own', async () => {
    const call = await jobs.submit(JOB_SANDBOX_CREATE, testCreateInput({ name: 'reorged' }));
    app = blueprintRouter({
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
    const dispatch = async (blockHash: Hex) => {
      const ctx: JobContext = {
        serviceId: jobs.serviceId,
        callId: call.callId,
        jobIndex: JOB_SANDBOX_CREATE,
        caller: jobs.caller.address,
        blockNumber: call.blockNumber,
        blockHash,
        transactionHash: call.transactionHash,
        log,
        signal: new AbortController().signal,
      };
      const out = await app.router.dispatch(
        { jobIndex: JOB_SANDBOX_CREATE, input: testCreateInput({ name: 'reorged' }) },
        ctx,
      );
      if (out.kind !== 'result') throw new Error(`the create did not answer (${out.kind})`);
      return decodeJobResult(SANDBOX_CREATE_OUTPUT, out.output as Hex).sandboxId;
    };
    const oldFork = `0x${'a1'.repeat(32)}` as Hex;
    const newFork = `0x${'b2'.repeat(32)}` as Hex;
    const first = await dispatch(oldFork);
    expect(manager.get(first).state).toBe('running');

    // The runner found the fork: this call (id, old block hash) is gone from the chain.
    await app.sandbox.vanished({ serviceId: jobs.serviceId, callId: call.callId, blockHash: oldFork });
    expect(() => manager.get(first)).toThrow(/does not exist/);
    expect(await containersOf(first)).toBe(0);

    // The new fork's create reuses the id: a sandbox of its own, running.
    const second = await dispatch(newFork);
    expect(second).toMatch(/^sbx-/);
    expect(second).not.toBe(first);
    expect(manager.get(second).state).toBe('running');
    expect(await containersOf(second)).toBe(1);
    // Answered again on the same fork: the same sandbox (one result per call).
    expect(await dispatch(newFork)).toBe(second);
  }, 240_000); // three real container creates and a delete on a busy machine
});
