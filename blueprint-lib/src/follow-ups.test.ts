// The chain's books follow the operator's on the devnet: a co-operator's result cannot take a
// create (the assigned operator settles it), a given-up create gives its slot back, and a sandbox
// GC expires is reported gone so the operator's free capacity on chain goes back up; a terminated
// service's sandboxes are deleted.
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import type { EncryptedStore, SandboxManager } from '@agent-sandbox/runtime';
import { decodeJobResult, type JobContext } from '@agent-sandbox/sdk';
import pino from 'pino';
import {
  type Address,
  createWalletClient,
  encodeAbiParameters,
  type Hex,
  http,
  keccak256,
  toBytes,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { blueprintRouter } from './blueprint-router.ts';
import { BlueprintChain } from './chain.ts';
import { BlueprintWriter } from './chain-writes.ts';
import { afterJob, GoneReporter } from './follow-ups.ts';
import { JOB_SANDBOX_CREATE, SANDBOX_CREATE_OUTPUT } from './jobs.ts';
import { testCreateInput } from './testing/create-input.ts';
import { DevnetJobs } from './testing/devnet-service.ts';
import { openTestRuntime, type TestRuntime } from './testing/test-runtime.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `blfu-${Date.now().toString(36)}`;
const log = pino({ level: 'silent' });

let jobs: DevnetJobs;
let rt: TestRuntime;
let store: EncryptedStore;
let manager: SandboxManager;

const createIn = (name: string) => testCreateInput({ name });

function writerFor(op: Address): BlueprintWriter {
  const role = [devnet.accounts.operator1, devnet.accounts.operator2].find(
    (a) => a.address.toLowerCase() === op.toLowerCase(),
  )!;
  const account = privateKeyToAccount(role.privateKey);
  return new BlueprintWriter({ httpRpcUrl: devnet.rpcUrl, blueprint: devnet.contracts.cloud, account });
}

const read = <T>(functionName: string, args: readonly unknown[], blockNumber?: bigint) =>
  jobs.pub.readContract({
    address: devnet.contracts.cloud,
    abi: agentSandboxBlueprintAbi,
    functionName: functionName as never,
    args: args as never,
    ...(blockNumber === undefined ? {} : { blockNumber }),
  }) as Promise<T>;

/** (active, reserved, capacity); at a block, so other tests sharing the devnet do not interfere. */
const load = (op: Address, blockNumber?: bigint) =>
  read<readonly [number, number, number]>('getOperatorLoad', [op], blockNumber);

/** How one block changed an operator's (active, reserved): only that block's transaction. */
async function delta(op: Address, at: bigint): Promise<[number, number]> {
  const [a0, r0] = await load(op, at - 1n);
  const [a1, r1] = await load(op, at);
  return [a1 - a0, r1 - r0];
}

/** The block of the blueprint's `eventName` log for this call. */
async function blockOf(
  eventName: 'ResultIgnored' | 'CallSettled' | 'ReservationReleased',
  call: { callId: bigint; blockNumber: bigint },
): Promise<bigint> {
  const [ev] = await jobs.pub.getContractEvents({
    address: devnet.contracts.cloud,
    abi: agentSandboxBlueprintAbi,
    eventName,
    args: { serviceId: jobs.serviceId, callId: call.callId },
    fromBlock: call.blockNumber,
  });
  if (!ev) throw new Error(`no ${eventName} for call ${call.callId}`);
  return ev.blockNumber;
}

function routerFor(operator: Address) {
  return blueprintRouter({
    operator,
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
  }).router;
}

const ctxOf = (call: { callId: bigint; blockNumber: bigint; transactionHash: Hex }): JobContext => ({
  serviceId: jobs.serviceId,
  callId: call.callId,
  jobIndex: 0,
  caller: jobs.caller.address,
  blockNumber: call.blockNumber,
  transactionHash: call.transactionHash,
  log,
  signal: new AbortController().signal,
});

beforeAll(async () => {
  jobs = new DevnetJobs(devnet);
  await jobs.newCloudService();
  rt = await openTestRuntime({
    operatorId: RUN,
    image,
    secret: 'ab'.repeat(32),
    config: { gcHotRetentionSeconds: 0, gcWarmRetentionSeconds: 0, gcColdRetentionSeconds: 0 },
  });
  ({ store, manager } = rt);
});

afterAll(() => rt?.close());

describe('follow-ups on the blueprint', () => {
  it('a co-operator answering first takes nothing: the assigned operator settles its create', async () => {
    const call = await jobs.submit(JOB_SANDBOX_CREATE, createIn('settle'));
    const assigned = call.operator!;
    // The other operator posts first: Tangle completes the call, the blueprint ignores it.
    const stolen = encodeAbiParameters(SANDBOX_CREATE_OUTPUT, [`${RUN}-stolen`, '{}']);
    await jobs.submitResult(jobs.otherOperator(assigned), call.callId, stolen);
    expect(await read<Address>('getSandboxOperator', [`${RUN}-stolen`])).toMatch(/^0x0+$/);
    expect(await delta(assigned, await blockOf('ResultIgnored', call))).toEqual([0, 0]);
    // The assigned operator's consumer meets JobAlreadyCompleted and settles on the blueprint.
    const real = encodeAbiParameters(SANDBOX_CREATE_OUTPUT, [`${RUN}-real`, '{}']);
    const event = { serviceId: jobs.serviceId, callId: call.callId, jobIndex: 0 };
    await afterJob(writerFor(assigned), log)({ event, outcome: 'already-done', output: real });
    expect((await read<Address>('getSandboxOperator', [`${RUN}-real`])).toLowerCase()).toBe(
      assigned.toLowerCase(),
    );
    expect(await delta(assigned, await blockOf('CallSettled', call))).toEqual([1, -1]);
    // Settling again, or by the other operator, changes nothing.
    expect(await writerFor(assigned).settleCall(jobs.serviceId, call.callId, real)).toBe('nothing-to-do');
  });

  it('a create the operator gives up on gives its reserved slot back; a released create is never provisioned', async () => {
    const call = await jobs.submit(JOB_SANDBOX_CREATE, createIn('give-up'));
    const assigned = call.operator!;
    const event = { serviceId: jobs.serviceId, callId: call.callId, jobIndex: 0 };
    await afterJob(writerFor(assigned), log)({ event, outcome: 'failed' });
    expect(await delta(assigned, await blockOf('ReservationReleased', call))).toEqual([0, -1]);
    // Handled again (a redelivery, say): the slot is gone, so nothing is provisioned.
    const before = manager.list().length;
    const out = await routerFor(assigned).dispatch({ jobIndex: 0, input: createIn('give-up') }, ctxOf(call));
    if (out.kind !== 'result') throw new Error('create did not answer');
    const v = decodeJobResult(SANDBOX_CREATE_OUTPUT, out.output);
    expect(v.sandboxId).toBe('');
    expect(JSON.parse(v.json)).toMatchObject({ code: 'EXPIRED', phase: 'admission' });
    expect(manager.list()).toHaveLength(before);
  });

  it('GC expires a stopped sandbox; the operator reports it gone and its free capacity on chain goes up', async () => {
    const call = await jobs.submit(JOB_SANDBOX_CREATE, createIn('expire-me'));
    const me = call.operator!;
    const out = await routerFor(me).dispatch({ jobIndex: 0, input: createIn('expire-me') }, ctxOf(call));
    if (out.kind !== 'result') throw new Error('create did not answer');
    await jobs.submitResult(me, call.callId, out.output as Hex);
    const id = decodeJobResult(SANDBOX_CREATE_OUTPUT, out.output).sandboxId;
    expect(await read<boolean>('isSandboxActive', [id])).toBe(true);

    await manager.stop(id);
    // Every retention is 0: three GC passes take it hot -> warm -> cold -> gone (expired).
    for (let i = 0; i < 3; i++) await manager.gcTick(Date.now() + 1000 * (i + 1));
    expect(manager.get(id).state).toBe('expired');
    const reporter = new GoneReporter({
      sandboxes: manager,
      store,
      writer: writerFor(me),
      serviceId: jobs.serviceId,
      mode: 'cloud',
      log,
    });
    expect(await reporter.tick()).toEqual([id]);
    expect(await reporter.tick()).toEqual([]); // reported once
    expect(await read<boolean>('isSandboxActive', [id])).toBe(false);
    // Compare the chain just before and at the report's block (one transaction per block on the
    // devnet): other tests share these operators, so only that block's change is ours alone.
    const [gone] = await jobs.pub.getContractEvents({
      address: devnet.contracts.cloud,
      abi: agentSandboxBlueprintAbi,
      eventName: 'SandboxGone',
      args: { sandboxHash: keccak256(toBytes(id)) },
      fromBlock: call.blockNumber,
    });
    expect(gone?.args.operator?.toLowerCase()).toBe(me.toLowerCase());
    const at = gone!.blockNumber;
    expect(await delta(me, at)).toEqual([-1, 0]);
    const freeBefore = await read<bigint>('getAvailableCapacity', [], at - 1n);
    expect(await read<bigint>('getAvailableCapacity', [], at)).toBe(freeBefore + 1n);
  });

  it("cloud: once the service is terminated, the operator deletes that service's sandboxes, and only those", async () => {
    const svc = new DevnetJobs(devnet);
    await svc.newCloudService();
    const params = (serviceId: bigint, callId: bigint) => ({
      owner: svc.caller.address,
      serviceId,
      callId,
      name: 'ended',
      memoryMb: 256,
    });
    const doomed = await manager.create(params(svc.serviceId, 1n));
    const kept = await manager.create(params(jobs.serviceId, 10_000n + BigInt(Date.now() % 1000)));
    const chain = new BlueprintChain({ httpRpcUrl: devnet.rpcUrl, blueprint: devnet.contracts.cloud });
    const reporter = new GoneReporter({
      sandboxes: manager,
      store,
      writer: writerFor(devnet.accounts.operator1.address),
      serviceId: svc.serviceId,
      mode: 'cloud',
      log,
      serviceActive: () => chain.isServiceActive(devnet.contracts.tangle, svc.serviceId),
    });
    expect(await reporter.tick()).toEqual([]); // still active: nothing happens
    expect(manager.get(doomed.id).state).toBe('running');
    await svc.send(svc.account('serviceOwner'), 'terminateService', [svc.serviceId]);
    expect(await reporter.tick()).toEqual([doomed.id]);
    expect(manager.list().map((r) => r.id)).not.toContain(doomed.id);
    expect(manager.get(kept.id).state).toBe('running'); // another service's sandbox is untouched
    expect(await reporter.tick()).toEqual([]);
  });

  it('instance: the operator reports deprovisioned when its instance sandbox is gone, or when the service ended', async () => {
    const op1 = devnet.accounts.operator1;
    const account = privateKeyToAccount(op1.privateKey);
    const wallet = createWalletClient({ account, transport: http(devnet.rpcUrl) });
    const chain = new BlueprintChain({ httpRpcUrl: devnet.rpcUrl, blueprint: devnet.contracts.instance });
    const writer = new BlueprintWriter({
      httpRpcUrl: devnet.rpcUrl,
      blueprint: devnet.contracts.instance,
      account,
    });
    const provisioned = (serviceId: bigint) =>
      jobs.pub.readContract({
        address: devnet.contracts.instance,
        abi: agentSandboxBlueprintAbi,
        functionName: 'isOperatorProvisioned',
        args: [serviceId, op1.address],
      });
    for (const how of ['sandbox gone', 'service ended'] as const) {
      const svc = new DevnetJobs(devnet);
      const serviceId = await svc.newService('instance', createIn(`inst-${how.replace(' ', '-')}`));
      const hash = await wallet.writeContract({
        address: devnet.contracts.instance,
        abi: agentSandboxBlueprintAbi,
        functionName: 'reportProvisioned',
        args: [serviceId, `${RUN}-inst`, 'http://127.0.0.1:9191', 0, ''],
        chain: null,
      });
      await jobs.pub.waitForTransactionReceipt({ hash });
      expect(await provisioned(serviceId)).toBe(true);
      const reporter = new GoneReporter({
        sandboxes: manager,
        store,
        writer,
        serviceId,
        mode: 'instance',
        log,
        // 'sandbox gone': this manager holds no record with that id (deleted); 'service ended':
        // the sandbox is unknown yet, the service is terminated on Tangle.
        instanceSandboxId: () => (how === 'sandbox gone' ? `${RUN}-inst` : undefined),
        serviceActive: () => chain.isServiceActive(devnet.contracts.tangle, serviceId),
      });
      if (how === 'service ended') {
        expect(await reporter.tick()).toEqual([]); // still active: nothing to report
        await svc.send(svc.account('serviceOwner'), 'terminateService', [serviceId]);
      }
      expect(await reporter.tick()).toEqual(['instance']);
      expect(await provisioned(serviceId)).toBe(false);
      expect(await reporter.tick()).toEqual([]);
    }
  });
});
