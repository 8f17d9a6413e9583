// Team access never reaches the chain's delete: a member of a sandbox whose delete job (job 1)
// reaches the operator is refused with a readable result and the sandbox stays; its owner's
// delete then removes it. On the shared devnet and the real engine, as handlers/sandbox.test.ts.
import { decodeJobResult, type JobContext } from '@agent-sandbox/sdk';
import pino from 'pino';
import { type Address, encodeAbiParameters, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { blueprintRouter } from '../blueprint-router.ts';
import { BlueprintChain } from '../chain.ts';
import {
  JOB_SANDBOX_CREATE,
  JOB_SANDBOX_DELETE,
  JSON_OUTPUT,
  SANDBOX_CREATE_INPUT,
  SANDBOX_CREATE_OUTPUT,
  SANDBOX_DELETE_INPUT,
} from '../jobs.ts';
import { DevnetJobs } from '../testing/devnet-service.ts';
import { openTestRuntime, type TestRuntime } from '../testing/test-runtime.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `md-${Date.now().toString(36)}`;

describe('SANDBOX_DELETE by a member', () => {
  let jobs: DevnetJobs;
  let op: TestRuntime;
  const chain = new BlueprintChain({ httpRpcUrl: devnet.rpcUrl, blueprint: devnet.contracts.cloud });
  const member = privateKeyToAccount(generatePrivateKey()).address;
  const router = (operator: Address) =>
    blueprintRouter({
      operator,
      mode: 'cloud',
      chain,
      sandboxes: op.manager,
      store: op.store,
      policy: {
        defaultImage: image,
        imageAllowlist: [],
        shapes: {
          presets: { default: { cpuCores: 1, memoryMb: 256, diskGb: 1 } },
          defaultPreset: 'default',
          ceiling: { cpuCores: 2, memoryMb: 2048, diskGb: 10 },
        },
        teeAvailable: false,
      },
      operatorApiUrl: 'http://127.0.0.1:9999',
    }).router;
  const ctx = (
    call: { callId: bigint; blockNumber: bigint; transactionHash: Hex },
    jobIndex: number,
    caller: Address,
  ): JobContext => ({
    serviceId: jobs.serviceId,
    callId: call.callId,
    jobIndex,
    caller,
    blockNumber: call.blockNumber,
    transactionHash: call.transactionHash,
    log: pino({ level: 'silent' }),
    signal: new AbortController().signal,
  });

  beforeAll(async () => {
    jobs = new DevnetJobs(devnet);
    await jobs.newCloudService();
    op = await openTestRuntime({
      operatorId: `${RUN}-op`,
      image,
      secret: 'ce'.repeat(32),
      config: { maxMemoryMb: 2048 },
    });
  }, 120_000);
  afterAll(async () => {
    await op?.close();
  });

  it('is refused (FORBIDDEN, the sandbox kept); the owner deletes it', async () => {
    const input = encodeAbiParameters(
      SANDBOX_CREATE_INPUT,
      SANDBOX_CREATE_INPUT.map(
        (p) =>
          ({
            name: 'team',
            image: '',
            stack: 'default',
            agent_identifier: 'default',
            env_json: '{}',
            metadata_json: '{}',
            ssh_enabled: false,
            ssh_public_key: '',
            web_terminal_enabled: false,
            max_lifetime_seconds: 600n,
            idle_timeout_seconds: 300n,
            cpu_cores: 1n,
            memory_mb: 256n,
            disk_gb: 1n,
            tee_required: false,
            tee_type: 0,
            attestation_nonce: '',
            capabilities_json: '',
          })[p.name as string],
      ) as never,
    );
    const call = await jobs.submit(JOB_SANDBOX_CREATE, input);
    const operator = call.operator!;
    const created = await router(operator).dispatch(
      { jobIndex: JOB_SANDBOX_CREATE, input },
      ctx(call, 0, jobs.caller.address),
    );
    if (created.kind !== 'result') throw new Error(JSON.stringify(created));
    const { sandboxId } = decodeJobResult(SANDBOX_CREATE_OUTPUT, created.output);
    await jobs.submitResult(operator, call.callId, created.output);
    await op.manager.addMember(sandboxId, member);

    const delInput = encodeAbiParameters(SANDBOX_DELETE_INPUT, [sandboxId]);
    const del = await jobs.submit(JOB_SANDBOX_DELETE, delInput);
    const refused = await router(operator).dispatch(
      { jobIndex: JOB_SANDBOX_DELETE, input: delInput },
      ctx(del, 1, member),
    );
    const rj = JSON.parse(decodeJobResult(JSON_OUTPUT, (refused as { output: Hex }).output).json);
    expect(rj).toMatchObject({ code: 'FORBIDDEN', phase: 'validation', sandboxId });
    expect(rj.error).toContain('only the owner');
    expect(op.manager.get(sandboxId).state).toBe('running');

    // A call is answered once: the owner's delete is a job of its own.
    const del2 = await jobs.submit(JOB_SANDBOX_DELETE, delInput);
    const done = await router(operator).dispatch(
      { jobIndex: JOB_SANDBOX_DELETE, input: delInput },
      ctx(del2, 1, jobs.caller.address),
    );
    expect(JSON.parse(decodeJobResult(JSON_OUTPUT, (done as { output: Hex }).output).json)).toMatchObject({
      sandboxId,
      deleted: true,
    });
  }, 120_000);
});
