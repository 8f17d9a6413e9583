// The role tools name every refusal: a bond-token transfer inside MultiAssetDelegation reverts
// with the token's own ERC-6093 error (found on tnt-core's LocalTestnet, whose bond token is TNT:
// `stake` said "reverted without a reason"); an error nobody knows is shown by its selector.
import { ContractFunctionRevertedError, encodeErrorResult, parseAbi } from 'viem';
import { describe, expect, it } from 'vitest';
import { describeRevert } from './tx.ts';

const revert = (data: `0x${string}`) =>
  new ContractFunctionRevertedError({ abi: [], data, functionName: 'registerOperatorWithAsset' });

describe('describeRevert', () => {
  it('names the bond token’s ERC20InsufficientBalance / ERC20InsufficientAllowance', () => {
    const abi = parseAbi([
      'error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed)',
      'error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed)',
    ]);
    const who = '0x5eb15C0992734B5e77c888D713b4FC67b3D679A2';
    const bal = encodeErrorResult({ abi, errorName: 'ERC20InsufficientBalance', args: [who, 0n, 1n] });
    expect(describeRevert(revert(bal))).toBe(`ERC20InsufficientBalance(${who}, 0, 1)`);
    const allow = encodeErrorResult({ abi, errorName: 'ERC20InsufficientAllowance', args: [who, 0n, 5n] });
    expect(describeRevert(revert(allow))).toBe(`ERC20InsufficientAllowance(${who}, 0, 5)`);
  });

  it('shows an unknown error by its selector, never “without a reason”', () => {
    expect(describeRevert(revert('0x12345678'))).toBe('an unknown error 0x12345678');
  });
});
