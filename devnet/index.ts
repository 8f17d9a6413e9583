// The local devnet: anvil plus this project's contracts, blueprints, operators and services, in one call.
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { startAnvil } from './anvil.ts';
import { deployDevnet } from './deploy.ts';

export { devnetDefinition } from './deploy.ts';

import { DEFAULT_STATE_FILE, DevnetError, REPO_ROOT } from './errors.ts';
import { type RealTangleFiles, readRealTangleFiles } from './real-tangle.ts';
import {
  type DevnetInfo,
  isDevnetAlive,
  readDevnetInfo,
  removeDevnetInfo,
  removeDevnetPid,
  writeDevnetInfo,
  writeDevnetPid,
} from './state.ts';

export { DEVNET_MNEMONIC, type DevnetAccount, devnetAccounts, uncompressedPublicKey } from './accounts.ts';
export { anvilBinary, DEVNET_CHAIN_ID, freePort, rpcChainId } from './anvil.ts';
export { DEFAULT_STATE_FILE, DevnetError, type DevnetErrorCode } from './errors.ts';
export {
  encodeCreateOutput,
  encodeJsonOutput,
  encodeSandboxCreateRequest,
  encodeSandboxDelete,
  type SandboxCreateRequest,
  sampleSandboxCreateRequest,
  sandboxCreateRequestComponents,
} from './job-encoding.ts';
export {
  HOW_TO_MAKE_TANGLE_STATE,
  type RealTangleFiles,
  readRealTangleFiles,
  TANGLE_DEPLOYMENT_ENV,
  TANGLE_STATE_ENV,
  type TangleDeployment,
} from './real-tangle.ts';
export {
  DEVNET_KINDS,
  type DevnetInfo,
  type DevnetKind,
  devnetInfoSchema,
  isDevnetAlive,
  readDevnetInfo,
} from './state.ts';

export interface StartDevnetOptions {
  /** Port for anvil's RPC; 0 (the default) picks a free one. */
  port?: number;
  /** Where to write devnet.json (default `.devnet/devnet.json` at the repository root). */
  stateFile?: string;
  log?: (line: string) => void;
  /** Reuse the devnet `stateFile` describes when it is up (its RPC answers and its contracts have code). */
  reuse?: boolean;
  /** Let anvil outlive this process (its output goes to `anvil.log` beside the state file). */
  detach?: boolean;
  /**
   * The real-protocol mode: an anvil state holding tnt-core's deployment and the JSON naming its
   * Tangle and MultiAssetDelegation. anvil starts from that state and only our managers,
   * blueprints, operators and services are added (with the role tools). Unset: the stand-ins.
   */
  tangle?: Partial<RealTangleFiles> | undefined;
}

export interface StartedDevnet {
  info: DevnetInfo;
  /** Absolute path of the devnet.json written (or reused). */
  stateFile: string;
  /** True when an already running devnet was reused; stop() then leaves it running. */
  reused: boolean;
  /** anvil's pid (undefined when reused). */
  pid: number | undefined;
  /** Resolves if anvil exits (never, for a reused devnet). */
  exited: Promise<void>;
  /** Stops anvil (if this call started it) and removes the state file it wrote. */
  stop(): Promise<void>;
}

/** Starts anvil, deploys and sets everything up, writes devnet.json; or reuses a running devnet. */
export async function startDevnet(opts: StartDevnetOptions = {}): Promise<StartedDevnet> {
  const stateFile = resolve(REPO_ROOT, opts.stateFile ?? DEFAULT_STATE_FILE);
  const log = opts.log ?? (() => {});
  const real = readRealTangleFiles(opts.tangle ?? {});
  if (opts.reuse) {
    let existing: DevnetInfo | undefined;
    try {
      existing = readDevnetInfo(stateFile);
    } catch (err) {
      log(`${(err as Error).message}; starting a fresh devnet instead`);
    }
    const sameProtocol = real
      ? existing?.protocol?.stateFile === real.files.stateFile
      : existing?.protocol === undefined;
    if (existing && !sameProtocol && (await isDevnetAlive(existing))) {
      throw new DevnetError(
        'PORT_IN_USE',
        `${stateFile} describes a running devnet on ${existing.protocol ? `the tnt-core state ${existing.protocol.stateFile}` : 'the stand-in LocalTangle'}, not the one asked for; stop it first (\`devnet down\`), or pass another --state file`,
      );
    }
    if (existing && (await isDevnetAlive(existing))) {
      log(`devnet already running at ${existing.rpcUrl} (started ${existing.startedAt})`);
      return {
        info: existing,
        stateFile,
        reused: true,
        pid: undefined,
        exited: new Promise(() => {}),
        stop: async () => {},
      };
    }
    if (existing) log(`${stateFile} describes a devnet that is not running; starting a fresh one`);
  }

  const t0 = Date.now();
  mkdirSync(dirname(stateFile), { recursive: true });
  const anvil = await startAnvil({
    port: opts.port ?? 0,
    detached: opts.detach ?? false,
    logFile: resolve(stateFile, '../anvil.log'),
    log,
    loadState: real?.files.stateFile,
  });
  let info: DevnetInfo;
  try {
    info = await deployDevnet(
      anvil.rpcUrl,
      anvil.wsUrl,
      log,
      real && {
        tangle: real.deployment.contracts.tangle as `0x${string}`,
        staking: real.deployment.contracts.staking as `0x${string}`,
        record: {
          source: 'tnt-core',
          commit: real.deployment.tntCore?.commit,
          stateFile: real.files.stateFile,
          deploymentFile: real.files.deploymentFile,
        },
      },
    );
    writeDevnetInfo(stateFile, info);
    // A detached anvil outlives us: devnet.pid lets `devnet down` stop it later.
    if (opts.detach) {
      writeDevnetPid(stateFile, {
        pid: anvil.pid,
        detached: true,
        rpcUrl: info.rpcUrl,
        startedAt: info.startedAt,
      });
    }
  } catch (err) {
    await anvil.stop();
    if (err instanceof DevnetError) throw err;
    throw new DevnetError('DEPLOY_FAILED', `devnet set-up failed: ${(err as Error).message}`, { cause: err });
  }
  log(`devnet up in ${Date.now() - t0} ms; wrote ${stateFile}`);
  return {
    info,
    stateFile,
    reused: false,
    pid: anvil.pid,
    exited: anvil.exited,
    async stop() {
      await anvil.stop();
      removeDevnetInfo(stateFile, info);
      if (opts.detach) removeDevnetPid(stateFile);
    },
  };
}
