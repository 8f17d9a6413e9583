// The chain reads and encoding behind one batch of results: whether each call is still open
// (getJobCall), the submitResult(s) calldata, and its gas estimate (which also simulates it).
import { iTangleAbi } from '@agent-sandbox/contracts';
import type { Logger } from 'pino';
import { type Address, encodeFunctionData, type Hex, type LocalAccount, type PublicClient } from 'viem';
import { Aborted } from './rpc-retry.ts';

export interface ResultCall {
  callId: bigint;
  output: Hex;
}

/** submitResult for one call, submitResults for several. */
export function resultCalldata(serviceId: bigint, items: readonly ResultCall[]): Hex {
  return items.length === 1
    ? encodeFunctionData({
        abi: iTangleAbi,
        functionName: 'submitResult',
        args: [serviceId, items[0]!.callId, items[0]!.output],
      })
    : encodeFunctionData({
        abi: iTangleAbi,
        functionName: 'submitResults',
        args: [serviceId, items.map((i) => i.callId), items.map((i) => i.output)],
      });
}

/** The gas estimate with headroom; a revert throws with Tangle's custom error decoded. */
export async function estimateResultGas(
  o: { client: PublicClient; tangle: Address; serviceId: bigint; account: LocalAccount; headroomPct: number },
  items: readonly ResultCall[],
): Promise<bigint> {
  const { client, tangle, serviceId, account } = o;
  // prepare: false: one eth_estimateGas from the account. viem otherwise first prepares a whole
  // transaction for a local account (chain id, nonce, block and fees, an eth_fillTransaction try):
  // round trips on every result that the estimate does not need (the sender signs with its own).
  const gas =
    items.length === 1
      ? await client.estimateContractGas({
          address: tangle,
          abi: iTangleAbi,
          functionName: 'submitResult',
          args: [serviceId, items[0]!.callId, items[0]!.output],
          account,
          prepare: false,
        })
      : await client.estimateContractGas({
          address: tangle,
          abi: iTangleAbi,
          functionName: 'submitResults',
          args: [serviceId, items.map((i) => i.callId), items.map((i) => i.output)],
          account,
          prepare: false,
        });
  return (gas * BigInt(100 + o.headroomPct)) / 100n;
}

/** Each call's state on Tangle: completed, open, or invalid (getJobCall reverts for it). */
export function callStates(
  o: { client: PublicClient; tangle: Address; serviceId: bigint; log: Logger },
  items: readonly { callId: bigint }[],
  retry: <T>(fn: () => Promise<T>) => Promise<T>,
): Promise<Array<'completed' | 'open' | 'invalid'>> {
  const { client, tangle, serviceId, log } = o;
  return Promise.all(
    items.map((i) =>
      retry(() =>
        client.readContract({
          address: tangle,
          abi: iTangleAbi,
          functionName: 'getJobCall',
          args: [serviceId, i.callId],
        }),
      ).then(
        (c) => (c.completed ? ('completed' as const) : ('open' as const)),
        (e: unknown) => {
          if (e instanceof Aborted) throw e;
          log.error(
            { callId: `${i.callId}`, err: e },
            'getJobCall reverts for this call; not sending a result',
          );
          return 'invalid' as const;
        },
      ),
    ),
  );
}
