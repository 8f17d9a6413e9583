// Deploys the devnet's contracts with forge's output and sets up blueprints, operators and services.

import { agentSandboxDefinition, type BlueprintMode } from '@agent-sandbox/blueprint-lib/definition';
import {
  agentSandboxBlueprintAbi,
  agentSandboxBlueprintBytecode,
  blueprintServiceManagerBaseAbi,
  blueprintServiceManagerBaseBytecode,
  localTangleAbi,
  localTangleBytecode,
} from '@agent-sandbox/contracts';
import { type BlueprintDefinition, containerSource, defineBlueprint, defineJob } from '@agent-sandbox/sdk';
import {
  type Abi,
  type Address,
  type Chain,
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeAbiParameters,
  encodeDeployData,
  encodeFunctionData,
  getContractAddress,
  type Hex,
  http,
  type PublicClient,
  parseEventLogs,
  type TransactionReceipt,
} from 'viem';
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { type DevnetAccount, type DevnetRole, devnetAccounts, uncompressedPublicKey } from './accounts.ts';
import { DEVNET_CHAIN_ID } from './anvil.ts';
import { DevnetError } from './errors.ts';
import { encodeSandboxCreateRequest, sampleSandboxCreateRequest } from './job-encoding.ts';
import { DEVNET_KINDS, type DevnetInfo, type DevnetKind } from './state.ts';

/** Capacity each operator declares at registration (`abi.encode(uint32 capacity)`). */
const CAPACITY: Record<'operator1' | 'operator2', number> = { operator1: 100, operator2: 50 };
/** The operator API address each operator announces; nothing listens there until an operator runs. */
const OPERATOR_RPC: Record<'operator1' | 'operator2', string> = {
  operator1: 'http://127.0.0.1:9090',
  operator2: 'http://127.0.0.1:9091',
};
/**
 * The sandbox image as the devnet's blueprints name it. Each devnet operator builds the image
 * itself (content-hash tagged), so there is no registry digest: the sha256 names the devnet's
 * stand-in image, not a pullable one (a real deployment passes the image's digest).
 */
const DEVNET_IMAGE = {
  registry: 'local',
  image: 'agent-sandbox',
  tag: 'devnet',
  sha256: '5d5a3c6f2e0b4f1f9a7e3c2d1b0a99887766554433221100ffeeddccbbaa0001',
};
const MODE: Record<Exclude<DevnetKind, 'toy'>, BlueprintMode> = {
  cloud: 'cloud',
  instance: 'instance',
  teeInstance: 'tee-instance',
};

/** The definition each devnet blueprint is created with: ours for the three managers, a toy one. */
export function devnetDefinition(kind: DevnetKind, manager: Address): BlueprintDefinition {
  if (kind !== 'toy') return agentSandboxDefinition({ manager, mode: MODE[kind], image: DEVNET_IMAGE });
  return defineBlueprint({
    metadataUri: 'devnet://agent-sandbox/toy',
    manager,
    metadata: { name: 'toy', description: 'accepts any job of its 16 and any input' },
    jobs: Array.from({ length: 16 }, (_, i) =>
      defineJob({
        name: `job${i}`,
        description: 'any input',
        params: [{ type: 'bytes' }],
        result: [{ type: 'bytes' }],
      }),
    ),
    sources: [containerSource({ ...DEVNET_IMAGE, image: 'toy' })],
  });
}

/** Tangle's confidentiality policy per service: TEE instance asks for TEE (1), the rest any (0). */
const CONFIDENTIALITY: Record<DevnetKind, number> = { cloud: 0, instance: 0, teeInstance: 1, toy: 0 };

/** One transaction to send: a contract deployment or a call, from one of the named accounts. */
type Tx =
  | { label: string; from: DevnetRole; deploy: { abi: Abi; bytecode: Hex; args: readonly unknown[] } }
  | {
      label: string;
      from: DevnetRole;
      to: Address;
      abi: Abi;
      functionName: string;
      args: readonly unknown[];
    };

/** Deploys everything on the anvil at `rpcUrl` and returns the devnet's description. */
export async function deployDevnet(
  rpcUrl: string,
  wsUrl: string,
  log: (l: string) => void,
): Promise<DevnetInfo> {
  const t0 = Date.now();
  requireArtifacts();
  const accounts = devnetAccounts();
  const chain = devnetChain(rpcUrl);
  const pub = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 20 }) as PublicClient;
  const sender = new TxSender(rpcUrl, chain, pub, accounts);
  const deployer = accounts.deployer.address;
  const ops = [accounts.operator1.address, accounts.operator2.address];

  // 1. contracts: addresses follow from the deployer's nonces, so later phases need no receipts.
  const base = await pub.getTransactionCount({ address: deployer, blockTag: 'pending' });
  const at = (i: number) => getContractAddress({ from: deployer, nonce: BigInt(base + i) });
  const contracts = { tangle: at(0), cloud: at(1), instance: at(2), teeInstance: at(3), toy: at(4) };
  const blueprintAbi = agentSandboxBlueprintAbi as Abi;
  const bp = (instance: boolean, tee: boolean) => ({
    abi: blueprintAbi,
    bytecode: agentSandboxBlueprintBytecode,
    args: [instance, tee],
  });
  await sender.phase([
    {
      label: 'LocalTangle',
      from: 'deployer',
      deploy: { abi: localTangleAbi as Abi, bytecode: localTangleBytecode, args: [] },
    },
    { label: 'AgentSandboxBlueprint (cloud)', from: 'deployer', deploy: bp(false, false) },
    { label: 'AgentSandboxBlueprint (instance)', from: 'deployer', deploy: bp(true, false) },
    { label: 'AgentSandboxBlueprint (TEE instance)', from: 'deployer', deploy: bp(true, true) },
    {
      label: 'BlueprintServiceManagerBase (toy)',
      from: 'deployer',
      deploy: {
        abi: blueprintServiceManagerBaseAbi as Abi,
        bytecode: blueprintServiceManagerBaseBytecode,
        args: [],
      },
    },
  ]);
  log(`deployed 5 contracts (LocalTangle at ${contracts.tangle})`);

  // 2. blueprints, one per manager, owned by the deployer.
  const tangle = (label: string, from: DevnetRole, functionName: string, args: readonly unknown[]): Tx => ({
    label,
    from,
    to: contracts.tangle,
    abi: localTangleAbi as Abi,
    functionName,
    args,
  });
  const created = await sender.phase(
    DEVNET_KINDS.map((k) =>
      tangle(`createBlueprint(${k})`, 'deployer', 'createBlueprint', [devnetDefinition(k, contracts[k])]),
    ),
  );
  const blueprints = idsByManager(created, 'BlueprintCreated', contracts, (a) => ({
    manager: a.manager as Address,
    id: a.blueprintId as bigint,
  }));
  log(`created blueprints ${DEVNET_KINDS.map((k) => `${k}=${blueprints[k]}`).join(' ')}`);

  // 3. both operators on every blueprint, with their real public keys and a capacity.
  await sender.phase(
    (['operator1', 'operator2'] as const).flatMap((op) =>
      DEVNET_KINDS.map((k) =>
        tangle(`registerOperator(${k}, ${op})`, op, 'registerOperator', [
          BigInt(blueprints[k]),
          uncompressedPublicKey(accounts[op].privateKey),
          OPERATOR_RPC[op],
          encodeAbiParameters([{ type: 'uint32' }], [CAPACITY[op]]),
        ]),
      ),
    ),
  );
  log('registered operator1 (capacity 100) and operator2 (capacity 50) on every blueprint');

  // 4. one service request per blueprint; instance services carry their sandbox spec as config.
  const config = (k: DevnetKind): Hex => {
    if (k === 'instance')
      return encodeSandboxCreateRequest(sampleSandboxCreateRequest({ name: 'devnet-instance' }));
    if (k === 'teeInstance') {
      return encodeSandboxCreateRequest(
        sampleSandboxCreateRequest({ name: 'devnet-tee-instance', tee_required: true, tee_type: 1 }),
      );
    }
    return '0x';
  };
  const callers = [accounts.serviceOwner.address, accounts.user.address];
  const requested = await sender.phase(
    DEVNET_KINDS.map((k) =>
      tangle(`requestService(${k})`, 'serviceOwner', 'requestService', [
        BigInt(blueprints[k]),
        ops,
        config(k),
        callers,
        0n,
        '0x0000000000000000000000000000000000000000',
        0n,
        CONFIDENTIALITY[k],
      ]),
    ),
  );
  const requestIds = requested.map((r) => {
    const [ev] = parseEventLogs({ abi: localTangleAbi, eventName: 'ServiceRequested', logs: r.logs });
    if (!ev) throw new DevnetError('DEPLOY_FAILED', 'requestService emitted no ServiceRequested');
    return ev.args.requestId;
  });

  // 5. both operators approve every request. Two phases, not one: the second approval activates
  // the service (and runs onServiceInitialized), so it must be estimated after the first is mined.
  const approve = (op: 'operator1' | 'operator2') =>
    requestIds.map((requestId, i) =>
      tangle(`approveService(${DEVNET_KINDS[i]}, ${op})`, op, 'approveService', [
        {
          requestId,
          securityCommitments: [],
          blsPubkey: [0n, 0n, 0n, 0n],
          blsPopSignature: [0n, 0n],
          teeCommitments: [],
        },
      ]),
    );
  await sender.phase(approve('operator1'));
  const approved = await sender.phase(approve('operator2'));
  const activated = approved.flatMap((r) =>
    parseEventLogs({ abi: localTangleAbi, eventName: 'ServiceActivated', logs: r.logs }),
  );
  const services = {} as Record<DevnetKind, number>;
  DEVNET_KINDS.forEach((k, i) => {
    const ev = activated.find((e) => e.args.requestId === requestIds[i]);
    if (!ev) throw new DevnetError('DEPLOY_FAILED', `the ${k} service did not activate after both approvals`);
    services[k] = Number(ev.args.serviceId);
  });
  log(
    `activated services ${DEVNET_KINDS.map((k) => `${k}=${services[k]}`).join(' ')} in ${Date.now() - t0} ms`,
  );

  return {
    chainId: DEVNET_CHAIN_ID,
    rpcUrl,
    wsUrl,
    startedAt: new Date().toISOString(),
    contracts,
    blueprints,
    services,
    accounts,
  };
}

/** Fails clearly when forge's output is missing (not built yet, or being regenerated right now). */
function requireArtifacts(): void {
  const artifacts: Record<string, unknown> = {
    localTangleAbi,
    localTangleBytecode,
    agentSandboxBlueprintAbi,
    agentSandboxBlueprintBytecode,
    blueprintServiceManagerBaseAbi,
    blueprintServiceManagerBaseBytecode,
  };
  const missing = Object.entries(artifacts)
    .filter(([, v]) => v === undefined || v === '0x')
    .map(([k]) => k);
  if (missing.length > 0) {
    throw new DevnetError(
      'CONTRACTS_MISSING',
      `contract artifacts missing (${missing.join(', ')}): run \`node scripts/contracts-build.mjs\` first`,
    );
  }
}

/** viem's chain object for the devnet at `rpcUrl` (anvil's 31337, ether as currency). */
export function devnetChain(rpcUrl: string): Chain {
  return defineChain({ ...foundry, rpcUrls: { default: { http: [rpcUrl] } } });
}

/** Maps each kind to the id an event names next to that kind's manager contract. */
function idsByManager(
  receipts: TransactionReceipt[],
  eventName: 'BlueprintCreated',
  contracts: Record<DevnetKind | 'tangle', Address>,
  pick: (args: Record<string, unknown>) => { manager: Address; id: bigint },
): Record<DevnetKind, number> {
  const found = receipts
    .flatMap((r) => parseEventLogs({ abi: localTangleAbi, eventName, logs: r.logs }))
    .map((e) => pick(e.args as Record<string, unknown>));
  const out = {} as Record<DevnetKind, number>;
  for (const k of DEVNET_KINDS) {
    const hit = found.find((f) => f.manager.toLowerCase() === contracts[k].toLowerCase());
    if (!hit) throw new DevnetError('DEPLOY_FAILED', `no ${eventName} event for the ${k} manager`);
    out[k] = Number(hit.id);
  }
  return out;
}

/**
 * Sends phases of transactions: within a phase every transaction goes out at once (each account's
 * nonces assigned locally, in order), then the phase waits for all receipts. Gas is estimated
 * first, so a refusal fails here with the contract's decoded error instead of a mined revert.
 */
class TxSender {
  private readonly nonces = new Map<DevnetRole, number>();
  private readonly signers: Record<DevnetRole, PrivateKeyAccount>;
  constructor(
    private readonly rpcUrl: string,
    private readonly chain: Chain,
    private readonly pub: PublicClient,
    accounts: Record<DevnetRole, DevnetAccount>,
  ) {
    this.signers = Object.fromEntries(
      Object.entries(accounts).map(([role, a]) => [role, privateKeyToAccount(a.privateKey)]),
    ) as Record<DevnetRole, PrivateKeyAccount>;
  }

  async phase(txs: Tx[]): Promise<TransactionReceipt[]> {
    const roles = [...new Set(txs.map((t) => t.from))].filter((r) => !this.nonces.has(r));
    await Promise.all(
      roles.map(async (r) => {
        const address = this.signers[r].address;
        this.nonces.set(r, await this.pub.getTransactionCount({ address, blockTag: 'pending' }));
      }),
    );
    const nonces = txs.map((t) => {
      const n = this.nonces.get(t.from) ?? 0;
      this.nonces.set(t.from, n + 1);
      return n;
    });
    // Estimate everything first, against the state the previous phase left.
    const prepared = await Promise.all(txs.map((tx, i) => this.prepare(tx, nonces[i] ?? 0)));
    const hashes = await Promise.all(prepared.map((p) => p.send()));
    const receipts = await Promise.all(
      hashes.map((hash) =>
        this.pub.waitForTransactionReceipt({ hash, pollingInterval: 20, timeout: 30_000 }),
      ),
    );
    receipts.forEach((r, i) => {
      if (r.status !== 'success') {
        throw new DevnetError(
          'DEPLOY_FAILED',
          `${txs[i]?.label} reverted on chain (tx ${r.transactionHash})`,
        );
      }
      // A best-effort hook that failed leaves the manager half set up (e.g. no service config).
      const [failed] = parseEventLogs({ abi: localTangleAbi, eventName: 'ManagerHookFailed', logs: r.logs });
      if (failed) {
        throw new DevnetError(
          'DEPLOY_FAILED',
          `${txs[i]?.label}: the manager's hook ${failed.args.selector} failed (${failed.args.returnData})`,
        );
      }
    });
    return receipts;
  }

  private async prepare(tx: Tx, nonce: number): Promise<{ send: () => Promise<Hex> }> {
    const account = this.signers[tx.from];
    let data: Hex;
    let gas: bigint;
    try {
      if ('deploy' in tx) {
        data = encodeDeployData({ abi: tx.deploy.abi, bytecode: tx.deploy.bytecode, args: tx.deploy.args });
        gas = await this.pub.estimateGas({ account: account.address, data });
      } else {
        data = encodeFunctionData({ abi: tx.abi, functionName: tx.functionName, args: tx.args });
        gas = await this.pub.estimateContractGas({
          account: account.address,
          address: tx.to,
          abi: tx.abi,
          functionName: tx.functionName,
          args: tx.args,
        });
      }
    } catch (err) {
      const why = (err as { shortMessage?: string }).shortMessage ?? String(err);
      throw new DevnetError('DEPLOY_FAILED', `${tx.label} would fail: ${why}`, { cause: err });
    }
    const wallet = createWalletClient({ account, chain: this.chain, transport: http(this.rpcUrl) });
    const to = 'deploy' in tx ? undefined : tx.to;
    // The estimate as the limit, no margin: Tangle forwards 63/64 of the gas left to a hook, and
    // a starved hook leaves too little (1/64) to finish the call, so estimates land where the
    // hooks ran; a best-effort hook that failed anyway is caught from ManagerHookFailed below.
    return {
      send: () => wallet.sendTransaction({ to, data, gas, nonce, chain: this.chain }),
    };
  }
}
