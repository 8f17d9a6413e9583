// Jobs 3/4 of an instance-mode workflow that an operator does not hold, on the devnet's instance
// contract (where any operator's result counts, the first one): the operator that refused the
// create answers a failure saying so (never "triggered"/"canceled"); one that never saw the create
// stays silent, so it cannot race a holder with a failure.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createApiSidecars,
  EncryptedStore,
  RunLog,
  RunService,
  SandboxManager,
  WorkflowService,
} from '@agent-sandbox/runtime';
import { decodeJobResult, type JobContext } from '@agent-sandbox/sdk';
import pino from 'pino';
import { encodeAbiParameters, type Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { blueprintRouter } from '../blueprint-router.ts';
import { BlueprintChain } from '../chain.ts';
import type { BlueprintDeps } from '../deps.ts';
import {
  JOB_WORKFLOW_CANCEL,
  JOB_WORKFLOW_CREATE,
  JOB_WORKFLOW_TRIGGER,
  JSON_OUTPUT,
  SANDBOX_CREATE_INPUT,
  WORKFLOW_CREATE_INPUT,
  WORKFLOW_ID_INPUT,
} from '../jobs.ts';
import { DevnetJobs } from '../testing/devnet-service.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `blwfi-${Date.now().toString(36)}`;
const silent = pino({ level: 'silent' });

let dir = '';
const opened: Array<{ store: EncryptedStore; manager: SandboxManager }> = [];

/** One instance-mode operator's job router, with its own store and runtime (nothing provisioned). */
async function operator(name: string) {
  const store = await EncryptedStore.open({ dir: join(dir, name), secret: 'ab'.repeat(32) });
  const manager = await SandboxManager.open({
    store,
    config: {
      operatorId: `${RUN}-${name}`,
      image,
      snapshotDir: join(dir, `${name}-snap`),
      extraLabels: { 'agent-sandbox.test': '1' },
    },
  });
  opened.push({ store, manager });
  const sidecars = createApiSidecars({ sidecarEndpoint: (id: string) => manager.sidecarEndpoint(id) });
  const runLog = new RunLog(store);
  const deps: BlueprintDeps = {
    operator: devnet.accounts.operator1.address,
    mode: 'instance',
    chain: new BlueprintChain({ httpRpcUrl: devnet.rpcUrl, blueprint: devnet.contracts.instance }),
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
    workflows: new WorkflowService({
      store,
      sidecars,
      runs: new RunService(runLog, sidecars, silent),
      runLog,
      logger: silent,
    }),
  };
  return blueprintRouter(deps).router;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), `${RUN}-`));
});

afterAll(async () => {
  for (const o of opened) {
    await o.manager.close();
    await o.store.close();
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('instance workflow jobs on an operator that does not hold the workflow', () => {
  it('the operator that refused the create answers trigger/cancel with NOT_FOUND; one that never saw it skips', async () => {
    const jobs = new DevnetJobs(devnet);
    const owner = jobs.account('serviceOwner');
    const config = encodeAbiParameters(
      [{ type: 'tuple', components: SANDBOX_CREATE_INPUT }],
      [
        {
          name: 'wf-instance',
          image: '',
          stack: '',
          agent_identifier: '',
          env_json: '{}',
          metadata_json: '{}',
          ssh_enabled: false,
          ssh_public_key: '',
          web_terminal_enabled: false,
          max_lifetime_seconds: 0n,
          idle_timeout_seconds: 0n,
          cpu_cores: 1n,
          memory_mb: 256n,
          disk_gb: 1n,
          tee_required: false,
          tee_type: 0,
          attestation_nonce: '',
          capabilities_json: '',
        },
      ],
    );
    const serviceId = await jobs.newService('instance', config, { permitted: [owner.address] });
    const refused = await operator('refused');
    const late = await operator('late');
    const ctx = (call: { callId: bigint; blockNumber: bigint; transactionHash: Hex }, jobIndex: number) =>
      ({
        serviceId,
        callId: call.callId,
        jobIndex,
        caller: owner.address,
        blockNumber: call.blockNumber,
        transactionHash: call.transactionHash,
        log: silent,
        signal: new AbortController().signal,
      }) satisfies JobContext;
    const json = (out: Awaited<ReturnType<typeof refused.dispatch>>) => {
      if (out.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(out)}`);
      return JSON.parse(decodeJobResult(JSON_OUTPUT, out.output).json) as Record<string, unknown>;
    };

    // A create with an action no operator runs: refused, but the contract records it on any result.
    const createIn = encodeAbiParameters(WORKFLOW_CREATE_INPUT, [
      'bogus',
      '{"bogus":1}',
      'manual',
      '',
      '',
      1,
      '',
      0n,
    ]);
    const call = await jobs.submit(JOB_WORKFLOW_CREATE, createIn, owner);
    const created = await refused.dispatch({ jobIndex: JOB_WORKFLOW_CREATE, input: createIn }, ctx(call, 2));
    expect(json(created)).toMatchObject({ code: 'INVALID_REQUEST' });
    if (created.kind !== 'result') throw new Error('unreachable');
    await jobs.submitResult(devnet.accounts.operator1.address, call.callId, created.output);

    const idIn = encodeAbiParameters(WORKFLOW_ID_INPUT, [call.callId]);
    for (const job of [JOB_WORKFLOW_TRIGGER, JOB_WORKFLOW_CANCEL]) {
      const c = await jobs.submit(job, idIn, owner);
      expect(json(await refused.dispatch({ jobIndex: job, input: idIn }, ctx(c, job)))).toMatchObject({
        code: 'NOT_FOUND',
        error: expect.stringMatching(/not stored on this operator.*create it again/),
      });
      expect(await late.dispatch({ jobIndex: job, input: idIn }, ctx(c, job))).toEqual({
        kind: 'skip',
        reason: 'handler-skipped',
      });
    }
  });
});
