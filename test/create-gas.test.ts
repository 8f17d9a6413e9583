// Gas a normal client can rely on: many creates, each sent with exactly its fresh eth_estimateGas
// as the gas limit (viem's default, no margin), while the assignments and the operators'
// reservations change between the estimate and the mined block. None may revert.

import { DevnetJobs } from '@agent-sandbox/blueprint-lib/testing';
import { localTangleAbi } from '@agent-sandbox/contracts';
import { encodeSandboxCreateRequest, sampleSandboxCreateRequest } from '@agent-sandbox/devnet';
import { createWalletClient, encodeAbiParameters, type Hex, http } from 'viem';
import { describe, expect, inject, it } from 'vitest';
import { SANDBOX_CREATE_OUTPUT } from '../blueprint-lib/src/jobs.ts';

const devnet = inject('devnet');

describe('create gas', () => {
  it('a create sent with exactly its fresh estimate never runs out of gas, whichever operator it lands on', async () => {
    const jobs = new DevnetJobs(devnet);
    await jobs.newCloudService();
    const wallet = createWalletClient({ account: jobs.caller, transport: http(devnet.rpcUrl) });
    const open: Array<{ callId: bigint; operator: Hex }> = [];
    const assigned = new Set<string>();
    const failed = encodeAbiParameters(SANDBOX_CREATE_OUTPUT, ['', '{"error":"test"}']);
    const N = 24;
    for (let i = 0; i < N; i++) {
      const inputs = encodeSandboxCreateRequest(sampleSandboxCreateRequest({ name: `gas-${i}` }), 'flat');
      const call = {
        address: devnet.contracts.tangle,
        abi: localTangleAbi,
        functionName: 'submitJob',
        args: [jobs.serviceId, 0, inputs],
        account: jobs.caller,
      } as const;
      const gas = await jobs.pub.estimateContractGas(call);
      const hash = await wallet.writeContract({ ...call, gas, chain: null });
      const receipt = await jobs.pub.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      expect(receipt.status, `create ${i} (gas limit ${gas}, used ${receipt.gasUsed})`).toBe('success');
      const ref = await jobs.submitted(receipt);
      open.push(ref);
      assigned.add(ref.operator.toLowerCase());
      // Answer some creates (an error result frees the reservation), so the operators' reserved
      // counters go up and down to zero between creates, as they do in service.
      if (i % 3 === 2) {
        for (const c of open.splice(0, 2)) await jobs.submitResult(c.operator, c.callId, failed);
      }
    }
    for (const c of open.splice(0)) await jobs.submitResult(c.operator, c.callId, failed);
    // Both operators had room, so the random pick landed on each (all 24 on one: p < 1e-4).
    expect(assigned.size, 'creates landed on both operators').toBe(2);
  });
});
