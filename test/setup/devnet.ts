// Starts the shared devnet for the test run (anvil on a free port, contracts deployed) and stops it after.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DevnetInfo, startDevnet } from '@agent-sandbox/devnet';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    devnet: DevnetInfo;
    /** Path of the devnet.json the shared devnet wrote (a temporary directory, not .devnet/). */
    devnetStateFile: string;
  }
}

export async function setupDevnet(project: TestProject): Promise<() => Promise<void>> {
  // Its own state file, so a `npm run demo` devnet on 8545 is neither reused nor overwritten.
  const dir = mkdtempSync(join(tmpdir(), 'agent-sandbox-devnet-'));
  const stateFile = join(dir, 'devnet.json');
  const t0 = Date.now();
  const devnet = await startDevnet({ port: 0, stateFile }).catch((err: unknown) => {
    rmSync(dir, { recursive: true, force: true }); // vitest runs no teardown for a failed setup
    throw err;
  });
  process.stderr.write(`[devnet] up at ${devnet.info.rpcUrl} in ${Date.now() - t0} ms\n`);
  project.provide('devnet', devnet.info);
  project.provide('devnetStateFile', stateFile);
  return async () => {
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
