// `run`: the operator's startup order and clean shutdown, one named step each. Configuration is
// validated before this is called; then key → store → Docker engine → image → sandbox manager →
// TEE → reconcile → operator API → job handlers → instance sandbox → job runner → timers →
// workflow scheduler.
// The runtime↔chain adapters live in blueprint-lib (runtime-adapters.ts); this file only wires.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  afterJob,
  apiSandboxes,
  BlueprintChain,
  type BlueprintDeps,
  BlueprintWriter,
  blueprintRouter,
  chainFeedHealth,
  GoneReporter,
  HandledCalls,
  type InstanceSupervisor,
  jobSandboxes,
  openTeeInstance,
  readServiceOwner,
  resolveBlueprintContract,
  type TeeInstance,
  workflowSandbox,
} from '@agent-sandbox/blueprint-lib';
import {
  CircuitBreaker,
  createApiSidecars,
  createOperatorApi,
  EncryptedStore,
  loopDisksUnavailable,
  offeredRuntimes,
  parseDockerAuths,
  policyUnavailableReason,
  type RegistryLogin,
  SandboxManager,
  SessionAuth,
  serveOperatorApi,
  shapeCatalog,
} from '@agent-sandbox/runtime';
import {
  type BlueprintEnvironment,
  type ChainStatus,
  createRunner,
  type OperatorKey,
  runnerOptionsFromEnvironment,
} from '@agent-sandbox/sdk';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { type Address, createPublicClient, http } from 'viem';
import type { OperatorConfig } from './config.ts';
import { startApprovalPolicy } from './operator-approval.ts';
import { startInstanceKeeper } from './operator-instance.ts';
import { apiOptions, capabilities, managerConfig, teeOptions } from './operator-options.ts';
import {
  Cleanup,
  checkDocker,
  loadOperatorKey,
  resolveHarnessImage,
  resolveImage,
  step,
} from './operator-startup.ts';

/** The web console's build (the console workspace package's `vite build`), served at /console/. */
const CONSOLE_DIR = fileURLToPath(new URL('../../console/dist', import.meta.url));

export interface RunningOperator {
  apiUrl: string;
  publicUrl: string;
  key: OperatorKey;
  /** Stop taking jobs, finish in-flight ones, close the API, close the store. Idempotent. */
  stop(reason?: string): Promise<void>;
}

/** What startOperator builds as it goes: each step reads what earlier steps made. */
interface Parts {
  cfg: OperatorConfig;
  env: BlueprintEnvironment;
  dataDir: string;
  log: Logger;
  key: OperatorKey;
  store: EncryptedStore;
  image: string;
  /** The image with the harness CLIs, when configured (SANDBOX_HARNESS_IMAGE). */
  harnessImage: string | undefined;
  registry: Registry;
  manager: SandboxManager;
  tee: TeeInstance | undefined;
  /** Flipped by startOperator and read by the API (readiness, the instance keeper, the job feed). */
  state: {
    ready: boolean;
    instance: InstanceSupervisor | undefined;
    chainStatus: (() => ChainStatus) | undefined;
  };
}

export async function startOperator(cfg: OperatorConfig, log: Logger): Promise<RunningOperator> {
  const env = cfg.env;
  const dataDir = cfg.dataDir;
  if (!env || env.serviceId === undefined || !dataDir)
    throw new Error('run needs a validated chain environment');
  const cleanup = new Cleanup(log);
  try {
    const key = await loadOperatorKey(env, log, dataDir);
    const store = await step(log, 'opening the encrypted store', () =>
      EncryptedStore.open({ dir: join(dataDir, 'store'), secret: cfg.values.SESSION_AUTH_SECRET! }),
    );
    cleanup.push(() => store.close());
    await step(log, 'checking the Docker engine', checkDocker);
    const image = await step(log, 'resolving the sandbox image', () => resolveImage(cfg, log));
    const harnessImage = await step(log, 'resolving the harness image', () => resolveHarnessImage(cfg, log));
    const registry = new Registry();
    const manager = await step(log, 'opening the sandbox manager (records, network, egress rules)', () =>
      openManager(cfg, dataDir, key, store, image, registry, log),
    );
    // Last to run at shutdown: the egress rules stay while anything else is still stopping.
    cleanup.push(() => manager.close());
    const tee = cfg.mode === 'tee-instance' ? await openTee(cfg, env, key, manager, log) : undefined;
    const state: Parts['state'] = { ready: false, instance: undefined, chainStatus: undefined };
    const parts: Parts = {
      cfg,
      env,
      dataDir,
      log,
      key,
      store,
      image,
      harnessImage,
      registry,
      manager,
      tee,
      state,
    };

    const report = await step(log, 'reconciling the store with the engine', () => manager.reconcile());
    log.info({ report }, 'reconciled');
    const blueprint = await step(log, "reading the service's blueprint contract", () =>
      blueprintContract(cfg, env),
    );
    const api = await step(log, 'starting the operator API', () => startApi(parts, cleanup));
    // Before any job can start a run: runs a previous process left going are recorded failed.
    const interrupted = await api.app.workflows.recover();
    if (interrupted)
      log.warn({ interrupted }, 'workflow runs interrupted by the last stop recorded as failed');
    const chain = new BlueprintChain({ httpRpcUrl: env.httpRpcUrl, blueprint });
    const deps = blueprintDeps(parts, chain, api);
    if (cfg.mode !== 'cloud') {
      // Not awaited past its first pass: a failed provision is retried, never blocks the start.
      state.instance = await startInstanceKeeper(
        { ...parts, deps, blueprint, forgetRuns: (id) => api.app.runs.forgetSandbox(id) },
        cleanup,
      );
    }
    const gone = await step(log, 'following the chain (catching up on jobs)', () =>
      startJobs(parts, cleanup, deps, blueprint),
    );
    manager.startBackground();
    cleanup.push(() => manager.stopBackground());
    startTimers(parts, cleanup, api, gone);
    startWorkflows(cleanup, api);
    startApprovalPolicy(cfg, env, key, log, cleanup);

    state.ready = true;
    log.info(
      { operator: key.address, serviceId: `${env.serviceId}`, api: api.publicUrl, mode: cfg.mode },
      'operator ready',
    );
    let stopping: Promise<void> | undefined;
    return {
      apiUrl: api.server.url,
      publicUrl: api.publicUrl,
      key,
      stop(reason = 'stop requested') {
        stopping ??= (async () => {
          state.ready = false;
          log.info({ reason }, 'shutting down: no new jobs; finishing in-flight work');
          // Order (reverse of start): timers → runner (finishes in-flight) → API → store.
          await cleanup.unwind();
          log.info('operator stopped');
        })();
        return stopping;
      },
    };
  } catch (e) {
    await cleanup.unwind();
    throw e;
  }
}

async function openManager(
  cfg: OperatorConfig,
  dataDir: string,
  key: OperatorKey,
  store: EncryptedStore,
  image: string,
  registry: Registry,
  log: Logger,
): Promise<SandboxManager> {
  const v = cfg.values;
  let workspaceDisk: 'loop' | 'none' = v.SANDBOX_WORKSPACE_DISK === 'loop' ? 'loop' : 'none';
  if (v.SANDBOX_WORKSPACE_DISK === 'auto') {
    const why = await loopDisksUnavailable();
    if (why) log.warn({ why }, 'workspaces are not held to disk_gb (SANDBOX_WORKSPACE_DISK=auto)');
    else workspaceDisk = 'loop';
  }
  const operatorId = v.OPERATOR_ID ?? key.address.toLowerCase();
  const registryLogins = await readRegistryLogins(v.SANDBOX_REGISTRY_AUTH_FILE);
  if (Object.keys(registryLogins).length)
    log.info({ registries: Object.keys(registryLogins) }, 'registry logins read');
  return SandboxManager.open({
    store,
    registry,
    logger: log,
    config: { ...managerConfig(v, dataDir, { operatorId, image, workspaceDisk }), registryLogins },
  });
}

/** The operator's registry logins (a docker config.json); the passwords are never logged. */
async function readRegistryLogins(file: string | undefined): Promise<Record<string, RegistryLogin>> {
  if (!file) return {};
  try {
    return parseDockerAuths(await readFile(file, 'utf8'));
  } catch (e) {
    throw new Error(
      `SANDBOX_REGISTRY_AUTH_FILE ${file} could not be read as a docker config.json ({"auths":{"<host>":{"auth":"<base64 user:password>"}}}): ${(e as Error).message}`,
    );
  }
}

/** Before anything takes work: no evidence source here means this operator must not start. */
function openTee(
  cfg: OperatorConfig,
  env: BlueprintEnvironment,
  key: OperatorKey,
  manager: SandboxManager,
  log: Logger,
): Promise<TeeInstance> {
  return step(log, 'opening the TEE backend', async () => {
    const pub = createPublicClient({ transport: http(env.httpRpcUrl) });
    // The enclave takes orders from the service owner only; the binding context names it.
    const owner = await readServiceOwner(env.httpRpcUrl, await blueprintContract(cfg, env), env.serviceId!);
    return openTeeInstance({
      ...teeOptions(cfg.values, env.testMode),
      chainId: BigInt(await pub.getChainId()),
      serviceId: env.serviceId!,
      operator: key.address,
      owner,
      injectSecrets: (id, secrets) => manager.injectSecrets(id, secrets),
      sidecarFor: (id) => manager.sidecarEndpoint(id),
      log: (fields, msg) => log.warn(fields, msg),
    });
  });
}

async function blueprintContract(cfg: OperatorConfig, env: BlueprintEnvironment): Promise<Address> {
  return (
    cfg.values.BLUEPRINT_CONTRACT ??
    resolveBlueprintContract({
      httpRpcUrl: env.httpRpcUrl,
      tangle: env.tangleContract,
      blueprintId: env.blueprintId,
    })
  );
}

type Api = Awaited<ReturnType<typeof startApi>>;

/** Sessions, the API's sandbox view and sidecar clients, and the listening operator API. */
async function startApi(p: Parts, cleanup: Cleanup) {
  const { cfg, env, store, manager, log } = p;
  const v = cfg.values;
  const chainClient = createPublicClient({ transport: http(env.httpRpcUrl) });
  // Sign-in messages name the URL clients reach (known only after listen when the port is 0).
  let listenUrl: string | undefined;
  const chainId = await chainClient.getChainId();
  const noPolicies =
    manager.config.egress === 'none'
      ? 'SANDBOX_EGRESS=none: sandboxes have no network to narrow'
      : await policyUnavailableReason();
  const sessions = await SessionAuth.create({
    secret: v.SESSION_AUTH_SECRET!,
    store,
    siwe: {
      publicUrl: cfg.api.publicUrl ?? (() => listenUrl ?? 'http://127.0.0.1'),
      chainId,
    },
    allowLegacyMessage: v.AUTH_ALLOW_LEGACY_MESSAGE ?? false,
  });
  // One breaker for the API's sidecar calls and workflow execs, so the GC timer can prune it.
  const breaker = new CircuitBreaker();
  const local = apiSandboxes(manager, new HandledCalls(store), env.serviceId!);
  // phala: the CVM sandboxes join the API's view (their sidecars are reached over the CVM's URL).
  const sandboxes = p.tee ? p.tee.apiSandboxes(local) : local;
  const sidecars = createApiSidecars(sandboxes, { breaker });
  const app = createOperatorApi(
    {
      sessions,
      sandboxes,
      sidecars,
      store,
      metrics: p.registry,
      logger: log,
      mode: cfg.mode,
      shapes: shapeCatalog(manager.config),
      capabilities: {
        ...capabilities(cfg, p.key, p.image, p.tee?.capabilities ?? false, p.harnessImage),
        // What the web console needs to submit jobs 0/1 through the user's wallet.
        chain: { chainId, tangle: env.tangleContract },
        // Which OCI runtimes a create may name (capabilities_json.runtime) and the default.
        runtimes: { default: manager.config.runtime, offered: offeredRuntimes(manager.config) },
        // The network model (issue 26): the operator's ceiling, the implicit domains a `default`
        // policy reaches, and whether a create may name a policy (not under egress none).
        network: {
          egress: manager.config.egress,
          implicitDomains: manager.config.implicitDomains,
          perSandboxPolicies: noPolicies === undefined,
          ...(noPolicies ? { policiesUnavailable: noPolicies } : { policyModes: ['default', 'strict'] }),
        },
      },
      consoleDir: CONSOLE_DIR,
      health: {
        // Down at once while the runtime's engine watch says so (dockerd gone or silent); else a
        // ping on the runtime's own client, whose calls have a deadline.
        runtime: async () => {
          const engine = manager.engineStatus();
          if (engine.state === 'down') throw new Error(engine.message);
          await manager.driver.docker.ping();
        },
        store: () => {
          if (store.closed) throw new Error('store closed');
        },
        chain: () => chainClient.getBlockNumber({ cacheTime: 0 }),
      },
      ready: () => p.state.ready,
      chainFeed: () => {
        const status = p.state.chainStatus?.();
        return status && chainFeedHealth(status);
      },
      engine: () => manager.engineStatus(),
      ...(cfg.mode === 'cloud'
        ? {}
        : {
            instanceSandboxId: () => p.state.instance?.sandboxId(),
            instance: () => p.state.instance?.status(),
          }),
      workflowSandbox: workflowSandbox(() => p.state.instance?.sandboxId()),
      ...(p.tee ? { tee: p.tee.service } : {}),
    },
    apiOptions(v),
  );
  const server = await step(log, 'starting the operator API', () =>
    serveOperatorApi(app, { host: cfg.api.host, port: cfg.api.port }),
  );
  cleanup.push(() => server.close());
  listenUrl = server.url;
  const publicUrl = cfg.api.publicUrl ?? server.url;
  log.info({ url: server.url, publicUrl }, 'operator API listening');
  return { app, server, sessions, breaker, sidecars, publicUrl };
}

/** What the job handlers get: the chain, the runtime (via blueprint-lib's adapters), the policy. */
function blueprintDeps(p: Parts, chain: BlueprintChain, api: Api): BlueprintDeps {
  const v = p.cfg.values;
  return {
    operator: p.key.address,
    mode: p.cfg.mode,
    chain,
    // A deleted sandbox's agent runs (records and events) are deleted with it.
    sandboxes: jobSandboxes(p.manager, (id) => api.app.runs.forgetSandbox(id)),
    store: p.store,
    policy: {
      defaultImage: p.image,
      imageAllowlist: v.SANDBOX_IMAGE_ALLOWLIST ?? [],
      ...(p.harnessImage ? { harnessImage: p.harnessImage } : {}),
      shapes: shapeCatalog(p.manager.config),
      teeAvailable: p.tee !== undefined,
      sshOffered: v.SANDBOX_SSH ?? true,
    },
    operatorApiUrl: api.publicUrl,
    workflows: api.app.workflows,
    logger: p.log,
  };
}

/** The job runner, and the operator's own follow-up calls (settle, give back, report gone). */
async function startJobs(
  p: Parts,
  cleanup: Cleanup,
  deps: BlueprintDeps,
  blueprint: Address,
): Promise<GoneReporter> {
  const { cfg, env, key, log } = p;
  const v = cfg.values;
  const { router, sandbox } = blueprintRouter(deps);
  const chain = new BlueprintChain({ httpRpcUrl: env.httpRpcUrl, blueprint });
  // The operator's own blueprint calls: settle calls another operator completed, give back
  // reservations it gave up on, report sandboxes stopped for good (see follow-ups.ts).
  const writer = new BlueprintWriter({
    httpRpcUrl: env.httpRpcUrl,
    blueprint,
    account: key.account,
    logger: log,
  });
  const gone = new GoneReporter({
    sandboxes: p.manager,
    store: p.store,
    writer,
    serviceId: env.serviceId!,
    mode: cfg.mode,
    log,
    // Cloud: a terminated service's sandboxes are deleted (instance modes: operator-instance.ts).
    ...(cfg.mode === 'cloud' && {
      serviceActive: () => chain.isServiceActive(env.tangleContract, env.serviceId!),
    }),
  });
  const runner = createRunner(
    runnerOptionsFromEnvironment(env, key, router, {
      afterJob: afterJob(writer, log, sandbox),
      onCallVanished: (v) => sandbox.vanished(v),
      logger: log,
      concurrency: v.JOB_CONCURRENCY!,
      pollIntervalMs: v.JOB_POLL_INTERVAL_MS!,
      confirmations: v.JOB_CONFIRMATIONS!,
      startBlock: v.JOB_START_BLOCK ?? 'latest',
      shutdownGraceMs: v.SHUTDOWN_GRACE_MS!,
    }),
  );
  await step(log, 'starting the job runner', () => runner.start());
  p.state.chainStatus = () => runner.chainStatus;
  cleanup.push(() => runner.stop());
  return gone;
}

/** The cron loop, once jobs are taken (stopped first at shutdown). */
function startWorkflows(cleanup: Cleanup, api: Api): void {
  api.app.scheduler.start();
  cleanup.push(() => api.app.scheduler.stop());
}

/** The timers: report sandboxes gone for good; collect expired sessions and idle circuit breakers. */
function startTimers(p: Parts, cleanup: Cleanup, api: Api, gone: GoneReporter): void {
  const log = p.log;
  const v = p.cfg.values;
  let reporting = false;
  const goneTimer = setInterval(() => {
    if (reporting) return;
    reporting = true;
    gone
      .tick()
      .catch((err) => log.warn({ err }, 'reporting gone sandboxes failed; retrying on the next tick'))
      .finally(() => {
        reporting = false;
      });
  }, v.SANDBOX_REAPER_INTERVAL! * 1000);
  goneTimer.unref();
  cleanup.push(() => clearInterval(goneTimer));
  const gc = setInterval(() => {
    api.sessions
      .collect()
      .then((r) =>
        log.debug({ collected: r, breakersPruned: api.breaker.prune() }, 'session and breaker collection'),
      )
      .catch((err) => log.warn({ err }, 'session collection failed'));
  }, v.SESSION_GC_INTERVAL! * 1000);
  gc.unref();
  cleanup.push(() => clearInterval(gc));
}
