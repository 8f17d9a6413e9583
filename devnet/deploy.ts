// Deploys the devnet: the protocol stand-ins (LocalTangle, LocalStaking bonding in LocalBondToken,
// as tnt-core's LocalTestnet bonds in TNT) from forge's output, then
// everything else with the role tools a real network would see (devnet/roles-setup.ts).
import {
  agentSandboxBlueprintAbi,
  agentSandboxBlueprintBytecode,
  blueprintServiceManagerBaseAbi,
  blueprintServiceManagerBaseBytecode,
  localBondTokenAbi,
  localBondTokenBytecode,
  localStakingAbi,
  localStakingBytecode,
  localTangleAbi,
  localTangleBytecode,
} from '@agent-sandbox/contracts';
import { deployContract } from '@agent-sandbox/sdk';
import {
  type Abi,
  type Address,
  type Chain,
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  parseEther,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { devnetAccounts } from './accounts.ts';
import { DEVNET_CHAIN_ID } from './anvil.ts';
import { DevnetError } from './errors.ts';
import { setUpWithRoleTools } from './roles-setup.ts';
import type { DevnetInfo } from './state.ts';

export { devnetDefinition } from './roles-setup.ts';

/** The devnet's minimum operator self-stake in LocalStaking (in its bond token, 18 decimals). */
export const DEVNET_MIN_STAKE = parseEther('1');
/** Bond tokens the deployer mints to itself and to each devnet operator. */
const BOND_SUPPLY = { deployer: parseEther('1000000'), operator: parseEther('1000') };

/** A Tangle already on the chain (the real-protocol mode): nothing of the protocol is deployed. */
export interface ExistingProtocol {
  tangle: Address;
  staking: Address;
  /** Written to devnet.json as `protocol`. */
  record: NonNullable<DevnetInfo['protocol']>;
}

/**
 * Deploys everything on the anvil at `rpcUrl` and returns the devnet's description: the stand-ins
 * (LocalStaking, LocalTangle) first, unless `existing` names a Tangle already there.
 */
export async function deployDevnet(
  rpcUrl: string,
  wsUrl: string,
  log: (l: string) => void,
  existing?: ExistingProtocol,
): Promise<DevnetInfo> {
  const t0 = Date.now();
  requireArtifacts();
  const accounts = devnetAccounts();
  const deployer = {
    rpcUrl,
    account: privateKeyToAccount(accounts.deployer.privateKey),
    pollingIntervalMs: 20,
  };
  try {
    let tangle: Address;
    let staking: Address;
    if (existing) {
      await requireCode(rpcUrl, { Tangle: existing.tangle, MultiAssetDelegation: existing.staking });
      tangle = existing.tangle;
      staking = existing.staking;
      log(`using the Tangle at ${tangle} and MultiAssetDelegation at ${staking} from the loaded state`);
    } else {
      // The protocol itself (a real network has it already): the operator bond token, the staking
      // contract and the core, which consults it when an operator registers, requests, approves
      // and reports; the staking contract asks the core for active services when one leaves.
      const bond = await deployContract(deployer, {
        label: 'LocalBondToken',
        abi: localBondTokenAbi as Abi,
        bytecode: localBondTokenBytecode,
        args: [],
      });
      staking = (
        await deployContract(deployer, {
          label: 'LocalStaking',
          abi: localStakingAbi as Abi,
          bytecode: localStakingBytecode,
          args: [DEVNET_MIN_STAKE, bond.address],
        })
      ).address;
      tangle = (
        await deployContract(deployer, {
          label: 'LocalTangle',
          abi: localTangleAbi as Abi,
          bytecode: localTangleBytecode,
          args: [staking],
        })
      ).address;
      await send(deployer, staking, localStakingAbi as Abi, 'setTangle', [tangle]);
      for (const [to, amount] of [
        [accounts.deployer.address, BOND_SUPPLY.deployer],
        [accounts.operator1.address, BOND_SUPPLY.operator],
        [accounts.operator2.address, BOND_SUPPLY.operator],
      ] as const)
        await send(deployer, bond.address, localBondTokenAbi as Abi, 'mint', [to, amount]);
      log(`deployed LocalTangle at ${tangle}, LocalStaking at ${staking} (bond token ${bond.address})`);
    }
    const set = await setUpWithRoleTools({ rpcUrl, tangle, staking, accounts, log });
    log(`devnet set up in ${Date.now() - t0} ms`);
    return {
      chainId: DEVNET_CHAIN_ID,
      rpcUrl,
      wsUrl,
      startedAt: new Date().toISOString(),
      contracts: { tangle, staking, ...set.contracts },
      blueprints: set.blueprints,
      services: set.services,
      accounts,
      ...(existing ? { protocol: existing.record } : {}),
    };
  } catch (err) {
    if (err instanceof DevnetError) throw err;
    throw new DevnetError('DEPLOY_FAILED', `devnet set-up failed: ${(err as Error).message}`, { cause: err });
  }
}

/** One mined call by the deployer (a reverted one throws). */
async function send(
  d: { rpcUrl: string; account: ReturnType<typeof privateKeyToAccount>; pollingIntervalMs: number },
  address: Address,
  abi: Abi,
  functionName: string,
  args: readonly unknown[],
): Promise<void> {
  const wallet = createWalletClient({ account: d.account, transport: http(d.rpcUrl) });
  const pub = createPublicClient({ transport: http(d.rpcUrl) });
  const hash = await wallet.writeContract({ address, abi, functionName, args, chain: null });
  const r = await pub.waitForTransactionReceipt({ hash, pollingInterval: d.pollingIntervalMs });
  if (r.status !== 'success') throw new Error(`${functionName} on ${address} reverted (tx ${hash})`);
}

/** Fails clearly when a contract the deployment JSON names has no code in the loaded state. */
async function requireCode(rpcUrl: string, contracts: Record<string, Address>): Promise<void> {
  const pub = createPublicClient({ transport: http(rpcUrl) });
  for (const [name, addr] of Object.entries(contracts)) {
    const code = await pub.getCode({ address: addr });
    if (!code || code === '0x') {
      throw new DevnetError(
        'STATE_INVALID',
        `the deployment JSON names ${name} at ${addr}, but the loaded anvil state has no code there: the two files do not belong together`,
      );
    }
  }
}

/** Fails clearly when forge's output is missing (not built yet, or being regenerated right now). */
function requireArtifacts(): void {
  const artifacts: Record<string, unknown> = {
    localTangleAbi,
    localTangleBytecode,
    localStakingBytecode,
    localBondTokenBytecode,
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
