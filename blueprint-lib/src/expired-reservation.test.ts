// Issue 29, the expired reservation race, on the devnet (real anvil, our contracts, the real
// runtime on Docker): a slow but legitimate create outlives its reservation (anvil's clock is moved
// past reservationTimeout) and a stranger releases it. The blueprint then ignores the assigned
// operator's result, so nothing on chain knows the sandbox: the operator must delete it and say
// why — in its result when the release came first, after the result when it came in between.
import { agentSandboxBlueprintAbi, describeRevert, localTangleAbi } from '@agent-sandbox/contracts';
import type { EncryptedStore, SandboxManager } from '@agent-sandbox/runtime';
import { decodeJobResult, type JobContext } from '@agent-sandbox/sdk';
import pino from 'pino';
import {
  type Address,
  createWalletClient,
  encodeAbiParameters,
  type Hex,
  http,
  type LocalAccount,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { blueprintRouter } from './blueprint-router.ts';
import { BlueprintChain } from './chain.ts';
import { BlueprintWriter } from './chain-writes.ts';
import type { SandboxRuntime } from './deps.ts';
import { afterJob } from './follow-ups.ts';
import { HandledCalls } from './handled-calls.ts';
import { JOB_SANDBOX_CREATE, JOB_SANDBOX_DELETE, SANDBOX_CREATE_OUTPUT } from './jobs.ts';
import { apiSandboxes } from './runtime-adapters.ts';
import { testCreateInput } from './testing/create-input.ts';
import { DevnetJobs } from './testing/devnet-service.ts';
import { openTestRuntime, type TestRuntime } from './testing/test-runtime.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `blexp-${Date.now().toString(36)}`;
const log = pino({ level: 'silent' });

let jobs: DevnetJobs;
let rt: TestRuntime;
let store: EncryptedStore;
let manager: SandboxManager;
let stranger: LocalAccount;

const chain = () => new BlueprintChain({ httpRpcUrl: devnet.rpcUrl, blueprint: devnet.contracts.cloud });

function operatorAccount(op: Address): LocalAccount {
  const role = [devnet.accounts.operator1, devnet.accounts.operator2].find(
    (a) => a.address.toLowerCase() === op.toLowerCase(),
  )!;
  return privateKeyToAccount(role.privateKey);
}

/** The timeout passes on anvil's clock, then someone who is not the operator releases the slot. */
async function expireAndRelease(callId: bigint): Promise<void> {
  const timeout = (await jobs.pub.readContract({
    address: devnet.contracts.cloud,
    abi: agentSandboxBlueprintAbi,
    functionName: 'reservationTimeout',
  })) as bigint;
  await jobs.pub.request({ method: 'evm_increaseTime' as never, params: [Number(timeout) + 1] as never });
  await jobs.pub.request({ method: 'evm_mine' as never, params: [] as never });
  const wallet = createWalletClient({ account: stranger, transport: http(devnet.rpcUrl) });
  const hash = await wallet.writeContract({
    address: devnet.contracts.cloud,
    abi: agentSandboxBlueprintAbi,
    functionName: 'releaseReservation',
    args: [jobs.serviceId, callId],
    chain: null,
  });
  const r = await jobs.pub.waitForTransactionReceipt({ hash, pollingInterval: 100 });
  expect(r.status).toBe('success');
}

function routerFor(operator: Address, sandboxes: SandboxRuntime) {
  return blueprintRouter({
    operator,
    mode: 'cloud',
    chain: chain(),
    sandboxes,
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
    logger: log,
  });
}

const ctxOf = (call: { callId: bigint; blockNumber: bigint; transactionHash: Hex }): JobContext => ({
  serviceId: jobs.serviceId,
  callId: call.callId,
  jobIndex: JOB_SANDBOX_CREATE,
  caller: jobs.caller.address,
  blockNumber: call.blockNumber,
  transactionHash: call.transactionHash,
  log,
  signal: new AbortController().signal,
});

/** What the owner sees: the API's provision status, the container, and the chain's answer to a delete. */
async function ownerView(callId: bigint, sandboxId: string) {
  const provision = await apiSandboxes(manager, new HandledCalls(store), jobs.serviceId).getProvision(
    `${callId}`,
  );
  const containers = await manager.driver.docker.listContainers({
    all: true,
    filters: { label: [`agent-sandbox.id=${sandboxId}`] },
  });
  return { provision, containers: containers.length, listed: manager.list().some((r) => r.id === sandboxId) };
}

/** The owner's delete of a sandbox the chain never recorded reverts UnknownSandbox. */
async function ownersDeleteReverts(sandboxId: string): Promise<string> {
  try {
    await jobs.pub.simulateContract({
      account: jobs.caller,
      address: devnet.contracts.tangle,
      abi: localTangleAbi,
      functionName: 'submitJob',
      args: [jobs.serviceId, JOB_SANDBOX_DELETE, encodeAbiParameters([{ type: 'string' }], [sandboxId])],
    });
    return 'accepted';
  } catch (e) {
    const d = describeRevert(e);
    return typeof d === 'object' ? d.errorName : String(e);
  }
}

beforeAll(async () => {
  jobs = new DevnetJobs(devnet);
  await jobs.newCloudService();
  stranger = privateKeyToAccount(generatePrivateKey());
  await jobs.pub.request({
    method: 'anvil_setBalance' as never,
    params: [stranger.address, '0x56bc75e2d63100000'] as never,
  });
  rt = await openTestRuntime({ operatorId: RUN, image, secret: 'cd'.repeat(32) });
  ({ store, manager } = rt);
});

afterAll(() => rt?.close());

describe('a slow create whose reservation a stranger released after the timeout', () => {
  it('released while the sandbox was being built: the operator deletes it and its result says why', async () => {
    const call = await jobs.submit(JOB_SANDBOX_CREATE, testCreateInput({ name: 'slow' }));
    const me = call.operator!;
    let builtId = '';
    // The real runtime builds the sandbox; the stranger's release lands before the create returns
    // (the test's hand on the timing, nothing stood in for).
    const slow: SandboxRuntime = {
      create: async (p, hooks) => {
        const rec = await manager.create(p, hooks);
        builtId = rec.id;
        await expireAndRelease(call.callId);
        return rec;
      },
      get: (id) => manager.get(id),
      getProvision: (c, s) => manager.getProvision(c, s),
      sidecarEndpoint: (id) => manager.sidecarEndpoint(id),
      delete: (id) => manager.delete(id),
      withdrawProvision: (s, c, r) => manager.withdrawProvision(s, c, r),
      forgetProvision: (s, c) => manager.forgetProvision(s, c),
    };
    const out = await routerFor(me, slow).router.dispatch(
      { jobIndex: JOB_SANDBOX_CREATE, input: testCreateInput({ name: 'slow' }) },
      ctxOf(call),
    );
    if (out.kind !== 'result') throw new Error('create did not answer');
    expect(builtId).not.toBe('');
    const v = decodeJobResult(SANDBOX_CREATE_OUTPUT, out.output);
    expect(v.sandboxId).toBe('');
    expect(JSON.parse(v.json)).toMatchObject({ code: 'EXPIRED', phase: 'ready' });
    const view = await ownerView(call.callId, builtId);
    expect(view.listed).toBe(false);
    expect(view.containers).toBe(0);
    expect(view.provision).toMatchObject({ phase: 'failed', failedPhase: 'ready' });
    expect(view.provision?.error).toMatch(/released .* while its sandbox was being built/);
    // The failure result is what the owner reads on chain; the blueprint records nothing of it.
    await jobs.submitResult(me, call.callId, out.output as Hex);
    expect(await chain().sandboxOperator(builtId)).toBeUndefined();
  });

  it('released between the last check and the result: the operator sees the result ignored and deletes the sandbox', async () => {
    const call = await jobs.submit(JOB_SANDBOX_CREATE, testCreateInput({ name: 'late' }));
    const me = call.operator!;
    const { router, sandbox } = routerFor(me, manager);
    const out = await router.dispatch(
      { jobIndex: JOB_SANDBOX_CREATE, input: testCreateInput({ name: 'late' }) },
      ctxOf(call),
    );
    if (out.kind !== 'result') throw new Error('create did not answer');
    const id = decodeJobResult(SANDBOX_CREATE_OUTPUT, out.output).sandboxId;
    expect(manager.get(id).state).toBe('running');
    await expireAndRelease(call.callId);
    // The consumer's result: Tangle completes the call, the blueprint ignores it (ResultIgnored).
    await jobs.submitResult(me, call.callId, out.output as Hex);
    const ignored = await jobs.pub.getContractEvents({
      address: devnet.contracts.cloud,
      abi: agentSandboxBlueprintAbi,
      eventName: 'ResultIgnored',
      args: { serviceId: jobs.serviceId, callId: call.callId },
      fromBlock: call.blockNumber,
    });
    expect(ignored.map((e) => e.args.operator?.toLowerCase())).toEqual([me.toLowerCase()]);
    expect(await chain().sandboxOperator(id)).toBeUndefined();
    expect(await ownersDeleteReverts(id)).toBe('UnknownSandbox');

    const writer = new BlueprintWriter({
      httpRpcUrl: devnet.rpcUrl,
      blueprint: devnet.contracts.cloud,
      account: operatorAccount(me),
    });
    const event = {
      serviceId: jobs.serviceId,
      callId: call.callId,
      jobIndex: 0,
      blockNumber: call.blockNumber,
    };
    await afterJob(writer, log, sandbox)({ event, outcome: 'submitted', output: out.output as Hex });
    const view = await ownerView(call.callId, id);
    expect(view.listed).toBe(false);
    expect(view.containers).toBe(0);
    expect(view.provision).toMatchObject({ phase: 'failed', failedPhase: 'ready' });
    expect(view.provision?.error).toMatch(
      /blueprint ignored the result; the sandbox built for it was deleted/,
    );
    // A repeat of the call answers the failure, never the deleted sandbox.
    const again = await router.dispatch(
      { jobIndex: JOB_SANDBOX_CREATE, input: testCreateInput({ name: 'late' }) },
      ctxOf(call),
    );
    if (again.kind !== 'result') throw new Error('repeat did not answer');
    expect(decodeJobResult(SANDBOX_CREATE_OUTPUT, again.output).sandboxId).toBe('');
  });

  it('a create whose reservation stands is kept after its result', async () => {
    const call = await jobs.submit(JOB_SANDBOX_CREATE, testCreateInput({ name: 'kept' }));
    const me = call.operator!;
    const { router, sandbox } = routerFor(me, manager);
    const out = await router.dispatch(
      { jobIndex: JOB_SANDBOX_CREATE, input: testCreateInput({ name: 'kept' }) },
      ctxOf(call),
    );
    if (out.kind !== 'result') throw new Error('create did not answer');
    const id = decodeJobResult(SANDBOX_CREATE_OUTPUT, out.output).sandboxId;
    await jobs.submitResult(me, call.callId, out.output as Hex);
    expect(await sandbox.afterResult({ ...call, serviceId: jobs.serviceId }, out.output as Hex)).toBe(false);
    expect(manager.get(id).state).toBe('running');
    expect((await chain().sandboxOperator(id))?.toLowerCase()).toBe(me.toLowerCase());
  });
});
