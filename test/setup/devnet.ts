// Starts the shared devnet for the test run (anvil on a free port, contracts deployed) and stops it after.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DevnetInfo, type RealTangleFiles, startDevnet } from '@agent-sandbox/devnet';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    devnet: DevnetInfo;
    /** Path of the devnet.json the shared devnet wrote (a temporary directory, not .devnet/). */
    devnetStateFile: string;
  }
}

/** `tangle`: the real-protocol mode (tnt-core's state loaded into anvil), for `npm run test:real-tangle`. */
export async function setupDevnet(
  project: TestProject,
  tangle?: RealTangleFiles,
): Promise<() => Promise<void>> {
  // Its own state file, so a `npm run demo` devnet on 8545 is neither reused nor overwritten.
  const dir = mkdtempSync(join(tmpdir(), 'agent-sandbox-devnet-'));
  const stateFile = join(dir, 'devnet.json');
  const t0 = Date.now();
  const devnet = await startDevnet({ port: 0, stateFile, tangle }).catch((err: unknown) => {
    rmSync(dir, { recursive: true, force: true }); // vitest runs no teardown for a failed setup
    throw err;
  });
  process.stderr.write(
    `[devnet] up at ${devnet.info.rpcUrl} in ${Date.now() - t0} ms${tangle ? ` on tnt-core's Tangle ${devnet.info.contracts.tangle} (${tangle.stateFile})` : ''}\n`,
  );
  project.provide('devnet', devnet.info);
  project.provide('devnetStateFile', stateFile);
  return async () => {
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
