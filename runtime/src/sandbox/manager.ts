// SandboxManager: the runtime's one door to sandboxes on Docker. Every mutation of a sandbox runs
// under that sandbox's lock; creates are additionally serialized per call id, so a job retried
// for the same call id never makes a second container. Knows nothing of chains.
import { dirname, join } from 'node:path';
import pino, { type Logger } from 'pino';
import type { Registry } from 'prom-client';
import { boundDockerCalls } from '../docker/bounded-calls.ts';
import { DockerDriver } from '../docker/driver.ts';
import { EgressRules } from '../docker/egress-rules.ts';
import { type EngineStatus, EngineWatch } from '../docker/engine-watch.ts';
import { LoopDisks, loopDisksUnavailable } from '../docker/loop-disk.ts';
import { ensureSandboxNetwork, type SandboxNetwork } from '../docker/sandbox-network.ts';
import { RuntimeError } from '../errors.ts';
import { S3SnapshotStore } from '../snapshot-store/s3-store.ts';
import { KeyLock } from '../store/key-lock.ts';
import type { EncryptedStore } from '../store/store.ts';
import {
  parseSandboxRuntimeConfig,
  type SandboxRuntimeConfig,
  type SandboxRuntimeConfigInput,
} from './config.ts';
import { mustGet, RecordBook, type SandboxContext } from './context.ts';
import { PolicyEnforcer } from './egress-policy/enforcer.ts';
import { adoptSandboxes, restartIfEngineStopped } from './engine-return.ts';
import { parseUserEnv } from './env.ts';
import { exposedPort } from './exposed-port.ts';
import { resolveForkSource } from './fork.ts';
import {
  deleteSandbox,
  resumeSandbox,
  setSecrets,
  snapshotSandbox,
  stopSandbox,
  upgradeImage,
} from './lifecycle.ts';
import { addMember, removeMember } from './members.ts';
import { SandboxMetrics } from './metrics.ts';
import { runClaim } from './pool-claim.ts';
import { type ProvisionProgress, ProvisionProgressSchema, provisionKey } from './provision-progress.ts';
import {
  admit,
  callKey,
  existingProvision,
  forgetProvision,
  type ProvisionHooks,
  runProvision,
  withdrawProvision,
} from './provisioner.ts';
import { everyTick, gcTick, reaperTick, type TickResult } from './reaper.ts';
import { type ReconcileReport, reconcile } from './reconcile.ts';
import { type SandboxRecord, SandboxRecordSchema } from './record.ts';
import { type CreateSandboxParams, refuseAgentProgram, resolveCreate } from './request.ts';
import { checkEngineRuntimes } from './runtimes.ts';
import { endpointOf } from './sidecar-address.ts';
import { addSshKey, removeSshKey, type SshKey } from './ssh-keys.ts';
import { WarmPool } from './warm-pool.ts';

export interface SandboxManagerOptions {
  config: SandboxRuntimeConfigInput;
  store: EncryptedStore;
  /** prom-client Registry the runtime's metrics register on (none: no metrics). */
  registry?: Registry;
  driver?: DockerDriver;
  logger?: Logger;
  /** Clock (ms since epoch); tests inject one. */
  now?: () => number;
}

export class SandboxManager {
  readonly config: SandboxRuntimeConfig;
  readonly metrics: SandboxMetrics | undefined;
  readonly #ctx: SandboxContext;
  readonly #calls = new KeyLock();
  #timers: NodeJS.Timeout[] = [];
  #loaded = false;
  #rules: EgressRules | undefined;
  #pool: WarmPool | undefined;
  #enforcer: Promise<PolicyEnforcer> | undefined;

  private constructor(opts: SandboxManagerOptions) {
    this.config = parseSandboxRuntimeConfig(opts.config);
    this.metrics = opts.registry ? new SandboxMetrics(opts.registry) : undefined;
    const driver = opts.driver ?? new DockerDriver();
    const log = (opts.logger ?? pino({ level: 'silent' })).child({ component: 'sandbox-runtime' });
    // A silent engine fails each short call at its deadline instead of hanging it.
    boundDockerCalls(driver.docker, this.config.engineCallTimeoutMs);
    const engine = new EngineWatch(driver.docker, {
      log,
      waitMs: this.config.engineWaitMs,
      onBack: async (progress) => {
        await adoptSandboxes(this.#ctx, this.#lock, progress);
        await this.#pool?.check();
      },
    });
    const records = new RecordBook(opts.store.collection('sandboxes', SandboxRecordSchema), () =>
      this.metrics?.observe(records.all()),
    );
    this.#ctx = {
      cfg: this.config,
      driver,
      engine,
      network: { name: undefined, bridge: undefined, gateway: undefined },
      records,
      provisions: opts.store.collection('provisions', ProvisionProgressSchema),
      metrics: this.metrics,
      locks: new KeyLock(),
      now: opts.now ?? Date.now,
      log,
    };
    if (this.config.warmPool > 0) this.#pool = new WarmPool(this.#ctx, this.config.warmPool);
  }

  /** The warm pool (SANDBOX_WARM_POOL > 0), filled by startBackground(); undefined when off. */
  get warmPool(): WarmPool | undefined {
    return this.#pool;
  }

  /**
   * Loads the records from the store and sets up the sandbox network with its egress rules
   * (refusing to open when they cannot be installed). Call reconcile() before taking work, and
   * close() at shutdown.
   */
  static async open(opts: SandboxManagerOptions): Promise<SandboxManager> {
    const m = new SandboxManager(opts);
    if (m.config.workspaceDisk === 'loop') {
      const why = await loopDisksUnavailable();
      if (why) {
        throw new RuntimeError(
          'CONFIG_INVALID',
          `workspace disk limits (loop) cannot be used: ${why}; run the operator as root with util-linux and e2fsprogs, or set SANDBOX_WORKSPACE_DISK=none to run without them`,
        );
      }
      m.#ctx.driver.disks = new LoopDisks(m.config.diskDir ?? join(dirname(m.config.snapshotDir), 'disks'));
    }
    await checkEngineRuntimes(m.#ctx.driver.docker, m.config);
    // The object store is checked (allow-list, bucket) before anything else is set up.
    if (m.config.snapshotS3) {
      m.#ctx.objects = await S3SnapshotStore.open(m.config.snapshotS3, opts.store.objectKey(), m.#ctx.log);
    }
    await m.#ctx.records.load();
    const policy = m.config.egress;
    m.#ctx.network = await ensureSandboxNetwork(m.#ctx.driver.docker, policy);
    if (policy !== 'open' && m.#ctx.network.bridge) {
      const rules = new EgressRules({
        policy,
        bridge: m.#ctx.network.bridge,
        operatorId: m.config.operatorId,
      });
      await rules.install();
      m.#rules = rules;
    }
    // Policed sandboxes of a previous run: their rules and resolvers are rebuilt from the records.
    if (policy !== 'none' && m.#ctx.records.all().some((r) => r.network && r.state !== 'deleted')) {
      try {
        await m.#ensurePolicy();
        await m.#ctx.policy?.rebuild(m.#ctx.records.all());
      } catch (err) {
        // The rules of the previous run stay in the kernel (fail-closed): nothing new resolves.
        m.#ctx.log.error({ err: String(err) }, 'could not rebuild the per-sandbox network policies');
      }
    }
    m.#ctx.engine.start();
    m.#loaded = true;
    return m;
  }

  /** Sets up the enforcement of per-sandbox network policies (once; again after a failure). */
  async #ensurePolicy(): Promise<PolicyEnforcer> {
    if (this.#ctx.policy) return this.#ctx.policy;
    this.#enforcer ??= PolicyEnforcer.open({
      operatorId: this.config.operatorId,
      implicitDomains: this.config.implicitDomains,
      upstream: this.config.dnsUpstream,
      dir: join(dirname(this.config.snapshotDir), 'resolvers'),
      docker: this.#ctx.driver.docker,
      log: this.#ctx.log,
    }).catch((e: unknown) => {
      this.#enforcer = undefined;
      throw new RuntimeError(
        'NETWORK_POLICY_UNAVAILABLE',
        `this operator cannot enforce a per-sandbox network policy: ${(e as Error).message}`,
        { cause: e },
      );
    });
    this.#ctx.policy = await this.#enforcer;
    return this.#ctx.policy;
  }

  /** Per-sandbox network policies in force (undefined until the first policed sandbox). */
  get networkPolicies(): PolicyEnforcer | undefined {
    return this.#ctx.policy;
  }

  /** Whether the Docker engine answers (down: since when; adopting: sandboxes being restarted). */
  engineStatus(): EngineStatus {
    return this.#ctx.engine.status();
  }

  /** The network sandboxes join under this operator's egress policy. */
  get network(): SandboxNetwork {
    return this.#ctx.network;
  }

  /**
   * Stops the timers, removes the warm pool's unclaimed containers and this operator's egress
   * rules (sandboxes keep running).
   */
  async close(): Promise<void> {
    this.stopBackground();
    this.#ctx.engine.close();
    await this.#pool?.close();
    await this.#ctx.policy?.close();
    await this.#rules?.remove();
    this.#rules = undefined;
    this.#ctx.objects?.close();
  }

  get driver(): DockerDriver {
    return this.#ctx.driver;
  }

  #lock = <R>(id: string, fn: () => Promise<R>): Promise<R> => this.#ctx.locks.run(id, fn);

  /**
   * Provisions a sandbox and resolves once its sidecar is healthy. Idempotent by call id: a
   * repeat returns the same record (or the same failure) and never creates a second container.
   */
  async create(params: CreateSandboxParams, hooks: ProvisionHooks = {}): Promise<SandboxRecord> {
    this.#assertOpen();
    const req = resolveCreate(params, this.config);
    if (req.network) await this.#ensurePolicy();
    return this.#calls.run(callKey(req.serviceId, req.callId), async () => {
      const prior = await existingProvision(this.#ctx, req.serviceId, req.callId);
      // A provision a restart cut short is back to `pending` (reconcile): carry it to running now.
      const resumable = prior?.record?.state === 'pending' && prior.progress.phase !== 'failed';
      if (prior?.record && resumable) {
        const rec = prior.record;
        return this.#lock(rec.id, () => runProvision(this.#ctx, rec, hooks));
      }
      if (prior) return this.#priorOutcome(req.callId, prior.progress, prior.record);
      // A fork's source is checked (the caller's own, with a workspace) before anything is admitted.
      const fork = resolveForkSource(this.#ctx, req);
      const pool = this.#pool;
      // A test's replacement command, or a fork (its workspace comes first), needs its own container.
      // A policed sandbox needs a container on the policy network with its own MAC.
      const entry = hooks.cmd || fork || req.network ? undefined : pool?.take(req);
      if (pool && entry) {
        const rec = await admit(this.#ctx, req, entry.id).catch(async (e) => {
          await pool.destroy(entry);
          throw e;
        });
        pool.refill();
        return this.#lock(rec.id, () => runClaim(this.#ctx, pool, rec, entry, hooks));
      }
      const rec = await admit(this.#ctx, fork ? { ...req, image: fork.image } : req, undefined, fork?.source);
      // A cold create may leave the pool more than the capacity still allows: trimmed meanwhile.
      pool?.refill();
      return this.#lock(rec.id, () => runProvision(this.#ctx, rec, hooks));
    });
  }

  #priorOutcome(callId: string, p: ProvisionProgress, r: SandboxRecord | undefined): SandboxRecord {
    if (!r) throw new RuntimeError('INTERNAL', `provision for call ${callId} has no sandbox record`);
    if (p.phase === 'failed') {
      throw new RuntimeError(
        'PROVISION_FAILED',
        `provisioning for call ${callId} failed: ${p.error ?? 'unknown'}`,
        {
          details: { sandboxId: r.id, failedPhase: p.failedPhase },
        },
      );
    }
    return r;
  }

  /** How many sandbox records the manager holds in memory (a deleted one's is not among them). */
  get recordsHeld(): number {
    return this.#ctx.records.size;
  }

  /** The record (token and env included: internal use; the API shows publicView()). */
  get(id: string): SandboxRecord {
    return mustGet(this.#ctx, id);
  }

  /** `member`: the sandboxes that wallet is a member of (team access). */
  list(filter: { owner?: string; member?: string; serviceId?: string } = {}): SandboxRecord[] {
    const owner = filter.owner?.toLowerCase();
    const member = filter.member?.toLowerCase();
    return this.#ctx.records
      .all()
      .filter((r) => r.state !== 'deleted')
      .filter((r) => owner === undefined || r.owner.toLowerCase() === owner)
      .filter((r) => member === undefined || (r.members ?? []).includes(member))
      .filter((r) => filter.serviceId === undefined || r.serviceId === filter.serviceId)
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  /**
   * Progress of the create job `callId`. Call ids count per service, so pass the service id when
   * this operator serves several; without it the newest provision with that call id is returned.
   */
  async getProvision(
    callId: string | number | bigint,
    serviceId?: string | number | bigint,
  ): Promise<ProvisionProgress> {
    const c = String(callId);
    const p =
      serviceId !== undefined
        ? await this.#ctx.provisions.get(provisionKey(String(serviceId), c))
        : (await this.#ctx.provisions.find((x) => x.callId === c)).sort(
            (a, b) => b.startedAt - a.startedAt,
          )[0];
    if (!p) throw new RuntimeError('NOT_FOUND', `no provision for call ${c}`);
    return p;
  }

  /**
   * The create `callId` must not stand (its caller learnt the chain dropped it): its sandbox is
   * deleted and its provision recorded failed with `reason`, which a repeat of the call answers.
   */
  /** A reorg removed the create `callId` (its sandbox deleted first): the id may be provisioned afresh. */
  forgetProvision(serviceId: string, callId: string): Promise<void> {
    return this.#calls.run(callKey(serviceId, callId), () => forgetProvision(this.#ctx, serviceId, callId));
  }

  withdrawProvision(serviceId: string, callId: string, reason: string) {
    return this.#calls.run(callKey(serviceId, callId), () =>
      withdrawProvision(this.#ctx, serviceId, callId, reason, (id) => this.delete(id)),
    );
  }

  stop(id: string): Promise<SandboxRecord> {
    return this.#lock(id, () => stopSandbox(this.#ctx, id, 'user'));
  }

  resume(id: string): Promise<SandboxRecord> {
    return this.#lock(id, () => resumeSandbox(this.#ctx, id));
  }

  /**
   * Brings a sandbox the engine stopped back (an instance's keeper calls it), under its lock; a
   * stop by its owner or its timers is left alone (engine-return.ts).
   */
  restartIfEngineStopped(id: string): Promise<SandboxRecord> {
    return this.#lock(id, () => restartIfEngineStopped(this.#ctx, id));
  }

  delete(id: string): Promise<SandboxRecord> {
    return this.#lock(id, () => deleteSandbox(this.#ctx, id));
  }

  snapshot(
    id: string,
  ): Promise<{ snapshotImageId: string; createdAt: number; storage: 'local' | 'object_store' }> {
    return this.#lock(id, () => snapshotSandbox(this.#ctx, id));
  }

  /** Moves the sandbox to another local image, keeping id, token, owner and workspace. */
  upgradeImage(id: string, image: string): Promise<SandboxRecord> {
    return this.#lock(id, () => upgradeImage(this.#ctx, id, image));
  }

  /** Phase 2: replaces the user secrets; the container is recreated with id, token, owner kept. */
  async injectSecrets(id: string, env: Record<string, string>): Promise<SandboxRecord> {
    const secrets = parseUserEnv(env, 'secrets', { minKeys: 1 });
    if (mustGet(this.#ctx, id).agent === false) refuseAgentProgram(secrets, 'secrets');
    return this.#lock(id, () => setSecrets(this.#ctx, id, secrets));
  }

  wipeSecrets(id: string): Promise<SandboxRecord> {
    return this.#lock(id, () => setSecrets(this.#ctx, id, {}));
  }

  /** Team access: lets `address` use the sandbox as itself (idempotent; stored with the record). */
  addMember(id: string, address: string): Promise<SandboxRecord> {
    return this.#lock(id, () => addMember(this.#ctx, id, address));
  }

  removeMember(id: string, address: string): Promise<SandboxRecord> {
    return this.#lock(id, () => removeMember(this.#ctx, id, address));
  }

  /** SSH: lets the public key in (idempotent; stored with the record, so it survives stop/resume). */
  addSshKey(id: string, publicKey: string): Promise<{ key: SshKey; record: SandboxRecord }> {
    return this.#lock(id, () => addSshKey(this.#ctx, id, publicKey));
  }

  /** Revokes a key (its fingerprint or its .pub line); the last one gone, SSH is off. */
  removeSshKey(id: string, which: string): Promise<SandboxRecord> {
    return this.#lock(id, () => removeSshKey(this.#ctx, id, which));
  }

  /** Records activity (resets the idle timer). Cheap; no lock: a single-record update. */
  async touch(id: string): Promise<void> {
    const r = mustGet(this.#ctx, id);
    if (r.state !== 'running') return;
    const now = this.#ctx.now();
    await this.#ctx.records.patch(id, (cur) => ({
      ...cur,
      lastActivityAt: Math.max(cur.lastActivityAt, now),
    }));
  }

  /**
   * Where the API layer reaches the sidecar (socketPath set: HTTP over that Unix socket, the
   * sandbox has no network). Internal: never log or return the token.
   */
  sidecarEndpoint(id: string): { url: string; token: string; socketPath?: string; startedAt?: number } {
    const r = mustGet(this.#ctx, id);
    if (r.state !== 'running' || !r.sidecarUrl) {
      throw new RuntimeError(
        r.state === 'stopped' ? 'SANDBOX_STOPPED' : 'SANDBOX_NOT_RUNNING',
        `sandbox ${id} is ${r.state}; ${r.state === 'stopped' ? 'resume it first' : 'it has no sidecar to reach'}`,
      );
    }
    return {
      ...endpointOf(r.sidecarUrl, r.token),
      ...(r.startedAt !== null ? { startedAt: r.startedAt } : {}),
    };
  }

  /**
   * Where the host reaches a container port the sandbox exposed (loopback only), read from the
   * live container, never from a stored port (exposed-port.ts).
   */
  exposedPort(id: string, containerPort: number): Promise<{ host: '127.0.0.1'; port: number }> {
    return exposedPort(this.#ctx, id, containerPort);
  }

  /** Startup reconciliation; the warm pool's own containers (when it runs) are left alone. */
  reconcile(): Promise<ReconcileReport> {
    return reconcile(this.#ctx, this.#lock, this.#pool?.ids() ?? new Set());
  }

  reaperTick(now: number = this.#ctx.now()): Promise<TickResult> {
    return reaperTick(this.#ctx, this.#lock, now);
  }

  gcTick(now: number = this.#ctx.now()): Promise<TickResult> {
    return gcTick(this.#ctx, this.#lock, now);
  }

  /**
   * Runs the reaper and GC on the configured intervals (unref'd: they never hold the process), and
   * fills the warm pool and checks its containers' health. Call after reconcile().
   */
  startBackground(): void {
    if (this.#timers.length > 0) return;
    const every = (seconds: number, tick: () => Promise<TickResult>, what: string) =>
      this.#timers.push(everyTick(this.#ctx.log, seconds, tick, what));
    every(this.config.reaperIntervalSeconds, () => this.reaperTick(), 'reaper');
    every(this.config.gcIntervalSeconds, () => this.gcTick(), 'gc');
    const pool = this.#pool;
    if (pool) {
      pool.refill();
      every(
        this.config.warmPoolCheckSeconds,
        async () => ({
          acted: (await pool.check()).replaced.map((id) => ({ id, action: 'replaced' })),
          errors: [],
        }),
        'warm pool',
      );
    }
  }

  stopBackground(): void {
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
  }

  #assertOpen(): void {
    if (!this.#loaded) throw new RuntimeError('INTERNAL', 'SandboxManager.open() was not awaited');
  }
}
