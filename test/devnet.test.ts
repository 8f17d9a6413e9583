// The devnet end to end: jobs and results on the deployed contracts, refusals by name, devnet.json and reuse.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readServiceConfig } from '@agent-sandbox/blueprint-lib';
import { agentSandboxBlueprintAbi, describeRevert, localTangleAbi } from '@agent-sandbox/contracts';
import {
  devnetAccounts,
  encodeCreateOutput,
  encodeJsonOutput,
  encodeSandboxCreateRequest,
  encodeSandboxDelete,
  rpcChainId,
  sampleSandboxCreateRequest,
  sandboxCreateRequestComponents,
  startDevnet,
  uncompressedPublicKey,
} from '@agent-sandbox/devnet';
import {
  type Abi,
  type Address,
  createPublicClient,
  createWalletClient,
  decodeAbiParameters,
  type Hex,
  http,
  keccak256,
  type PublicClient,
  parseEventLogs,
  toBytes,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { describe, expect, inject, it } from 'vitest';

const devnet = inject('devnet');
const stateFile = inject('devnetStateFile');
const chain = { ...foundry, rpcUrls: { default: { http: [devnet.rpcUrl] } } };
const pub = createPublicClient({ chain, transport: http(devnet.rpcUrl), pollingInterval: 50 });
type Role = keyof typeof devnet.accounts;
const wallet = (role: Role) =>
  createWalletClient({
    account: privateKeyToAccount(devnet.accounts[role].privateKey),
    chain,
    transport: http(devnet.rpcUrl),
  });
/** Tangle's ABI plus the blueprint's errors and events: a hook's revert surfaces through submitJob. */
const tangleAndBlueprint = [
  ...localTangleAbi,
  ...agentSandboxBlueprintAbi.filter((i) => i.type === 'error' || i.type === 'event'),
] as Abi;
const operators = [devnet.accounts.operator1.address, devnet.accounts.operator2.address];
const cloud = BigInt(devnet.services.cloud);

/** Simulates a Tangle call and returns the custom error's name it is refused with. */
async function refusal(role: Role, functionName: 'submitJob' | 'submitResult', args: readonly unknown[]) {
  try {
    await pub.simulateContract({
      account: devnet.accounts[role].address,
      address: devnet.contracts.tangle,
      abi: tangleAndBlueprint,
      functionName,
      args,
    });
  } catch (err) {
    // The shared decoder: a manager's refusal arrives wrapped in Tangle's ManagerReverted.
    const r = describeRevert(err);
    if (r === 'no-data') return '(no data)';
    if (r) return r.errorName;
    throw err;
  }
  throw new Error(`${functionName} was accepted`);
}

async function send(role: Role, functionName: 'submitJob' | 'submitResult', args: readonly unknown[]) {
  const call = { address: devnet.contracts.tangle, abi: tangleAndBlueprint, functionName, args } as const;
  // The node's estimate, no margin (what a front end sends): the blueprint's create gas does not
  // depend on which operator the random pick lands on (see test/create-gas.test.ts).
  const hash = await wallet(role).writeContract(call);
  const receipt = await pub.waitForTransactionReceipt({ hash });
  expect(receipt.status).toBe('success');
  return parseEventLogs({ abi: tangleAndBlueprint, logs: receipt.logs }) as unknown as Array<{
    eventName: string;
    address: Hex;
    args: Record<string, unknown>;
  }>;
}

const createResult = encodeCreateOutput;

/** Submits a create job on the cloud service and returns its call id and assigned operator. */
async function createJob(name: string) {
  const inputs = encodeSandboxCreateRequest(sampleSandboxCreateRequest({ name }), 'flat');
  const events = await send('serviceOwner', 'submitJob', [cloud, 0, inputs]);
  const submitted = events.find((e) => e.eventName === 'JobSubmitted');
  const assigned = events.find((e) => e.eventName === 'OperatorAssigned');
  expect(submitted?.args.inputs).toBe(inputs);
  expect(assigned?.address.toLowerCase()).toBe(devnet.contracts.cloud.toLowerCase());
  expect(assigned?.args.callId).toBe(submitted?.args.callId);
  return { callId: submitted?.args.callId as bigint, operator: assigned?.args.operator as Hex };
}

const roleOf = (address: Hex): Role =>
  address.toLowerCase() === devnet.accounts.operator1.address.toLowerCase() ? 'operator1' : 'operator2';

describe('devnet: a create job on the cloud service', () => {
  it('is assigned to one of the two operators, and its result completes the job and records the sandbox', async () => {
    const { callId, operator } = await createJob('devnet-test-create');
    expect(operators).toContain(operator);

    const sandboxId = `sb-devnet-${callId}`;
    const json = JSON.stringify({ sandboxId, apiUrl: 'http://127.0.0.1:9090' });
    const events = await send(roleOf(operator), 'submitResult', [
      cloud,
      callId,
      createResult(sandboxId, json),
    ]);
    const names = events.map((e) => e.eventName);
    expect(names).toContain('JobResultSubmitted');
    expect(names).not.toContain('ManagerHookFailed');
    const completed = events.find((e) => e.eventName === 'JobCompleted');
    expect(completed?.args).toMatchObject({ serviceId: cloud, callId });
    const created = events.find((e) => e.eventName === 'SandboxCreated');
    expect(created?.args.sandboxHash).toBe(keccak256(toBytes(sandboxId)));
    expect(String(created?.args.operator).toLowerCase()).toBe(operator.toLowerCase());

    const holder = await pub.readContract({
      address: devnet.contracts.cloud,
      abi: agentSandboxBlueprintAbi as Abi,
      functionName: 'getSandboxOperator',
      args: [sandboxId],
    });
    expect((holder as Hex).toLowerCase()).toBe(operator.toLowerCase());

    // Deleting it (which also gives its capacity back to the shared devnet) routes to the same operator.
    const routed = await send('serviceOwner', 'submitJob', [cloud, 1, encodeSandboxDelete(sandboxId)]);
    const route = routed.find((e) => e.eventName === 'OperatorRouted');
    expect(String(route?.args.operator).toLowerCase()).toBe(operator.toLowerCase());
    const deleted = await send(roleOf(operator), 'submitResult', [
      cloud,
      route?.args.callId,
      encodeJsonOutput('{"deleted":true}'),
    ]);
    const gone = deleted.find((e) => e.eventName === 'SandboxDeleted');
    expect(gone?.args.sandboxHash).toBe(keccak256(toBytes(sandboxId)));
    const active = await pub.readContract({
      address: devnet.contracts.cloud,
      abi: agentSandboxBlueprintAbi as Abi,
      functionName: 'isSandboxActive',
      args: [sandboxId],
    });
    expect(active).toBe(false);
  });
});

/**
 * Closes a create call with an empty sandbox id: the call completes and its reserved slot is
 * released, but nothing is recorded, so refusal tests leave the shared devnet's capacity as found.
 */
const closeEmpty = (operator: Hex, callId: bigint) =>
  send(roleOf(operator), 'submitResult', [cloud, callId, createResult('', '{}')]);

describe('devnet: refusals carry the contract error by name', () => {
  const inputs = encodeSandboxCreateRequest(sampleSandboxCreateRequest({ name: 'refused' }), 'flat');

  it('refuses a job index the blueprint does not have', async () => {
    // Tangle refuses it before the manager: the definition lists jobs 0-4.
    expect(await refusal('serviceOwner', 'submitJob', [cloud, 9, inputs])).toBe('InvalidJobIndex');
  });

  it('refuses a sandbox create on an instance-mode service', async () => {
    const instance = BigInt(devnet.services.instance);
    expect(await refusal('serviceOwner', 'submitJob', [instance, 0, inputs])).toBe('JobNotInInstanceMode');
  });

  it('refuses a delete for a sandbox nobody created', async () => {
    const del = encodeSandboxDelete('sb-that-does-not-exist');
    expect(await refusal('serviceOwner', 'submitJob', [cloud, 1, del])).toBe('UnknownSandbox');
  });

  it('refuses a job from an account that is not a permitted caller', async () => {
    expect(await refusal('operator1', 'submitJob', [cloud, 0, inputs])).toBe('NotPermittedCaller');
  });

  it('refuses a result from an account that is not an operator of the service', async () => {
    const { callId, operator } = await createJob('devnet-test-non-operator');
    expect(await refusal('user', 'submitResult', [cloud, callId, createResult('sb-x', '{}')])).toBe(
      'OperatorNotInService',
    );
    const closed = await closeEmpty(operator, callId);
    expect(closed.map((e) => e.eventName)).not.toContain('SandboxCreated');
  });

  it('refuses a second result for a completed call, from either operator', async () => {
    const { callId, operator } = await createJob('devnet-test-twice');
    await closeEmpty(operator, callId);
    for (const role of ['operator1', 'operator2'] as const) {
      expect(await refusal(role, 'submitResult', [cloud, callId, createResult('sb-again', '{}')])).toBe(
        'JobAlreadyCompleted',
      );
    }
  });
});

describe('devnet: what it set up', () => {
  // The same kind of devnet as the shared one: the stand-in, or tnt-core's state (test:real-tangle).
  const tangle = devnet.protocol && {
    stateFile: devnet.protocol.stateFile,
    deploymentFile: devnet.protocol.deploymentFile,
  };
  it('writes devnet.json with exactly the documented shape', () => {
    const json = JSON.parse(readFileSync(stateFile, 'utf8'));
    expect(json).toEqual(devnet);
    // `protocol` only in the real-protocol mode (npm run test:real-tangle).
    expect(Object.keys(json).sort()).toEqual(
      [
        'accounts',
        'blueprints',
        'chainId',
        'contracts',
        'rpcUrl',
        'services',
        'startedAt',
        'wsUrl',
        ...(devnet.protocol ? ['protocol'] : []),
      ].sort(),
    );
    expect(Object.keys(json.contracts).sort()).toEqual([
      'cloud',
      'instance',
      'staking',
      'tangle',
      'teeInstance',
      'toy',
    ]);
    expect(Object.keys(json.blueprints).sort()).toEqual(['cloud', 'instance', 'teeInstance', 'toy']);
    expect(Object.keys(json.services).sort()).toEqual(['cloud', 'instance', 'teeInstance', 'toy']);
    expect(Object.keys(json.accounts).sort()).toEqual([
      'deployer',
      'operator1',
      'operator2',
      'serviceOwner',
      'user',
    ]);
    for (const a of Object.values(json.accounts) as Array<Record<string, string>>) {
      expect(Object.keys(a).sort()).toEqual(['address', 'privateKey', 'role']);
      expect(privateKeyToAccount(a.privateKey as Hex).address).toBe(a.address);
    }
    expect(json.chainId).toBe(31337);
    expect(json.wsUrl).toBe(json.rpcUrl.replace('http://', 'ws://'));
    expect(json.accounts).toEqual(devnetAccounts());
  });

  it('has both operators, with their real public keys, on every active service', async () => {
    for (const kind of ['cloud', 'instance', 'teeInstance', 'toy'] as const) {
      const id = BigInt(devnet.services[kind]);
      const read = (functionName: string, args: readonly unknown[]) =>
        pub.readContract({
          address: devnet.contracts.tangle,
          abi: localTangleAbi as Abi,
          functionName,
          args,
        });
      expect(await read('isServiceActive', [id])).toBe(true);
      expect(await read('getServiceOperators', [id])).toEqual(operators);
      expect(await read('isPermittedCaller', [id, devnet.accounts.user.address])).toBe(true);
      for (const op of ['operator1', 'operator2'] as const) {
        const prefs = (await read('getOperatorPreferences', [
          BigInt(devnet.blueprints[kind]),
          devnet.accounts[op].address,
        ])) as { ecdsaPublicKey: Hex; rpcAddress: string };
        expect(prefs.ecdsaPublicKey).toBe(uncompressedPublicKey(devnet.accounts[op].privateKey));
        expect(prefs.rpcAddress).toBe(''); // never stored, as on the real router: read the event
      }
    }
  });

  it('gives the instance services their sandbox spec as config', async () => {
    for (const [kind, name] of [
      ['instance', 'devnet-instance'],
      ['teeInstance', 'devnet-tee-instance'],
    ] as const) {
      const config = await readServiceConfig(
        pub as PublicClient,
        devnet.contracts[kind] as Address,
        BigInt(devnet.services[kind]),
      );
      const decoded = decodeAbiParameters(sandboxCreateRequestComponents(), config);
      expect(decoded[0]).toBe(name);
    }
  });

  it('reuses the running devnet instead of deploying again', async () => {
    const lines: string[] = [];
    const again = await startDevnet({ stateFile, reuse: true, tangle, log: (l) => lines.push(l) });
    expect(again.reused).toBe(true);
    expect(again.info).toEqual(devnet);
    expect(lines.join('\n')).toContain('devnet already running');
    await again.stop(); // a reused devnet is not ours to stop
    expect(await pub.getChainId()).toBe(31337);
  });

  it('starts a fresh devnet when the state file describes one that is gone, and stop() ends it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'devnet-stale-'));
    const file = join(dir, 'devnet.json');
    try {
      writeFileSync(
        file,
        JSON.stringify({ ...devnet, rpcUrl: 'http://127.0.0.1:1', wsUrl: 'ws://127.0.0.1:1' }),
      );
      const lines: string[] = [];
      const fresh = await startDevnet({ stateFile: file, reuse: true, tangle, log: (l) => lines.push(l) });
      expect(fresh.reused).toBe(false);
      expect(lines.join('\n')).toContain('not running; starting a fresh one');
      expect(fresh.info.rpcUrl).not.toBe(devnet.rpcUrl);
      expect(fresh.info.contracts).toEqual(devnet.contracts); // same deployer nonces, same addresses
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(fresh.info);
      await fresh.stop();
      expect(await rpcChainId(fresh.info.rpcUrl, 300)).toBeUndefined();
      expect(existsSync(file)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
