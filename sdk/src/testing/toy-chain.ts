// Test fixture: a private toy service on a real anvil. It reuses the shared devnet (LocalTangle and
// the toy blueprint, whose bare manager accepts any job) when given one, else starts its own anvil
// and deploys them; then registers two FRESH operators and a fresh caller, so tests running in
// parallel never share a nonce or a service.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import {
  blueprintServiceManagerBaseAbi,
  blueprintServiceManagerBaseBytecode,
  localStakingAbi,
  localStakingBytecode,
  localTangleAbi,
  localTangleBytecode,
} from '@agent-sandbox/contracts';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeAbiParameters,
  erc20Abi,
  type Hex,
  http,
  type PublicClient,
  parseEther,
  parseEventLogs,
  zeroAddress,
} from 'viem';
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';
import {
  type BlueprintDefinition,
  containerSource,
  defineBlueprint,
  defineJob,
} from '../blueprint-definition.ts';
import { stakeOperator } from '../roles/staking.ts';

export interface TestAccount {
  address: Address;
  privateKey: Hex;
}

export interface ToyChain {
  rpcUrl: string;
  wsUrl: string;
  chainId: number;
  tangle: Address;
  /** The staking contract registration consults (LocalStaking): stake a fresh operator there first. */
  staking: Address;
  blueprintId: bigint;
  serviceId: bigint;
  operators: [TestAccount, TestAccount];
  /** Permitted caller of the service (submits jobs). */
  caller: TestAccount;
  client: PublicClient;
  stop(): Promise<void>;
}

/** The part of the shared devnet description (inject('devnet')) this fixture uses. */
export interface DevnetLike {
  chainId: number;
  rpcUrl: string;
  wsUrl: string;
  contracts: { tangle: string; staking?: string | undefined };
  blueprints: { toy: number };
}

const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';
/** The self-stake the fixture gives a fresh operator (the devnet's minimum). */
const STAKE = parseEther('1');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function startAnvil(): Promise<{ rpcUrl: string; wsUrl: string; proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn(
    join(import.meta.dirname, '../../../node_modules/.bin/anvil'),
    ['--port', `${port}`, '--silent'],
    {
      stdio: 'ignore',
    },
  );
  const rpcUrl = `http://127.0.0.1:${port}`;
  const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }) });
  for (let i = 0; i < 100; i++) {
    if (await client.getChainId().catch(() => undefined))
      return { rpcUrl, wsUrl: `ws://127.0.0.1:${port}`, proc };
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill('SIGKILL');
  throw new Error('anvil did not start');
}

export function freshAccount(): TestAccount {
  const privateKey = generatePrivateKey();
  return { address: privateKeyToAccount(privateKey).address, privateKey };
}

export async function toyChain(devnet?: DevnetLike): Promise<ToyChain> {
  let rpcUrl: string;
  let wsUrl: string;
  let proc: ChildProcess | undefined;
  let tangle: Address;
  let staking: Address;
  let blueprintId: bigint;
  if (devnet) {
    ({ rpcUrl, wsUrl } = devnet);
  } else {
    ({ rpcUrl, wsUrl, proc } = await startAnvil());
  }
  const client = createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 }) as PublicClient;
  const chainId = await client.getChainId();
  const chain = defineChain({
    id: chainId,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const wallet = (pk: Hex) =>
    createWalletClient({ account: privateKeyToAccount(pk), chain, transport: http(rpcUrl) });
  const mined = async (hash: Hex) => {
    const r = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (r.status !== 'success') throw new Error(`tx ${hash} reverted`);
    return r;
  };
  const fund = (a: Address) =>
    client.request({
      method: 'anvil_setBalance' as never,
      params: [a, `0x${parseEther('100').toString(16)}`] as never,
    });

  if (devnet) {
    tangle = devnet.contracts.tangle as Address;
    if (!devnet.contracts.staking) throw new Error('the devnet names no staking contract');
    staking = devnet.contracts.staking as Address;
    blueprintId = BigInt(devnet.blueprints.toy);
  } else {
    const deployer = mnemonicToAccount(ANVIL_MNEMONIC);
    const w = createWalletClient({ account: deployer, chain, transport: http(rpcUrl) });
    const s = await mined(
      await w.deployContract({
        abi: localStakingAbi,
        bytecode: localStakingBytecode,
        args: [STAKE, zeroAddress],
      }),
    );
    staking = s.contractAddress!;
    const t = await mined(
      await w.deployContract({ abi: localTangleAbi, bytecode: localTangleBytecode, args: [staking] }),
    );
    const m = await mined(
      await w.deployContract({
        abi: blueprintServiceManagerBaseAbi,
        bytecode: blueprintServiceManagerBaseBytecode,
        args: [],
      }),
    );
    tangle = t.contractAddress!;
    const r = await mined(
      await w.writeContract({
        address: tangle,
        abi: localTangleAbi,
        functionName: 'createBlueprint',
        args: [toyDefinition(m.contractAddress!)],
      }),
    );
    blueprintId = parseEventLogs({ abi: localTangleAbi, eventName: 'BlueprintCreated', logs: r.logs })[0]!
      .args.blueprintId;
  }

  const operators: [TestAccount, TestAccount] = [freshAccount(), freshAccount()];
  const owner = freshAccount();
  const caller = freshAccount();
  for (const a of [...operators, owner, caller]) await fund(a.address);
  for (const op of operators) {
    await stakeFresh({ rpcUrl, staking, client }, op);
    await mined(
      await wallet(op.privateKey).writeContract({
        address: tangle,
        abi: localTangleAbi,
        functionName: 'registerOperator',
        args: [
          blueprintId,
          privateKeyToAccount(op.privateKey).publicKey,
          'http://127.0.0.1:1',
          encodeAbiParameters([{ type: 'uint32' }], [5]),
        ],
      }),
    );
  }
  const req = await mined(
    await wallet(owner.privateKey).writeContract({
      address: tangle,
      abi: localTangleAbi,
      functionName: 'requestService',
      args: [blueprintId, operators.map((o) => o.address), '0x', [caller.address], 0n, zeroAddress, 0n, 0],
    }),
  );
  const requestId = parseEventLogs({ abi: localTangleAbi, eventName: 'ServiceRequested', logs: req.logs })[0]!
    .args.requestId;
  let serviceId: bigint | undefined;
  for (const op of operators) {
    const r = await mined(
      await wallet(op.privateKey).writeContract({
        address: tangle,
        abi: localTangleAbi,
        functionName: 'approveService',
        args: [
          {
            requestId,
            securityCommitments: [],
            blsPubkey: [0n, 0n, 0n, 0n],
            blsPopSignature: [0n, 0n],
            teeCommitments: [],
          },
        ],
      }),
    );
    const act = parseEventLogs({ abi: localTangleAbi, eventName: 'ServiceActivated', logs: r.logs })[0];
    if (act) serviceId = act.args.serviceId;
  }
  if (serviceId === undefined) throw new Error('toy service did not activate');
  return {
    rpcUrl,
    wsUrl,
    chainId,
    tangle,
    staking,
    blueprintId,
    serviceId,
    operators,
    caller,
    client,
    stop: async () => {
      proc?.kill('SIGKILL');
    },
  };
}

/**
 * Makes a funded fresh account an active operator in the staking contract (before it registers).
 * A staking contract that bonds in an ERC20 (the shared devnet's, as tnt-core's LocalTestnet bonds
 * in TNT) gets the bond from the deployer (anvil account 0 holds it), approved and staked with the
 * sdk's own staking call.
 */
export async function stakeFresh(
  chain: Pick<ToyChain, 'rpcUrl' | 'staking' | 'client'>,
  account: TestAccount,
): Promise<void> {
  const bond = await chain.client.readContract({
    address: chain.staking,
    abi: localStakingAbi,
    functionName: 'operatorBondToken',
  });
  if (bond !== zeroAddress) {
    const deployer = createWalletClient({
      account: mnemonicToAccount(ANVIL_MNEMONIC),
      transport: http(chain.rpcUrl),
    });
    const hash = await deployer.writeContract({
      address: bond,
      abi: erc20Abi,
      functionName: 'transfer',
      args: [account.address, STAKE],
      chain: null,
    });
    await chain.client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  }
  await stakeOperator(
    { rpcUrl: chain.rpcUrl, account: privateKeyToAccount(account.privateKey), pollingIntervalMs: 50 },
    chain.staking,
    STAKE,
  );
}

/** Submits jobs from the chain's caller as a burst (consecutive nonces, no waiting in between). */
export async function submitJobs(chain: ToyChain, jobIndex: number, inputs: Hex[]): Promise<bigint[]> {
  const account = privateKeyToAccount(chain.caller.privateKey);
  const w = createWalletClient({
    account,
    chain: defineChain({
      id: chain.chainId,
      name: 'anvil',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [chain.rpcUrl] } },
    }),
    transport: http(chain.rpcUrl),
  });
  let nonce = await chain.client.getTransactionCount({ address: account.address, blockTag: 'pending' });
  const hashes: Hex[] = [];
  for (const input of inputs) {
    hashes.push(
      await w.writeContract({
        address: chain.tangle,
        abi: localTangleAbi,
        functionName: 'submitJob',
        args: [chain.serviceId, jobIndex, input],
        nonce: nonce++,
        gas: 300_000n + BigInt(input.length) * 40n,
      }),
    );
  }
  const ids: bigint[] = [];
  for (const hash of hashes) {
    const r = await chain.client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (r.status !== 'success') throw new Error(`submitJob ${hash} reverted`);
    ids.push(
      parseEventLogs({ abi: localTangleAbi, eventName: 'JobSubmitted', logs: r.logs })[0]!.args.callId,
    );
  }
  return ids;
}

/** Every JobResultSubmitted of the chain's service, grouped by call id. */
export async function resultsByCall(
  chain: ToyChain,
): Promise<Map<bigint, Array<{ operator: Address; output: Hex }>>> {
  const logs = await chain.client.getLogs({
    address: chain.tangle,
    event: localTangleAbi.find((x) => x.type === 'event' && x.name === 'JobResultSubmitted') as never,
    args: { serviceId: chain.serviceId } as never,
    fromBlock: 0n,
    toBlock: 'latest',
  });
  const out = new Map<bigint, Array<{ operator: Address; output: Hex }>>();
  for (const l of logs as unknown as Array<{ args: { callId: bigint; operator: Address; output: Hex } }>) {
    const list = out.get(l.args.callId) ?? [];
    list.push({ operator: l.args.operator, output: l.args.output });
    out.set(l.args.callId, list);
  }
  return out;
}

/** Writes a plain dev key file (TEST_MODE keystore) for an operator. */
export async function writeDevKey(dir: string, account: TestAccount): Promise<string> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, 'operator-ecdsa.key');
  await writeFile(path, `${account.privateKey}\n`, { mode: 0o600 });
  return path;
}

/** The toy blueprint's definition: 16 jobs taking and giving any bytes, one stand-in source. */
export function toyDefinition(manager: Address): BlueprintDefinition {
  return defineBlueprint({
    metadataUri: 'toy://blueprint',
    manager,
    metadata: { name: 'toy' },
    jobs: Array.from({ length: 16 }, (_, i) =>
      defineJob({
        name: `job${i}`,
        description: 'any input',
        params: [{ type: 'bytes' }],
        result: [{ type: 'bytes' }],
      }),
    ),
    sources: [containerSource({ registry: 'local', image: 'toy', tag: 'test', sha256: 'ab'.repeat(32) })],
  });
}
