// Blueprint creation on Tangle from a full BlueprintDefinition (tnt-core 0.19's createBlueprint).
import { iTangleAbi } from '@agent-sandbox/contracts';
import { type Abi, type Address, type Hex, parseEventLogs } from 'viem';
import type { BlueprintDefinition } from '../blueprint-definition.ts';
import { SdkError } from '../errors.ts';
import { type ChainContext, sendCall } from './tx.ts';

/** Creates the blueprint (the signer becomes its owner); returns its id from BlueprintCreated. */
export async function createBlueprint(
  ctx: ChainContext,
  tangle: Address,
  definition: BlueprintDefinition,
): Promise<{ blueprintId: bigint; txHash: Hex }> {
  const r = await sendCall(ctx, {
    label: `createBlueprint(${definition.metadata.name || definition.metadataUri}, manager ${definition.manager})`,
    address: tangle,
    abi: iTangleAbi as Abi,
    functionName: 'createBlueprint',
    args: [definition],
  });
  const [ev] = parseEventLogs({ abi: iTangleAbi, eventName: 'BlueprintCreated', logs: r.logs });
  if (!ev) throw new SdkError('TX', `createBlueprint emitted no BlueprintCreated (tx ${r.transactionHash}).`);
  return { blueprintId: ev.args.blueprintId, txHash: r.transactionHash };
}
