// Test fixture: the shared devnet from vitest's global setup when it provided one, else undefined
// (then toyChain() starts a private anvil), so SDK tests also run without the shared devnet.
import { inject } from 'vitest';
import type { DevnetLike } from './toy-chain.ts';

export function maybeDevnet(): DevnetLike | undefined {
  try {
    return (inject as (k: string) => unknown)('devnet') as DevnetLike | undefined;
  } catch {
    return undefined;
  }
}
