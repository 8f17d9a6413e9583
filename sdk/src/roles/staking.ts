// Operator staking in Tangle's MultiAssetDelegation: the self-stake that makes an operator active,
// which Tangle's registerOperator for a blueprint requires.
import { iMultiAssetDelegationAbi } from '@agent-sandbox/contracts';
import { type Abi, type Address, erc20Abi, type Hex, zeroAddress } from 'viem';
import { SdkError } from '../errors.ts';
import { type ChainContext, publicClient, sendCall } from './tx.ts';

export interface StakeStatus {
  operator: Address;
  isOperator: boolean;
  active: boolean;
  stake: bigint;
  minOperatorStake: bigint;
  /** Zero: native stake (registerOperator with value); else the ERC20 the bond must be in. */
  bondToken: Address;
  /** Decimals of the bond (18 for native; the token's `decimals()`, e.g. TNT's 18, USDC's 6). */
  bondDecimals: number;
}

export async function stakeStatus(
  ctx: ChainContext,
  staking: Address,
  operator: Address,
): Promise<StakeStatus> {
  const pub = publicClient(ctx);
  const read = <T>(functionName: string, args: readonly unknown[] = []) =>
    pub.readContract({
      address: staking,
      abi: iMultiAssetDelegationAbi as Abi,
      functionName,
      args,
    }) as Promise<T>;
  try {
    const [isOperator, active, stake, minOperatorStake, bondToken] = await Promise.all([
      read<boolean>('isOperator', [operator]),
      read<boolean>('isOperatorActive', [operator]),
      read<bigint>('getOperatorStake', [operator]),
      read<bigint>('minOperatorStake'),
      read<Address>('operatorBondToken').catch(() => zeroAddress),
    ]);
    const bondDecimals =
      bondToken === zeroAddress
        ? 18
        : await pub.readContract({ address: bondToken, abi: erc20Abi, functionName: 'decimals' });
    return { operator, isOperator, active, stake, minOperatorStake, bondToken, bondDecimals };
  } catch (e) {
    throw new SdkError(
      'RPC',
      `Cannot read the staking contract at ${staking}: check STAKING_CONTRACT and the RPC URL.`,
      {
        cause: e,
      },
    );
  }
}

export interface StakeResult extends StakeStatus {
  action: 'registered' | 'increased' | 'none';
  txHashes: Hex[];
}

/**
 * Makes the signer an active operator with `amount` of self-stake: registerOperator (first time)
 * or increaseStake (already an operator). A non-zero bond token is approved first and staked with
 * the *WithAsset calls. `amount` 0 only reports the status.
 */
export async function stakeOperator(
  ctx: ChainContext,
  staking: Address,
  amount: bigint,
): Promise<StakeResult> {
  if (!ctx.account) throw new SdkError('TX', 'staking needs a signing key.');
  const me = ctx.account.address;
  const before = await stakeStatus(ctx, staking, me);
  const txHashes: Hex[] = [];
  if (amount === 0n) return { ...before, action: 'none', txHashes };
  if (!before.isOperator && amount < before.minOperatorStake) {
    throw new SdkError(
      'TX',
      `a first stake must be at least minOperatorStake (${before.minOperatorStake} wei${before.bondToken === zeroAddress ? '' : ` of ${before.bondToken}`}); asked ${amount}.`,
    );
  }
  const mad = iMultiAssetDelegationAbi as Abi;
  if (before.bondToken !== zeroAddress) {
    const r = await sendCall(ctx, {
      label: `approve ${amount} of ${before.bondToken} to the staking contract`,
      address: before.bondToken,
      abi: erc20Abi as Abi,
      functionName: 'approve',
      args: [staking, amount],
    });
    txHashes.push(r.transactionHash);
  }
  const native = before.bondToken === zeroAddress;
  const fn = before.isOperator
    ? native
      ? 'increaseStake'
      : 'increaseStakeWithAsset'
    : native
      ? 'registerOperator'
      : 'registerOperatorWithAsset';
  const r = await sendCall(ctx, {
    label: `${fn} (${amount}${native ? ' wei' : ''})`,
    address: staking,
    abi: mad,
    functionName: fn,
    args: native ? [] : [before.bondToken, amount],
    value: native ? amount : undefined,
  });
  txHashes.push(r.transactionHash);
  const after = await stakeStatus(ctx, staking, me);
  return { ...after, action: before.isOperator ? 'increased' : 'registered', txHashes };
}
