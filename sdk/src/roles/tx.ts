// One contract transaction for the role tools: simulate (so a refusal fails before anything is
// sent, with the contract's named error), send, wait for the receipt. Reverts wrapped by Tangle's
// `ManagerReverted(manager, reason)` are unwrapped with the ABIs the caller knows.
import { iMultiAssetDelegationAbi, iTangleAbi, iTangleLifecycleAbi } from '@agent-sandbox/contracts';
import {
  type Abi,
  type Account,
  type Address,
  BaseError,
  type Chain,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  decodeErrorResult,
  encodeDeployData,
  type Hex,
  http,
  type PublicClient,
  type TransactionReceipt,
} from 'viem';
import { SdkError } from '../errors.ts';

export interface ChainContext {
  rpcUrl: string;
  /** The signer; only writes need it. */
  account?: Account | undefined;
  /** Extra ABIs whose errors a revert may carry (e.g. the blueprint manager's). */
  errorAbis?: readonly Abi[] | undefined;
  /** One line per step ("sending …", "mined in block …"). */
  progress?: ((line: string) => void) | undefined;
  /** Receipt/poll interval; small on a local chain. */
  pollingIntervalMs?: number | undefined;
}

const ERROR_ABIS: readonly Abi[] = [
  iTangleLifecycleAbi as Abi,
  iTangleAbi as Abi,
  iMultiAssetDelegationAbi as Abi,
];

export function publicClient(ctx: ChainContext): PublicClient {
  return createPublicClient({
    transport: http(ctx.rpcUrl),
    pollingInterval: ctx.pollingIntervalMs ?? 1000,
  }) as PublicClient;
}

async function chainOf(pub: PublicClient, rpcUrl: string): Promise<Chain> {
  const id = await pub.getChainId();
  return {
    id,
    name: `chain ${id}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  };
}

/** "Name(arg, …)" of a revert, unwrapping ManagerReverted with the known ABIs; undefined if none. */
export function describeRevert(e: unknown, extra: readonly Abi[] = []): string | undefined {
  if (!(e instanceof BaseError)) return undefined;
  const r = e.walk((x) => x instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
  if (!r) return undefined;
  const abis = [...extra, ...ERROR_ABIS];
  const decode = (data: Hex | undefined): string | undefined => {
    if (!data || data === '0x') return undefined;
    for (const abi of abis) {
      try {
        const d = decodeErrorResult({ abi, data });
        if (d.errorName === 'ManagerReverted') {
          const inner = decode((d.args as readonly unknown[])[1] as Hex);
          return `ManagerReverted(${(d.args as readonly unknown[])[0]}: ${inner ?? 'no reason'})`;
        }
        return `${d.errorName}(${(d.args ?? []).map((a) => String(a)).join(', ')})`;
      } catch {}
    }
    return undefined;
  };
  const raw = (r as unknown as { raw?: Hex }).raw;
  if (r.data) {
    if (r.data.errorName === 'ManagerReverted') return decode(raw) ?? 'ManagerReverted';
    return `${r.data.errorName}(${(r.data.args ?? []).map((a) => String(a)).join(', ')})`;
  }
  if (raw && raw.length >= 10 && !r.reason) return decode(raw) ?? `an unknown error ${raw.slice(0, 10)}`;
  return decode(raw) ?? r.reason ?? 'reverted without a reason';
}

export interface CallSpec {
  label: string;
  address: Address;
  abi: Abi;
  functionName: string;
  args: readonly unknown[];
  value?: bigint | undefined;
}

/** Simulates, sends and waits for one call; a refusal throws SdkError('TX') naming the error. */
export async function sendCall(ctx: ChainContext, spec: CallSpec): Promise<TransactionReceipt> {
  const account = requireAccount(ctx, spec.label);
  const pub = publicClient(ctx);
  const abi = [...spec.abi, ...ERROR_ABIS.flatMap((a) => a.filter((i) => i.type === 'error'))] as Abi;
  let request: unknown;
  try {
    ({ request } = await pub.simulateContract({
      account,
      address: spec.address,
      abi,
      functionName: spec.functionName,
      args: spec.args,
      value: spec.value,
    } as never));
  } catch (e) {
    throw refused(spec.label, e, ctx.errorAbis);
  }
  const wallet = createWalletClient({
    account,
    chain: await chainOf(pub, ctx.rpcUrl),
    transport: http(ctx.rpcUrl),
  });
  ctx.progress?.(`${spec.label}: sending from ${account.address}`);
  const hash = await wallet.writeContract(request as never);
  return waitMined(ctx, pub, spec.label, hash);
}

/** Deploys a contract from forge's output; returns its address. */
export async function deployContract(
  ctx: ChainContext,
  spec: { label: string; abi: Abi; bytecode: Hex; args: readonly unknown[] },
): Promise<{ address: Address; txHash: Hex }> {
  const account = requireAccount(ctx, spec.label);
  const pub = publicClient(ctx);
  const data = encodeDeployData({ abi: spec.abi, bytecode: spec.bytecode, args: spec.args });
  try {
    await pub.estimateGas({ account, data });
  } catch (e) {
    throw refused(spec.label, e, ctx.errorAbis);
  }
  const wallet = createWalletClient({
    account,
    chain: await chainOf(pub, ctx.rpcUrl),
    transport: http(ctx.rpcUrl),
  });
  ctx.progress?.(`${spec.label}: deploying from ${account.address}`);
  const hash = await wallet.sendTransaction({ data, account, chain: undefined } as never);
  const receipt = await waitMined(ctx, pub, spec.label, hash);
  if (!receipt.contractAddress)
    throw new SdkError('TX', `${spec.label}: the receipt names no contract address (tx ${hash}).`);
  return { address: receipt.contractAddress, txHash: hash };
}

async function waitMined(ctx: ChainContext, pub: PublicClient, label: string, hash: Hex) {
  const receipt = await pub.waitForTransactionReceipt({
    hash,
    pollingInterval: ctx.pollingIntervalMs ?? 1000,
    timeout: 300_000,
  });
  if (receipt.status !== 'success') {
    throw new SdkError('TX', `${label} reverted on chain (tx ${hash}).`, { details: { txHash: hash } });
  }
  ctx.progress?.(`${label}: mined in block ${receipt.blockNumber} (tx ${hash})`);
  return receipt;
}

function requireAccount(ctx: ChainContext, label: string): Account {
  if (!ctx.account) throw new SdkError('TX', `${label} needs a signing key.`);
  return ctx.account;
}

function refused(label: string, e: unknown, extra: readonly Abi[] | undefined): SdkError {
  const why = describeRevert(e, extra ?? []);
  const short = e instanceof BaseError ? e.shortMessage : String((e as Error)?.message ?? e);
  return new SdkError('TX', `${label} would fail: ${why ?? short}`, {
    cause: e,
    details: { reason: why ?? short },
  });
}
