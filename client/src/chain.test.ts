// SandboxChain and createSandbox on the shared devnet (real anvil, contracts deployed from forge
// output). The operator's side is played by hand with the assigned operator's real key: it posts
// results with submitResult, and the spec-speaking test server answers the operator API.
import { agentSandboxBlueprintAbi, iTangleAbi } from '@agent-sandbox/contracts';
import { devnetDefinition } from '@agent-sandbox/devnet';
import {
  createWalletClient,
  decodeAbiParameters,
  encodeAbiParameters,
  getAbiItem,
  type Hex,
  http,
  parseEventLogs,
  toEventSelector,
  zeroAddress,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SandboxChain } from './chain.ts';
import { type CreateProgress, createSandbox } from './create-sandbox.ts';
import { ExitCode, isClientError } from './errors.ts';
import { buildCreateRequest, FIELD_ORDER, sandboxCreateRequestLayout } from './job-io.ts';
import { type SpecOperator, startSpecOperator } from './testing/spec-operator.ts';

const devnet = inject('devnet');
const user = privateKeyToAccount(devnet.accounts.user.privateKey as Hex);
const serviceId = BigInt(devnet.services.cloud);
const tangle = devnet.contracts.tangle as Hex;
const keyOf = (addr: string) =>
  Object.values(devnet.accounts).find((a) => a.address.toLowerCase() === addr.toLowerCase())!
    .privateKey as Hex;

function chainFor(account = user) {
  return new SandboxChain({ rpcUrl: devnet.rpcUrl, tangle, serviceId, account, pollMs: 100 });
}

const createOutput = (id: string, json: Record<string, unknown>): Hex =>
  encodeAbiParameters(
    [
      {
        type: 'tuple',
        components: [
          { name: 'sandboxId', type: 'string' },
          { name: 'json', type: 'string' },
        ],
      },
    ],
    [{ sandboxId: id, json: JSON.stringify(json) }],
  );

/** Posts a result as `operator` (its real devnet key), like the operator program does. */
async function postResult(operator: string, callId: bigint, output: Hex): Promise<void> {
  const wallet = createWalletClient({
    account: privateKeyToAccount(keyOf(operator)),
    transport: http(devnet.rpcUrl),
  });
  const hash = await wallet.writeContract({
    address: tangle,
    abi: iTangleAbi,
    functionName: 'submitResult',
    args: [serviceId, callId, output],
    chain: null,
  });
  await chainFor().publicClient.waitForTransactionReceipt({ hash });
}

let op: SpecOperator;
let startBlock = 0n;
beforeAll(async () => {
  op = await startSpecOperator();
  startBlock = await chainFor().publicClient.getBlockNumber();
});

/**
 * The devnet is shared by the whole run and an unanswered create holds an operator slot: answer
 * every create these tests left open with a failure result, as its assigned operator.
 */
afterAll(async () => {
  const chain = chainFor();
  const logs = await chain.publicClient.getContractEvents({
    address: tangle,
    abi: iTangleAbi,
    eventName: 'JobSubmitted',
    args: { serviceId },
    fromBlock: startBlock,
  });
  const layout = sandboxCreateRequestLayout().components;
  for (const log of logs) {
    if (log.args.jobIndex !== 0) continue;
    const name = decodeAbiParameters(layout, log.args.inputs!)[0];
    if (typeof name !== 'string' || !name.startsWith('client-test-')) continue;
    const callId = log.args.callId!;
    if (await chain.findResult(callId, startBlock)) continue;
    const operator = await chain.assignedOperator(callId, startBlock);
    if (operator)
      await postResult(operator, callId, createOutput('', { error: 'test cleanup', phase: 'queued' }));
  }
  await op.close();
});

describe('SandboxChain', () => {
  it('reads an operator’s rpcAddress for this service’s blueprint, not its latest on another one', async () => {
    // operator1 serves the cloud blueprint at :9090; it joins a second blueprint, announced
    // later at another URL. The old reader took the latest OperatorRegistered of any blueprint.
    const deployer = privateKeyToAccount(devnet.accounts.deployer.privateKey as Hex);
    const op1 = privateKeyToAccount(devnet.accounts.operator1.privateKey as Hex);
    const pub = chainFor().publicClient;
    const send = async (account: typeof deployer, functionName: string, args: readonly unknown[]) => {
      const w = createWalletClient({ account, transport: http(devnet.rpcUrl) });
      const hash = await w.writeContract({
        address: tangle,
        abi: iTangleAbi,
        functionName: functionName as never,
        args: args as never,
        chain: null,
      });
      return pub.waitForTransactionReceipt({ hash });
    };
    const created = await send(deployer, 'createBlueprint', [devnetDefinition('toy', zeroAddress)]);
    const [ev] = parseEventLogs({ abi: iTangleAbi, eventName: 'BlueprintCreated', logs: created.logs });
    await send(op1, 'registerOperator', [
      ev!.args.blueprintId,
      op1.publicKey,
      'http://127.0.0.1:1/elsewhere',
    ]);
    expect(await chainFor().operatorRpcAddress(op1.address)).toBe('http://127.0.0.1:9090');
    const other = new SandboxChain({ rpcUrl: devnet.rpcUrl, tangle, serviceId: 999_999n, account: user });
    await expect(other.operatorRpcAddress(op1.address)).rejects.toThrow(/does not exist/);
  });

  it('trusts only the assigned operator: a co-operator answering first is ignored, the assigned one’s settled outcome counts', async () => {
    const chain = chainFor();
    const job = await chain.submitCreate(buildCreateRequest({ name: 'client-test-chosen' }));
    const assigned = job.operator!;
    expect(job.blueprint?.toLowerCase()).toBe(devnet.contracts.cloud.toLowerCase());
    const other = [devnet.accounts.operator1.address, devnet.accounts.operator2.address].find(
      (a) => a.toLowerCase() !== assigned.toLowerCase(),
    )!;
    // The co-operator answers first and names its own API: Tangle completes the call with it.
    await postResult(other, job.callId, createOutput('sb-evil', { operatorApiUrl: 'http://evil.example' }));
    const chosen = { operator: assigned, blueprint: job.blueprint };
    expect(await chain.findResult(job.callId, job.blockNumber, chosen)).toBeUndefined();
    expect((await chain.results(job.callId, job.blockNumber))[0]?.operator.toLowerCase()).toBe(
      other.toLowerCase(),
    );
    // The assigned operator meets JobAlreadyCompleted and records its outcome on the blueprint.
    const id = `sb-chosen-${job.callId}`;
    const wallet = createWalletClient({
      account: privateKeyToAccount(keyOf(assigned)),
      transport: http(devnet.rpcUrl),
    });
    const hash = await wallet.writeContract({
      address: job.blueprint!,
      abi: agentSandboxBlueprintAbi,
      functionName: 'settleCall',
      args: [serviceId, job.callId, createOutput(id, { sandboxId: id, operatorApiUrl: op.url })],
      chain: null,
    });
    await chain.publicClient.waitForTransactionReceipt({ hash });
    const out = await chain.waitForCreateResult(job.callId, {
      fromBlock: job.blockNumber,
      timeoutMs: 10_000,
      chosen,
    });
    expect(out).toMatchObject({ sandboxId: id, json: { operatorApiUrl: op.url } });
    expect(out.operator.toLowerCase()).toBe(assigned.toLowerCase());
    expect(await chain.sandboxOperator(job.blueprint!, id)).toBe(assigned);
    expect(await chain.sandboxOperator(job.blueprint!, 'sb-evil')).toBeUndefined();
  });

  it('believes OperatorAssigned only from the transaction that submitted the call: a spoofing contract is ignored', async () => {
    // A contract anyone can deploy that emits any 4-topic log it is handed (LOG4 of calldata words).
    const runtime = '606035604035602035600035600060 00a400'.replaceAll(' ', '');
    const initCode = `0x6012600c6000396012 6000f3${runtime}`.replaceAll(' ', '') as Hex;
    const attacker = createWalletClient({ account: user, transport: http(devnet.rpcUrl) });
    const reader = chainFor();
    const deployed = await reader.publicClient.waitForTransactionReceipt({
      hash: await attacker.sendTransaction({ data: initCode, chain: null }),
    });
    const spoofer = deployed.contractAddress!;
    const evil = devnet.accounts.deployer.address as Hex;
    const topic = (n: bigint) => n.toString(16).padStart(64, '0');
    const assignedTopic = toEventSelector(
      getAbiItem({ abi: agentSandboxBlueprintAbi, name: 'OperatorAssigned' }),
    );
    // Spoof the next call ids of this service before the real submission lands.
    const from = await reader.publicClient.getBlockNumber();
    const probe = await reader.submitCreate(buildCreateRequest({ name: 'client-test-spoof-probe' }));
    for (let id = probe.callId + 1n; id <= probe.callId + 8n; id++) {
      const data = `${assignedTopic}${topic(serviceId)}${topic(id)}${topic(BigInt(evil))}` as Hex;
      await reader.publicClient.waitForTransactionReceipt({
        hash: await attacker.sendTransaction({ to: spoofer, data, chain: null }),
      });
    }
    const job = await reader.submitCreate(buildCreateRequest({ name: 'client-test-spoofed' }));
    expect(job.callId).toBeLessThanOrEqual(probe.callId + 8n);
    const spoofs = await reader.publicClient.getLogs({ address: spoofer, fromBlock: from });
    expect(spoofs.length).toBe(8);
    expect(job.operator?.toLowerCase()).not.toBe(evil.toLowerCase());
    expect(await reader.assignedOperator(job.callId, from)).toBe(job.operator);
  });

  it('submits job 0 from the owner: call id, assigned operator, and inputs the chain decodes back', async () => {
    const chain = chainFor();
    const req = buildCreateRequest({ name: 'client-test-chain', cpu_cores: 2n, memory_mb: 512n });
    const job = await chain.submitCreate(req);
    expect(job.callId).toBeGreaterThanOrEqual(0n);
    const operators = [devnet.accounts.operator1.address, devnet.accounts.operator2.address].map((a) =>
      a.toLowerCase(),
    );
    expect(operators).toContain(job.operator?.toLowerCase());
    expect(await chain.assignedOperator(job.callId, job.blockNumber)).toBe(job.operator);
    // The bytes Tangle logged are our flat encoding, and decode back to the request.
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: job.txHash });
    const [submitted] = parseEventLogs({ abi: iTangleAbi, eventName: 'JobSubmitted', logs: receipt.logs });
    expect(submitted?.args.callId).toBe(job.callId);
    const decoded = decodeAbiParameters(sandboxCreateRequestLayout().components, submitted!.args.inputs);
    expect(Object.fromEntries(FIELD_ORDER.map((k, i) => [k, decoded[i]]))).toEqual(req);
    // The operator registered its API URL as rpcAddress on the devnet.
    expect(await chain.operatorRpcAddress(job.operator!)).toMatch(/^http:\/\/127\.0\.0\.1:909\d$/);
  });

  it('waits for the posted result and decodes it; delete is routed to the same operator', async () => {
    const chain = chainFor();
    const job = await chain.submitCreate(buildCreateRequest({ name: 'client-test-roundtrip' }));
    const id = `sb-chain-${job.callId}`;
    await postResult(job.operator!, job.callId, createOutput(id, { sandboxId: id, operatorApiUrl: op.url }));
    const out = await chain.waitForCreateResult(job.callId, {
      fromBlock: job.blockNumber,
      timeoutMs: 10_000,
    });
    expect(out).toMatchObject({ sandboxId: id, json: { sandboxId: id, operatorApiUrl: op.url } });
    expect(out.operator.toLowerCase()).toBe(job.operator!.toLowerCase());

    // Another account may not delete it: the blueprint reverts, by name, before anything is sent.
    const stranger = chainFor(privateKeyToAccount(devnet.accounts.serviceOwner.privateKey as Hex));
    const err = await stranger.submitDelete(id).catch((e) => e);
    expect(isClientError(err, 'CHAIN')).toBe(true);
    expect(err.exitCode).toBe(ExitCode.CHAIN);
    expect(err.message).toMatch(/NotSandboxOwner/);

    const del = await chain.submitDelete(id);
    expect(del.operator?.toLowerCase()).toBe(job.operator!.toLowerCase());
    await postResult(
      del.operator!,
      del.callId,
      encodeAbiParameters([{ type: 'string' }], ['{"deleted":true}']),
    );
    expect(
      await chain.waitForDeleteResult(del.callId, { fromBlock: del.blockNumber, timeoutMs: 10_000 }),
    ).toEqual({
      deleted: true,
    });
  });

  it('concurrent submissions from one account all land, each with its own call id', async () => {
    const jobs = await Promise.all(
      [1, 2, 3, 4].map((n) =>
        chainFor().submitCreate(buildCreateRequest({ name: `client-test-concurrent-${n}` })),
      ),
    );
    expect(new Set(jobs.map((j) => j.callId)).size).toBe(4);
  });

  it('deleting an unknown sandbox reverts with UnknownSandbox', async () => {
    const err = await chainFor()
      .submitDelete('no-such-sandbox')
      .catch((e) => e);
    expect(isClientError(err, 'CHAIN')).toBe(true);
    expect(err.message).toMatch(/UnknownSandbox/);
  });

  it('waitForResult times out with a clear chain error when no operator answers', async () => {
    const chain = chainFor();
    const job = await chain.submitCreate(buildCreateRequest({ name: 'client-test-nobody-answers' }));
    const err = await chain
      .waitForResult(job.callId, { fromBlock: job.blockNumber, timeoutMs: 300 })
      .catch((e) => e);
    expect(isClientError(err, 'TIMEOUT')).toBe(true);
    expect(err.exitCode).toBe(ExitCode.CHAIN);
  });

  it('an unreachable RPC is a CHAIN error', async () => {
    const chain = new SandboxChain({ rpcUrl: 'http://127.0.0.1:9', tangle, serviceId, account: user });
    const err = await chain.submitCreate(buildCreateRequest({})).catch((e) => e);
    expect(isClientError(err, 'CHAIN')).toBe(true);
  });
});

describe('createSandbox', () => {
  /** Plays the assigned operator once the job is assigned: phases on the API, then a result. */
  function operatorPlays(
    result: (callId: bigint) => { id: string; json: Record<string, unknown> },
    failPhase?: string,
  ) {
    return async (p: CreateProgress) => {
      if (p.stage !== 'assigned') return;
      const key = String(p.callId);
      op.provisions.set(key, { call_id: Number(p.callId), phase: 'image_pull' });
      await new Promise((r) => setTimeout(r, 250));
      if (failPhase) {
        op.provisions.set(key, {
          // The runtime's record shape: phases history, failedPhase, error.
          callId: key,
          phase: 'failed',
          phases: [
            { phase: 'queued', at: 1 },
            { phase: failPhase, at: 2 },
            { phase: 'failed', at: 3 },
          ],
          failedPhase: failPhase,
          error: 'disk full',
        });
        return;
      }
      op.provisions.set(key, { call_id: Number(p.callId), phase: 'health_check' });
      await new Promise((r) => setTimeout(r, 250));
      const { id, json } = result(p.callId);
      if (id) op.sandboxes.set(id, { id, owner: user.address.toLowerCase(), state: 'running', secrets: {} });
      op.provisions.set(key, { call_id: Number(p.callId), phase: id ? 'ready' : 'failed', sandbox_id: id });
      await postResult(p.operator!, p.callId, createOutput(id, json));
    };
  }

  it('returns only when the operator reports the sandbox running, with phases on the way', async () => {
    const seen: string[] = [];
    let play: Promise<void> | undefined;
    const actor = operatorPlays((callId) => ({
      id: `sb-e2e-${callId}`,
      json: { sandboxId: `sb-e2e-${callId}` },
    }));
    const created = await createSandbox({
      chain: chainFor(),
      account: user,
      request: { name: 'client-test-e2e' },
      operatorUrl: op.url,
      pollMs: 100,
      timeoutMs: 30_000,
      onProgress: (p) => {
        seen.push(p.stage === 'phase' ? `phase:${p.phase}` : p.stage);
        if (p.stage === 'assigned') play = actor(p);
      },
    });
    await play;
    expect(created.sandbox.state).toBe('running');
    expect(created.sandboxId).toBe(`sb-e2e-${created.callId}`);
    expect(seen[0]).toBe('submitted');
    expect(seen).toContain('phase:image_pull');
    expect(seen).toContain('phase:health_check');
    expect(seen.slice(-2)).toEqual(['result', 'running']);
    expect(await created.client.exec(created.sandboxId, 'true')).toMatchObject({ exit_code: 0 });
    // Give the slot back: delete it as the owner, answered by its operator.
    const del = await chainFor().submitDelete(created.sandboxId);
    await postResult(
      del.operator!,
      del.callId,
      encodeAbiParameters([{ type: 'string' }], ['{"deleted":true}']),
    );
  });

  it('says so when an operator that was not assigned answers, and takes the sandbox and its API URL from the assigned one', async () => {
    const seen: CreateProgress[] = [];
    let play: Promise<void> | undefined;
    const actor = async (p: CreateProgress) => {
      if (p.stage !== 'assigned' || !p.operator) return;
      const other = [devnet.accounts.operator1.address, devnet.accounts.operator2.address].find(
        (a) => a.toLowerCase() !== p.operator!.toLowerCase(),
      )!;
      // The co-operator answers first, naming a sandbox and an API of its own.
      await postResult(other, p.callId, createOutput('sb-evil', { operatorApiUrl: 'http://evil.example' }));
      await new Promise((r) => setTimeout(r, 300));
      const id = `sb-settled-${p.callId}`;
      op.sandboxes.set(id, { id, owner: user.address.toLowerCase(), state: 'running', secrets: {} });
      const wallet = createWalletClient({
        account: privateKeyToAccount(keyOf(p.operator)),
        transport: http(devnet.rpcUrl),
      });
      const hash = await wallet.writeContract({
        address: devnet.contracts.cloud as Hex,
        abi: agentSandboxBlueprintAbi,
        functionName: 'settleCall',
        args: [serviceId, p.callId, createOutput(id, { sandboxId: id, operatorApiUrl: op.url })],
        chain: null,
      });
      await chainFor().publicClient.waitForTransactionReceipt({ hash });
    };
    const created = await createSandbox({
      chain: chainFor(),
      account: user,
      request: { name: 'client-test-ignored' },
      operatorUrl: () => undefined, // the URL must come from the assigned operator's result
      pollMs: 100,
      timeoutMs: 30_000,
      onProgress: (p) => {
        seen.push(p);
        if (p.stage === 'assigned') play = actor(p);
      },
    });
    await play;
    const assigned = seen.find((p) => p.stage === 'assigned') as { operator: string };
    const ignored = seen.filter((p) => p.stage === 'ignored');
    expect(ignored).toHaveLength(1);
    expect(ignored[0]).toMatchObject({ assigned: assigned.operator });
    expect(created.sandboxId).toBe(`sb-settled-${created.callId}`);
    expect(created.operator.toLowerCase()).toBe(assigned.operator.toLowerCase());
    expect(created.operatorUrl).toBe(op.url);
  });

  /** A create whose assigned operator plays `actor`; what it threw, once the play has ended. */
  async function failingCreate(
    name: string,
    actor: (p: Extract<CreateProgress, { stage: 'assigned' }>) => Promise<void>,
    operatorUrl: string | (() => undefined) = op.url,
  ) {
    let play: Promise<void> | undefined;
    const err = await createSandbox({
      chain: chainFor(),
      account: user,
      request: { name },
      operatorUrl,
      pollMs: 100,
      timeoutMs: 30_000,
      onProgress: (p) => {
        if (p.stage === 'assigned') play = actor(p);
      },
    }).catch((e) => e);
    await play;
    return err;
  }

  it('throws with the failed phase and reason from the on-chain failure result', async () => {
    const actor = operatorPlays(() => ({ id: '', json: { error: 'image not found', phase: 'image_pull' } }));
    const err = await failingCreate(
      'client-test-fail-result',
      (p) => actor({ ...p, operatorUrl: op.url }),
      () => undefined, // no live progress: the chain result alone decides
    );
    expect(isClientError(err, 'PROVISION_FAILED')).toBe(true);
    expect(err.message).toBe('sandbox provisioning failed at image_pull: image not found');
    expect(err.exitCode).toBe(ExitCode.REMOTE);
  });

  it('a failed phase shown without its reason (an anonymous view) waits for the on-chain reason', async () => {
    // The operator's public progress says `failed` but not why; the result on chain does.
    const actor = operatorPlays(() => ({ id: '', json: { error: 'image not found', phase: 'image_pull' } }));
    const err = await failingCreate('client-test-fail-anon', actor);
    expect(isClientError(err, 'PROVISION_FAILED')).toBe(true);
    expect(err.message).toBe('sandbox provisioning failed at image_pull: image not found');
  });

  it('throws as soon as the operator reports the provision failed', async () => {
    const actor = operatorPlays(() => ({ id: '', json: {} }), 'container_start');
    const err = await failingCreate('client-test-fail-phase', actor);
    expect(isClientError(err, 'PROVISION_FAILED')).toBe(true);
    expect(err.details).toMatchObject({ phase: 'container_start', reason: 'disk full' });
  });

  it('deletes (job 1, never a stop) a sandbox that exists but never reports running', async () => {
    const err = await failingCreate('client-test-never-running', async (p) => {
      const id = `sb-stopped-${p.callId}`;
      op.sandboxes.set(id, { id, owner: user.address.toLowerCase(), state: 'stopped', secrets: {} });
      await postResult(p.operator!, p.callId, createOutput(id, { sandboxId: id }));
    });
    expect(isClientError(err, 'PROVISION_FAILED')).toBe(true);
    expect(err.message).toMatch(/reports stopped, not running; delete job \d+ was submitted for it/);
    const chain = chainFor();
    const deleteCallId = BigInt(err.details.deleteCallId);
    const routed = await chain.publicClient.getContractEvents({
      abi: (await import('@agent-sandbox/contracts')).agentSandboxBlueprintAbi,
      eventName: 'OperatorRouted',
      args: { serviceId, callId: deleteCallId },
      fromBlock: startBlock,
    });
    expect(routed).toHaveLength(1);
    // Answer the delete as its operator, so the slot is free again for the rest of the run.
    await postResult(
      routed[0]!.args.operator!,
      deleteCallId,
      encodeAbiParameters([{ type: 'string' }], ['{}']),
    );
  });

  it('refuses a request with a secret-looking env before anything goes on chain', async () => {
    const submitted: string[] = [];
    const err = await createSandbox({
      chain: chainFor(),
      account: user,
      request: { env_json: '{"ANTHROPIC_API_KEY":"sk"}' },
      onProgress: (p) => void submitted.push(p.stage),
    }).catch((e) => e);
    expect(isClientError(err, 'USAGE')).toBe(true);
    expect(submitted).toEqual([]);
  });
});
