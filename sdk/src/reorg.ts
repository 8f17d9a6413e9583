// After a reorg: which calls the cursor knows vanished with their blocks, and which answered calls
// kept their log but lost their result (the result tx was in a block the reorg removed).
import { iTangleAbi } from '@agent-sandbox/contracts';
import { type Address, type Hex, numberToHex, type PublicClient } from 'viem';
import type { CallAboveFork, JobCursor } from './job-cursor.ts';

export async function sortCallsAfterFork(
  cursor: JobCursor,
  client: PublicClient,
  tangle: Address,
  serviceId: bigint,
  fork: bigint,
): Promise<{ vanished: CallAboveFork[]; redo: CallAboveFork[] }> {
  const hashes = new Map<bigint, string | undefined>();
  const hashAt = async (n: bigint) => {
    if (!hashes.has(n)) {
      const b = (await client.request({
        method: 'eth_getBlockByNumber',
        params: [numberToHex(n), false],
      })) as { hash: Hex | null } | null;
      hashes.set(n, b?.hash?.toLowerCase());
    }
    return hashes.get(n);
  };
  const vanished: CallAboveFork[] = [];
  const redo: CallAboveFork[] = [];
  for (const c of cursor.rewind(fork)) {
    if (c.pos.block > fork && c.blockHash && (await hashAt(c.pos.block)) !== c.blockHash.toLowerCase()) {
      vanished.push(c);
      continue;
    }
    if (c.state !== 'answered') continue;
    const call = await client.readContract({
      address: tangle,
      abi: iTangleAbi,
      functionName: 'getJobCall',
      args: [serviceId, c.callId],
    });
    if (!call.completed) redo.push(c);
  }
  return { vanished, redo };
}
