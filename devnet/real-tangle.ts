// The real-protocol mode: instead of deploying the stand-ins, load an anvil state that already holds
// a real Tangle deployment (tnt-core's own LocalTestnet set-up, made by the user outside this
// repository) and describe it with a small deployment JSON. Everything of ours then goes on top of
// it with the role tools (devnet/roles-setup.ts), as on a real network.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { DevnetError } from './errors.ts';

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'an 0x address');

/** The deployment JSON: where the protocol's contracts are in the saved state. Extra keys are kept. */
export const tangleDeploymentSchema = z.looseObject({
  /** Which tnt-core the state was made from (a commit, for the record). */
  tntCore: z.looseObject({ commit: z.string().min(7) }).optional(),
  chainId: z.number().int().positive().optional(),
  contracts: z.looseObject({
    /** The Tangle core (proxy). */
    tangle: address,
    /** MultiAssetDelegation (proxy): operators stake here before registering. */
    staking: address,
  }),
});
export type TangleDeployment = z.infer<typeof tangleDeploymentSchema>;

/** The two files of the real-protocol mode. */
export interface RealTangleFiles {
  /** An anvil state (`anvil --dump-state FILE`, or the JSON `anvil_dumpState` returns, gunzipped). */
  stateFile: string;
  /** The deployment JSON (`{ contracts: { tangle, staking }, tntCore?: { commit } }`). */
  deploymentFile: string;
}

/** The environment variables that name the two files when no flag does. */
export const TANGLE_STATE_ENV = 'TANGLE_STATE_FILE';
export const TANGLE_DEPLOYMENT_ENV = 'TANGLE_DEPLOYMENT_FILE';

/** How to make the two files, in words (this repository ships no tnt-core build). */
export const HOW_TO_MAKE_TANGLE_STATE = [
  'To make them: build tnt-core 0.19 (github.com/tangle-network/tnt-core) with its own forge',
  'settings; start an anvil (chain id 31337, the default dev mnemonic); run its',
  'script/LocalTestnet.s.sol:LocalTestnetSetup against it with --broadcast; save the chain with',
  'anvil --dump-state FILE (or the anvil_dumpState RPC, gunzipped); and write a JSON file',
  '{"contracts":{"tangle":"0x…","staking":"0x…"},"tntCore":{"commit":"…"}} with the Tangle and',
  'MultiAssetDelegation proxy addresses the script printed ("Tangle:", "MultiAssetDelegation:").',
].join('\n');

/**
 * Reads and checks the two files; undefined when neither is named. A clear DevnetError (code
 * TANGLE_STATE_MISSING / STATE_INVALID) says what is wrong and how to produce them.
 */
export function readRealTangleFiles(
  files: Partial<RealTangleFiles>,
  opts: { required: true },
): { files: RealTangleFiles; deployment: TangleDeployment };
export function readRealTangleFiles(
  files: Partial<RealTangleFiles>,
  opts?: { required?: boolean },
): { files: RealTangleFiles; deployment: TangleDeployment } | undefined;
export function readRealTangleFiles(
  files: Partial<RealTangleFiles>,
  opts: { required?: boolean } = {},
): { files: RealTangleFiles; deployment: TangleDeployment } | undefined {
  if (!files.stateFile && !files.deploymentFile && !opts.required) return undefined;
  const missing: string[] = [];
  if (!files.stateFile) missing.push(`the anvil state file (--tangle-state or ${TANGLE_STATE_ENV})`);
  if (!files.deploymentFile)
    missing.push(`the deployment JSON (--tangle-deployment or ${TANGLE_DEPLOYMENT_ENV})`);
  for (const [label, f] of [
    ['anvil state file', files.stateFile],
    ['deployment JSON', files.deploymentFile],
  ] as const) {
    if (f && !existsSync(f)) missing.push(`the ${label} ${resolve(f)} (it does not exist)`);
  }
  if (missing.length > 0) {
    throw new DevnetError(
      'TANGLE_STATE_MISSING',
      `the real-protocol mode needs two files; missing: ${missing.join('; ')}.\n${HOW_TO_MAKE_TANGLE_STATE}`,
    );
  }
  const stateFile = resolve(files.stateFile as string);
  const deploymentFile = resolve(files.deploymentFile as string);
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(deploymentFile, 'utf8'));
  } catch (err) {
    throw new DevnetError('STATE_INVALID', `${deploymentFile} is not JSON: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const parsed = tangleDeploymentSchema.safeParse(json);
  if (!parsed.success) {
    throw new DevnetError(
      'STATE_INVALID',
      `${deploymentFile} is not a Tangle deployment description (${z.prettifyError(parsed.error)}).\n${HOW_TO_MAKE_TANGLE_STATE}`,
    );
  }
  return { files: { stateFile, deploymentFile }, deployment: parsed.data };
}
