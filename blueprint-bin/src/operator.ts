// `run`: the operator's startup order and clean shutdown. Configuration is validated before this
// is called; then store → Docker engine → image → reconcile → operator API → job runner → timers.
import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  afterJob,
  BlueprintChain,
  type BlueprintDeps,
  BlueprintWriter,
  blueprintRouter,
  GoneReporter,
  HandledCalls,
  openTeeInstance,
  provisionInstance,
  resolveBlueprintContract,
  type SandboxRuntime,
  type TeeInstance,
} from '@agent-sandbox/blueprint-lib';
import {
  CircuitBreaker,
  createApiSidecars,
  createOperatorApi,
  EncryptedStore,
  loopDisksUnavailable,
  SandboxManager,
  SessionAuth,
  serveOperatorApi,
} from '@agent-sandbox/runtime';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import {
  createRunner,
  loadKeystore,
  type OperatorKey,
  runnerOptionsFromEnvironment,
} from '@agent-sandbox/sdk';
import Docker from 'dockerode';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { createPublicClient, http } from 'viem';
import type { OperatorConfig } from './config.ts';

export interface RunningOperator {
  apiUrl: string;
  publicUrl: string;
  key: OperatorKey;
  /** Stop taking jobs, finish in-flight ones, close the API, close the store. Idempotent. */
  stop(reason?: string): Promise<void>;
}

const step = async <T>(log: Logger, what: string, fn: () => Promise<T>): Promise<T> => {
  const t0 = Date.now();
  log.info(`${what}…`);
  const out = await fn();
  log.info({ ms: Date.now() - t0 }, `${what}: done`);
  return out;
};

/** Default image: the configured one, or the project's sandbox image, built if missing (with progress). */
export async function resolveImage(cfg: OperatorConfig, log: Logger): Promise<string> {
  if (cfg.values.SANDBOX_IMAGE) return cfg.values.SANDBOX_IMAGE;
  const { tag, built } = await ensureSandboxImage({
    onProgress: (line) => log.info({ step: 'image' }, line),
  });
  log.info({ image: tag, built }, built ? 'sandbox image built' : 'sandbox image present');
  return tag;
}

export async function startOperator(cfg: OperatorConfig, log: Logger): Promise<RunningOperator> {
  const v = cfg.values;
  const env = cfg.env;
  if (!env || env.serviceId === undefined || !cfg.dataDir)
    throw new Error('run needs a validated chain environment');
  const cleanup: Array<() => Promise<void> | void> = [];
  const unwind = async () => {
    for (const fn of cleanup.reverse())
      await Promise.resolve(fn()).catch((err) => log.error({ err }, 'cleanup step failed'));
  };
  try {
    const key = await loadKeystore({
      uri: env.keystoreUri,
      password: env.keystorePassword,
      testMode: env.testMode,
    });
    log.info({ operator: key.address, keyKind: key.kind }, 'operator key loaded');
    await mkdir(cfg.dataDir, { recursive: true, mode: 0o700 });
    await chmod(cfg.dataDir, 0o700).catch(() => {});

    const store = await step(log, 'opening the encrypted store', () =>
      EncryptedStore.open({ dir: join(cfg.dataDir!, 'store'), secret: v.SESSION_AUTH_SECRET! }),
    );
    cleanup.push(() => store.close());

    await step(log, 'checking the Docker engine', async () => {
      try {
        await new Docker().ping();
      } catch (e) {
        throw new Error(
          `the Docker engine does not answer on /var/run/docker.sock (${(e as Error).message}); start dockerd`,
        );
      }
    });
    const image = await step(log, 'resolving the sandbox image', () => resolveImage(cfg, log));

    let workspaceDisk = v.SANDBOX_WORKSPACE_DISK === 'loop' ? 'loop' : 'none';
    if (v.SANDBOX_WORKSPACE_DISK === 'auto') {
      const why = await loopDisksUnavailable();
      if (why) log.warn({ why }, 'workspaces are not held to disk_gb (SANDBOX_WORKSPACE_DISK=auto)');
      else workspaceDisk = 'loop';
    }
    const registry = new Registry();
    const operatorId = v.OPERATOR_ID ?? key.address.toLowerCase();
    const manager = await SandboxManager.open({
      store,
      registry,
      logger: log,
      config: {
        operatorId,
        image,
        sidecarPort: v.SIDECAR_HTTP_PORT!,
        publicHost: v.SIDECAR_PUBLIC_HOST!,
        defaultCpuCores: v.SANDBOX_DEFAULT_CPU_CORES!,
        defaultMemoryMb: v.SANDBOX_DEFAULT_MEMORY_MB!,
        defaultDiskGb: v.SANDBOX_DEFAULT_DISK_GB!,
        maxCpuCores: v.SANDBOX_MAX_CPU_CORES!,
        maxMemoryMb: v.SANDBOX_MAX_MEMORY_MB!,
        maxDiskGb: v.SANDBOX_MAX_DISK_GB!,
        pidsLimit: v.SANDBOX_PIDS_LIMIT!,
        maxSandboxes: v.OPERATOR_MAX_CAPACITY!,
        defaultIdleTimeoutSeconds: v.SANDBOX_DEFAULT_IDLE_TIMEOUT!,
        defaultMaxLifetimeSeconds: v.SANDBOX_DEFAULT_MAX_LIFETIME!,
        maxIdleTimeoutSeconds: v.SANDBOX_MAX_IDLE_TIMEOUT!,
        maxMaxLifetimeSeconds: v.SANDBOX_MAX_MAX_LIFETIME!,
        reaperIntervalSeconds: v.SANDBOX_REAPER_INTERVAL!,
        gcIntervalSeconds: v.SANDBOX_GC_INTERVAL!,
        gcHotRetentionSeconds: v.SANDBOX_GC_HOT_RETENTION!,
        gcWarmRetentionSeconds: v.SANDBOX_GC_WARM_RETENTION!,
        gcColdRetentionSeconds: v.SANDBOX_GC_COLD_RETENTION!,
        snapshotAutoCommit: v.SANDBOX_SNAPSHOT_AUTO_COMMIT!,
        snapshotDir: v.SANDBOX_SNAPSHOT_DIR ?? join(cfg.dataDir, 'snapshots'),
        workspaceDisk: workspaceDisk as 'loop' | 'none',
        diskDir: join(cfg.dataDir, 'disks'),
        snapshotMaxBytes: v.SANDBOX_SNAPSHOT_MAX_MB! * 1024 * 1024,
        storageBudgetBytes: v.SANDBOX_STORAGE_BUDGET_MB! * 1024 * 1024,
        healthTimeoutMs: v.SANDBOX_HEALTH_TIMEOUT_MS!,
        extraLabels: v.SANDBOX_EXTRA_LABELS ?? {},
        defaultExposedPorts: v.SANDBOX_EXPOSED_PORTS ?? [],
        egress: v.SANDBOX_EGRESS!,
        sidecarSocketDir: v.SANDBOX_SOCKET_DIR!,
      },
    });
    // Last to run at shutdown: the egress rules stay while anything else is still stopping.
    cleanup.push(() => manager.close());
    let tee: TeeInstance | undefined;
    if (cfg.mode === 'tee-instance') {
      // Before anything takes work: no evidence source here means this operator must not start.
      tee = await step(log, 'opening the TEE backend', async () =>
        openTeeInstance({
          settings: {
            backend: v.TEE_BACKEND,
            directType: v.TEE_DIRECT_TYPE,
            tsmRoot: v.TEE_TSM_REPORT_ROOT!,
            pccsUrl: v.TEE_PCCS_URL!,
            testAnchorsDir: v.TEE_TEST_ANCHORS_DIR,
            testMode: env.testMode,
          },
          chainId: BigInt(await createPublicClient({ transport: http(env.httpRpcUrl) }).getChainId()),
          serviceId: env.serviceId!,
          operator: key.address,
          injectSecrets: (id, secrets) => manager.injectSecrets(id, secrets),
          expectedMeasurements: v.SANDBOX_TEE_EXPECTED_MEASUREMENTS ?? [],
          requirePinned: v.SANDBOX_TEE_REQUIRE_PINNED_MEASUREMENT ?? true,
          acceptedTcbStatuses: v.TEE_ACCEPTED_TCB_STATUSES ?? ['UpToDate'],
        }),
      );
    }

    const report = await step(log, 'reconciling the store with the engine', () => manager.reconcile());
    log.info({ report }, 'reconciled');

    const chainClient = createPublicClient({ transport: http(env.httpRpcUrl) });
    // Sign-in messages name the URL clients reach (known only after listen when the port is 0).
    let listenUrl: string | undefined;
    const sessions = await SessionAuth.create({
      secret: v.SESSION_AUTH_SECRET!,
      store,
      siwe: {
        publicUrl: cfg.api.publicUrl ?? (() => listenUrl ?? 'http://127.0.0.1'),
        chainId: await chainClient.getChainId(),
      },
      allowLegacyMessage: v.AUTH_ALLOW_LEGACY_MESSAGE ?? false,
    });
    // One breaker for the API's sidecar calls and workflow execs, so the GC timer can prune it.
    const breaker = new CircuitBreaker();
    const sandboxesForApi = apiSandboxes(manager, new HandledCalls(store), env.serviceId);
    const sidecars = createApiSidecars(sandboxesForApi, { breaker });

    const blueprint =
      v.BLUEPRINT_CONTRACT ??
      (await resolveBlueprintContract({
        httpRpcUrl: env.httpRpcUrl,
        tangle: env.tangleContract,
        blueprintId: env.blueprintId,
      }));
    const chain = new BlueprintChain({ httpRpcUrl: env.httpRpcUrl, blueprint });

    let ready = false;
    let instanceSandboxId: string | undefined;
    const app = createOperatorApi(
      {
        sessions,
        sandboxes: sandboxesForApi,
        sidecars,
        store,
        metrics: registry,
        logger: log,
        mode: cfg.mode,
        capabilities: {
          operator: key.address,
          blueprintId: `${env.blueprintId}`,
          serviceId: `${env.serviceId}`,
          backends: ['docker'],
          tee: tee?.capabilities ?? false,
          images: [image, ...(v.SANDBOX_IMAGE_ALLOWLIST ?? [])],
          limits: {
            maxCpuCores: v.SANDBOX_MAX_CPU_CORES,
            maxMemoryMb: v.SANDBOX_MAX_MEMORY_MB,
            maxDiskGb: v.SANDBOX_MAX_DISK_GB,
            maxSandboxes: v.OPERATOR_MAX_CAPACITY,
          },
        },
        health: {
          runtime: () => new Docker().ping(),
          store: () => {
            if (store.closed) throw new Error('store closed');
          },
          chain: () => chainClient.getBlockNumber({ cacheTime: 0 }),
        },
        ready: () => ready,
        ...(cfg.mode === 'cloud' ? {} : { instanceSandboxId: () => instanceSandboxId }),
        ...(tee ? { tee: tee.service } : {}),
      },
      {
        corsAllowedOrigins: v.CORS_ALLOWED_ORIGINS ?? [],
        trustedProxies: v.TRUSTED_PROXIES ?? [],
        tls: v.OPERATOR_API_TLS ?? false,
        runs: {
          maxEvents: v.RUN_MAX_EVENTS!,
          maxBytes: v.RUN_MAX_BYTES!,
          maxTextChars: v.RUN_MAX_TEXT_CHARS!,
          retentionMs: v.RUN_RETENTION! * 1000,
        },
      },
    );
    const server = await step(log, 'starting the operator API', () =>
      serveOperatorApi(app, { host: cfg.api.host, port: cfg.api.port }),
    );
    cleanup.push(() => server.close());
    listenUrl = server.url;
    const publicUrl = cfg.api.publicUrl ?? server.url;
    log.info({ url: server.url, publicUrl }, 'operator API listening');

    const deps: BlueprintDeps = {
      operator: key.address,
      mode: cfg.mode,
      chain,
      // A deleted sandbox's agent runs (records and events) are deleted with it.
      sandboxes: withRunCleanup(manager, (id) => app.runs.forgetSandbox(id)),
      store,
      policy: {
        defaultImage: image,
        imageAllowlist: v.SANDBOX_IMAGE_ALLOWLIST ?? [],
        maxCpuCores: v.SANDBOX_MAX_CPU_CORES!,
        maxMemoryMb: v.SANDBOX_MAX_MEMORY_MB!,
        maxDiskGb: v.SANDBOX_MAX_DISK_GB!,
        teeAvailable: tee !== undefined,
      },
      operatorApiUrl: publicUrl,
      exec: async (id, c) => {
        const r = await (await sidecars.client(id)).exec({
          command: c.command,
          ...(c.cwd ? { cwd: c.cwd } : {}),
          ...(c.timeoutMs ? { timeout: c.timeoutMs } : {}),
        });
        await manager.touch(id).catch(() => {});
        return r;
      },
      logger: log,
    };
    if (cfg.mode !== 'cloud') {
      // Instance modes: the service's one sandbox, from its on-chain config, before taking jobs.
      const inst = await step(log, 'provisioning the instance sandbox', () =>
        provisionInstance({
          mode: cfg.mode as 'instance' | 'tee-instance',
          httpRpcUrl: env.httpRpcUrl,
          blueprint,
          serviceId: env.serviceId!,
          account: key.account,
          sandboxes: deps.sandboxes,
          policy: deps.policy,
          operatorApiUrl: publicUrl,
          log,
          ...(tee ? { tee: tee.instance } : {}),
        }),
      );
      instanceSandboxId = inst.sandbox.id;
    }
    const { router } = blueprintRouter(deps);
    // The operator's own blueprint calls: settle calls another operator completed, give back
    // reservations it gave up on, report sandboxes stopped for good (see follow-ups.ts).
    const writer = new BlueprintWriter({
      httpRpcUrl: env.httpRpcUrl,
      blueprint,
      account: key.account,
      logger: log,
    });
    const gone = new GoneReporter({
      sandboxes: manager,
      store,
      writer,
      serviceId: env.serviceId!,
      mode: cfg.mode,
      log,
      instanceSandboxId: () => instanceSandboxId,
      serviceActive: () => chain.isServiceActive(env.tangleContract, env.serviceId!),
    });
    const runner = createRunner(
      runnerOptionsFromEnvironment(env, key, router, {
        afterJob: afterJob(writer, log),
        logger: log,
        concurrency: v.JOB_CONCURRENCY!,
        pollIntervalMs: v.JOB_POLL_INTERVAL_MS!,
        confirmations: v.JOB_CONFIRMATIONS!,
        startBlock: v.JOB_START_BLOCK ?? 'latest',
        shutdownGraceMs: v.SHUTDOWN_GRACE_MS!,
      }),
    );
    await step(log, 'starting the job runner', () => runner.start());
    cleanup.push(() => runner.stop());

    manager.startBackground();
    cleanup.push(() => manager.stopBackground());
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
      sessions
        .collect()
        .then((r) =>
          log.debug({ collected: r, breakersPruned: breaker.prune() }, 'session and breaker collection'),
        )
        .catch((err) => log.warn({ err }, 'session collection failed'));
    }, v.SESSION_GC_INTERVAL! * 1000);
    gc.unref();
    cleanup.push(() => clearInterval(gc));

    ready = true;
    log.info(
      { operator: key.address, serviceId: `${env.serviceId}`, api: publicUrl, mode: cfg.mode },
      'operator ready',
    );
    let stopping: Promise<void> | undefined;
    return {
      apiUrl: server.url,
      publicUrl,
      key,
      stop(reason = 'stop requested') {
        stopping ??= (async () => {
          ready = false;
          log.info({ reason }, 'shutting down: no new jobs; finishing in-flight work');
          // Order (reverse of start): timers → runner (finishes in-flight) → API → store.
          await unwind();
          log.info('operator stopped');
        })();
        return stopping;
      },
    };
  } catch (e) {
    await unwind();
    throw e;
  }
}

/** The manager for job handlers, its delete also deleting the sandbox's runs (logged, never thrown). */
function withRunCleanup(manager: SandboxManager, forget: (id: string) => Promise<unknown>): SandboxRuntime {
  return {
    create: (p: Parameters<SandboxManager['create']>[0]) => manager.create(p),
    get: (id: string) => manager.get(id),
    getProvision: (callId: string) => manager.getProvision(callId),
    sidecarEndpoint: (id: string) => manager.sidecarEndpoint(id),
    async delete(id: string) {
      const r = await manager.delete(id);
      await forget(id).catch(() => {});
      return r;
    },
  };
}

/**
 * The runtime manager as the API wants it: get → undefined when unknown, failed creates visible,
 * provisions looked up by their key (this service + call id: one read, never a scan).
 */
export function apiSandboxes(manager: SandboxManager, handled: HandledCalls, serviceId: bigint) {
  return {
    get: (id: string) => {
      try {
        return manager.get(id);
      } catch {
        return undefined;
      }
    },
    list: (f: { owner: string }) => manager.list(f),
    stop: (id: string) => manager.stop(id),
    resume: (id: string) => manager.resume(id),
    snapshot: (id: string) => manager.snapshot(id),
    injectSecrets: (id: string, env: Record<string, string>) => manager.injectSecrets(id, env),
    wipeSecrets: (id: string) => manager.wipeSecrets(id),
    touch: (id: string) => manager.touch(id),
    sidecarEndpoint: (id: string) => manager.sidecarEndpoint(id),
    // Throws NOT_FOUND for a port the sandbox does not expose: the proxy answers 404.
    exposedPort: (id: string, port: number) => manager.exposedPort(id, port),
    async getProvision(callId: string) {
      try {
        return await manager.getProvision(callId, serviceId);
      } catch {
        // A create refused before the runtime saw it (validation): its reason is in the handled record.
        const h = await handled.failedCreate(serviceId, callId);
        if (!h) return undefined;
        const json = JSON.parse(h.value?.['json'] ?? '{}') as { error?: string; phase?: string };
        return {
          callId,
          sandboxId: '',
          phase: 'failed',
          failedPhase: json.phase ?? 'validation',
          error: json.error ?? h.reason ?? null,
        };
      }
    },
  };
}
