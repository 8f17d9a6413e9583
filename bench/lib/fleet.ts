// The fleet bench's set-up, through the protocol as operators on separate hosts would do it: each
// operator key (anvil's dev accounts 5+, which the devnet's roles leave unused) stakes and
// registers on the cloud blueprint with its capacity and API address using the operator program's
// own role commands (`agent-sandbox-operator stake`, `register --capacity N --rpc-address URL`);
// the service owner requests one cloud service naming all of them; each approves it with
// `requests approve`. Also: the chain facts the bench checks (who each create was assigned to,
// every result of each call, results the blueprint ignored).
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { agentSandboxBlueprintAbi, iTangleAbi } from '@agent-sandbox/contracts';
import { DEVNET_MNEMONIC, type StartedDevnet } from '@agent-sandbox/devnet';
import { requestService, waitForServiceActivation } from '@agent-sandbox/sdk';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  erc20Abi,
  type Hex,
  http,
  type PublicClient,
  parseAbi,
  parseEther,
  toHex,
} from 'viem';
import { mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';
import { freePort, ROOT } from './operators.ts';

const exec = promisify(execFile);
const BUNDLE = join(ROOT, 'blueprint-bin', 'dist', 'main.mjs');

export interface FleetMember {
  name: string;
  privateKey: Hex;
  address: Address;
  capacity: number;
  port: number;
}

/** Anvil's dev key at `index` (the devnet funds accounts 0–9 and uses 0–4 for its roles). */
export function devKey(index: number): Hex {
  return toHex(mnemonicToAccount(DEVNET_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!);
}

/** The operator program's role command `args`, as that operator on its own host would run it. */
async function operatorCommand(
  info: StartedDevnet['info'],
  work: string,
  m: FleetMember,
  args: string[],
): Promise<unknown> {
  const keyFile = join(work, `${m.name}-role.key`);
  writeFileSync(keyFile, `${m.privateKey}\n`, { mode: 0o600 });
  const { stdout } = await exec(process.execPath, [BUNDLE, ...args], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: work,
      HTTP_RPC_URL: info.rpcUrl,
      TANGLE_CONTRACT: info.contracts.tangle,
      STAKING_CONTRACT: info.contracts.staking,
      BLUEPRINT_ID: `${info.blueprints.cloud}`,
      KEYSTORE_URI: keyFile,
      // The directory its `run` uses (register reads the same configuration).
      DATA_DIR: join(work, m.name),
      TEST_MODE: 'true',
    },
    // A set-up step, not a figure: bounded only against a hung command (one start of the bundle
    // took over 2 minutes at load 100 on the shared 2 cores).
    timeout: 600_000,
  }).catch((e: { stdout?: string; stderr?: string; message: string; killed?: boolean }) => {
    const why = e.killed ? 'did not finish in 10 minutes' : e.stderr || e.message;
    throw new Error(`agent-sandbox-operator ${args.join(' ')} (${m.name}) failed: ${why}`);
  });
  const last = stdout.trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(last);
  } catch {
    return last;
  }
}

/**
 * Stakes and registers each member on the cloud blueprint with its capacity (the role commands),
 * then the service owner requests one cloud service of all of them and each approves it.
 */
export async function setUpFleet(
  info: StartedDevnet['info'],
  work: string,
  members: Array<{ name: string; keyIndex: number; capacity: number }>,
  log: (l: string) => void,
): Promise<{ serviceId: bigint; members: FleetMember[] }> {
  const out: FleetMember[] = [];
  for (const m of members) {
    const privateKey = devKey(m.keyIndex);
    out.push({
      name: m.name,
      privateKey,
      address: privateKeyToAccount(privateKey).address,
      capacity: m.capacity,
      port: await freePort(),
    });
  }
  await fundBond(info, out, log);
  // One after the other: on two shared cores four bundles starting at once only slow each other.
  for (const m of out) {
    await operatorCommand(info, work, m, ['stake', '--amount', '1', '--json']);
    await operatorCommand(info, work, m, [
      'register',
      '--capacity',
      `${m.capacity}`,
      '--rpc-address',
      `http://127.0.0.1:${m.port}`,
    ]);
  }
  log(`staked and registered ${out.map((m) => `${m.name} (capacity ${m.capacity})`).join(', ')}`);
  const owner = privateKeyToAccount(info.accounts.serviceOwner.privateKey);
  const ctx = { rpcUrl: info.rpcUrl, account: owner, pollingIntervalMs: 20 };
  const req = await requestService(ctx, info.contracts.tangle as Address, {
    blueprintId: BigInt(info.blueprints.cloud),
    operators: out.map((m) => m.address),
    config: '0x',
    permittedCallers: [info.accounts.user.address],
  });
  for (const m of out) {
    await operatorCommand(info, work, m, ['requests', 'approve', `${req.requestId}`, '--json']);
  }
  const act = await waitForServiceActivation(ctx, info.contracts.tangle as Address, req.requestId, {
    timeoutMs: 60_000,
    fromBlock: req.blockNumber,
  });
  log(`cloud service ${act.serviceId} active with ${out.length} operator(s) (requested, each approved)`);
  return { serviceId: act.serviceId, members: out };
}

/**
 * Gives each member the stake it bonds: the staking contract bonds in an ERC20 (the devnet's
 * LocalBondToken, as tnt-core's LocalTestnet bonds in TNT) and the devnet mints it only to its own
 * two operators, so the deployer hands each fleet member 10 tokens, as a member on a real network
 * would have bought or been sent its bond. Nothing when the staking contract bonds in the native coin.
 */
async function fundBond(info: StartedDevnet['info'], members: FleetMember[], log: (l: string) => void) {
  const staking = info.contracts.staking;
  if (!staking) return;
  const pub = createPublicClient({ transport: http(info.rpcUrl) });
  const token = await pub
    .readContract({
      address: staking,
      abi: parseAbi(['function operatorBondToken() view returns (address)']),
      functionName: 'operatorBondToken',
    })
    .catch(() => undefined);
  if (!token || /^0x0+$/.test(token)) return;
  const deployer = privateKeyToAccount(info.accounts.deployer.privateKey);
  const wallet = createWalletClient({ account: deployer, transport: http(info.rpcUrl) });
  for (const m of members) {
    const hash = await wallet.writeContract({
      address: token,
      abi: erc20Abi,
      functionName: 'transfer',
      args: [m.address, parseEther('10')],
      chain: null,
    });
    const r = await pub.waitForTransactionReceipt({ hash });
    if (r.status !== 'success') throw new Error(`bond token transfer to ${m.name} reverted (tx ${hash})`);
  }
  log(`sent each fleet member 10 bond tokens (${token}) from the deployer`);
}

/** Per call of `serviceId` since `fromBlock`: its assigned operator, its results, ignored results. */
export async function callFacts(
  pub: PublicClient,
  info: StartedDevnet['info'],
  serviceId: bigint,
  fromBlock: bigint,
): Promise<{
  assigned: Map<bigint, Address>;
  results: Map<bigint, Array<{ operator: Address; output: Hex }>>;
  ignored: number;
}> {
  const assigned = new Map<bigint, Address>();
  for (const l of await pub.getContractEvents({
    address: info.contracts.cloud as Address,
    abi: agentSandboxBlueprintAbi,
    eventName: 'OperatorAssigned',
    args: { serviceId },
    fromBlock,
  }))
    assigned.set(l.args.callId!, l.args.operator!);
  const results = new Map<bigint, Array<{ operator: Address; output: Hex }>>();
  for (const l of await pub.getContractEvents({
    address: info.contracts.tangle as Address,
    abi: iTangleAbi,
    eventName: 'JobResultSubmitted',
    args: { serviceId },
    fromBlock,
  })) {
    const list = results.get(l.args.callId!) ?? [];
    list.push({ operator: l.args.operator!, output: l.args.output! });
    results.set(l.args.callId!, list);
  }
  const ignored = (
    await pub.getContractEvents({
      address: info.contracts.cloud as Address,
      abi: agentSandboxBlueprintAbi,
      eventName: 'ResultIgnored',
      args: { serviceId },
      fromBlock,
    })
  ).length;
  return { assigned, results, ignored };
}

/**
 * The tolerance of one operator's count: n creates held until the end draw n slots without
 * replacement from the fleet's N free slots (each pick is weighted by free capacity, i.e. a
 * uniform free slot, and the slot stays reserved), so an operator with K slots gets a
 * hypergeometric count: mean n·K/N, variance n·(K/N)·(1−K/N)·(N−n)/(N−1). The tolerance is 3
 * standard deviations, rounded up (0 when n = N: then every operator is filled exactly).
 */
export function spreadTolerance(n: number, capacity: number, total: number): { mean: number; tol: number } {
  const p = capacity / total;
  const variance = total > 1 ? (n * p * (1 - p) * (total - n)) / (total - 1) : 0;
  return { mean: n * p, tol: Math.ceil(3 * Math.sqrt(Math.max(0, variance)) - 1e-9) };
}
