// Vitest global setup: fixtures shared by the whole run, each from its own module under setup/.
// - the sandbox image (built once, reused by tag),
// - one devnet (anvil + the contracts deployed by forge), shared by every chain test.
// Tests read them with `inject('sandboxImage')` / `inject('devnet')`.

import { setupImage } from '@agent-sandbox/sandbox-image/testing';
import type { TestProject } from 'vitest/node';
import { setupDevnet } from './setup/devnet.ts';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const teardowns: Array<() => Promise<void>> = [];
  teardowns.push(await setupImage(project));
  teardowns.push(await setupDevnet(project));
  return async () => {
    for (const t of teardowns.reverse()) await t();
  };
}
