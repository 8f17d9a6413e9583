// The blueprint's manager read from Tangle's getBlueprint (tnt-core 0.19's static Blueprint
// struct), so BLUEPRINT_CONTRACT can stay unset. On the shared devnet.
import type { Address } from 'viem';
import { describe, expect, inject, it } from 'vitest';
import { resolveBlueprintContract } from './chain.ts';

const devnet = inject('devnet');

describe('resolveBlueprintContract', () => {
  it('decodes the manager from the real getBlueprint struct, for every devnet blueprint', async () => {
    // The stand-in used to answer (owner, manager, createdAt, metadataUri); the reader decoded
    // that layout, which the real struct (six static words) is not.
    for (const kind of ['cloud', 'instance', 'teeInstance'] as const) {
      const manager = await resolveBlueprintContract({
        httpRpcUrl: devnet.rpcUrl,
        tangle: devnet.contracts.tangle as Address,
        blueprintId: BigInt(devnet.blueprints[kind]),
      });
      expect(manager.toLowerCase()).toBe(devnet.contracts[kind].toLowerCase());
    }
  });

  it('says what to do for a blueprint that does not exist', async () => {
    await expect(
      resolveBlueprintContract({
        httpRpcUrl: devnet.rpcUrl,
        tangle: devnet.contracts.tangle as Address,
        blueprintId: 424_242n,
      }),
    ).rejects.toThrow(/no such blueprint.*BLUEPRINT_CONTRACT/);
  });
});
