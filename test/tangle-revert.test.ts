// The shared revert decoder (contracts/revert.ts) the CLI, the console and the operator use: a
// manager's refusal arrives from Tangle wrapped in ManagerReverted and must read by its name.
import {
  agentSandboxBlueprintAbi,
  decodeRevertData,
  describeRevert,
  iTangleAbi,
} from '@agent-sandbox/contracts';
import { ContractFunctionExecutionError, ContractFunctionRevertedError, encodeErrorResult } from 'viem';
import { describe, expect, it } from 'vitest';
import { chainError } from '../client/src/chain.ts';
import { refusal } from '../console/src/chain.ts';

const manager = '0x2e234DAe75C793f67A35089C9d99245E1C58470b';
const inner = encodeErrorResult({
  abi: agentSandboxBlueprintAbi,
  errorName: 'UnknownSandbox',
  args: ['nope'],
});
const wrapped = encodeErrorResult({ abi: iTangleAbi, errorName: 'ManagerReverted', args: [manager, inner] });

/** A viem error as simulateContract throws it for revert data `raw`, decoded against ITangle. */
function viemRevert(raw: `0x${string}`): ContractFunctionExecutionError {
  const cause = new ContractFunctionRevertedError({ abi: iTangleAbi, data: raw, functionName: 'submitJob' });
  return new ContractFunctionExecutionError(cause, { abi: iTangleAbi, functionName: 'submitJob', args: [] });
}

describe('Tangle revert decoding', () => {
  it('unwraps ManagerReverted to the manager’s own error', () => {
    const d = decodeRevertData(wrapped);
    expect(d?.errorName).toBe('UnknownSandbox');
    expect(d?.args).toEqual(['nope']);
    expect(d?.manager).toBe(manager);
    expect(d?.text).toBe(`UnknownSandbox("nope") (refused by the blueprint's manager ${manager})`);
  });

  it('names a Tangle error as is, and a gas-capped hook failure with what to check', () => {
    const own = encodeErrorResult({ abi: iTangleAbi, errorName: 'InvalidJobIndex', args: [9] });
    expect(decodeRevertData(own)?.text).toBe('InvalidJobIndex(9)');
    const rejected = encodeErrorResult({ abi: iTangleAbi, errorName: 'ManagerRejected', args: [manager] });
    expect(decodeRevertData(rejected)?.text).toMatch(/managerHookGasLimit/);
  });

  it('shows an unknown manager error by its selector, not as “unknown reason”', () => {
    const raw = encodeErrorResult({
      abi: iTangleAbi,
      errorName: 'ManagerReverted',
      args: [manager, '0xdeadbeef'],
    });
    expect(decodeRevertData(raw)?.text).toMatch(/0xdeadbeef/);
  });

  it('is what the CLI, the console and the operator print (one decoder)', () => {
    const e = viemRevert(wrapped);
    expect(describeRevert(e)).toMatchObject({ errorName: 'UnknownSandbox' });
    expect(chainError(e, 'submitJob(1, 1, …)').message).toBe(
      `submitJob(1, 1, …) reverted: UnknownSandbox("nope") (refused by the blueprint's manager ${manager})`,
    );
    expect(refusal(e).message).toMatch(/^the job was refused: UnknownSandbox\("nope"\)/);
  });
});
