// Vitest global setup for `npm run test:real-tangle`: the same fixtures as test/global-setup.ts,
// but the shared devnet runs on the real protocol — anvil starts from a saved tnt-core 0.19
// deployment (TANGLE_STATE_FILE, TANGLE_DEPLOYMENT_FILE) and only our blueprint goes on top.
import { readRealTangleFiles, TANGLE_DEPLOYMENT_ENV, TANGLE_STATE_ENV } from '@agent-sandbox/devnet';
import { setupImage } from '@agent-sandbox/sandbox-image/testing';
import type { TestProject } from 'vitest/node';
import { setupDevnet } from './setup/devnet.ts';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const real = readRealTangleFiles(
    { stateFile: process.env[TANGLE_STATE_ENV], deploymentFile: process.env[TANGLE_DEPLOYMENT_ENV] },
    { required: true },
  );
  const teardowns: Array<() => Promise<void>> = [];
  teardowns.push(await setupImage(project));
  teardowns.push(await setupDevnet(project, real.files));
  return async () => {
    for (const t of teardowns.reverse()) await t();
  };
}
