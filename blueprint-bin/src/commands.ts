// The subcommands of agent-sandbox-operator: each reads its configuration once, then acts.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { agentSandboxErrorAbi } from '@agent-sandbox/contracts';
import type { EncryptedStore } from '@agent-sandbox/runtime';
import { createKeystore, isSdkError, KEYSTORE_DEV_FILE, loadKeystore, register } from '@agent-sandbox/sdk';
import { encodeAbiParameters, formatEther, type Hex } from 'viem';
import { type Command, ConfigError, loadConfig } from './config.ts';
import { createLogger } from './logger.ts';

const out = (v: unknown) =>
  process.stdout.write(`${typeof v === 'string' ? v : JSON.stringify(v, null, 2)}\n`);

function config(command: Command, pretty: boolean, env: Record<string, string | undefined> = process.env) {
  const cfg = loadConfig(command, env);
  const log = createLogger({ level: cfg.logLevel, pretty: pretty || cfg.pretty });
  return { cfg, log };
}

/** Runs until SIGTERM/SIGINT, then shuts down cleanly; a second signal exits at once. */
export async function cmdRun(opts: {
  pretty: boolean;
  env?: Record<string, string | undefined>;
}): Promise<number> {
  const { cfg, log } = config('run', opts.pretty, opts.env);
  // The runtime stack loads only for the commands that use it.
  const { startOperator } = await import('./operator.ts');
  const op = await startOperator(cfg, log);
  await new Promise<void>((done) => {
    let first = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      // A group kill (timeout, systemd, the launcher forwarding) delivers the same signal twice at
      // once: only a repeat after 2 s means "exit now".
      if (first > 0) {
        if (Date.now() - first < 2000) return;
        log.warn({ signal: sig }, 'second signal: exiting without waiting');
        process.exit(1);
      }
      first = Date.now();
      op.stop(`received ${sig}`).then(done, (err) => {
        log.error({ err }, 'shutdown failed');
        done();
      });
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    // Announced only once a signal is handled: a supervisor that stops the operator right after
    // "ready" still gets a clean shutdown (its egress rules removed), not the default kill.
    process.stdout.write(
      `${JSON.stringify({ event: 'ready', operator: op.key.address, api: op.publicUrl })}\n`,
    );
  });
  return 0;
}

export async function cmdRegister(opts: {
  pretty: boolean;
  capacity?: string | undefined;
  rpcAddress?: string | undefined;
}): Promise<number> {
  const { cfg, log } = config('register', opts.pretty);
  const env = cfg.env!;
  let capacity = cfg.values.OPERATOR_MAX_CAPACITY ?? 0;
  if (opts.capacity !== undefined) {
    if (!/^\d+$/.test(opts.capacity) || Number(opts.capacity) > 4_294_967_295) {
      throw new ConfigError([{ variable: '--capacity', problem: 'expected a uint32 number' }]);
    }
    capacity = Number(opts.capacity);
  }
  const key = await loadKeystore({
    uri: env.keystoreUri,
    password: env.keystorePassword,
    testMode: env.testMode,
  });
  // The blueprint reads abi.encode(uint32 capacity); 0 (or no input) means its default.
  const registrationInputs: Hex | undefined =
    capacity > 0 ? encodeAbiParameters([{ type: 'uint32' }], [capacity]) : undefined;
  const rpcAddress = opts.rpcAddress ?? cfg.values.OPERATOR_RPC_ADDRESS ?? cfg.api.publicUrl ?? '';
  const r = await register({
    httpRpcUrl: env.httpRpcUrl,
    tangle: env.tangleContract,
    blueprintId: env.blueprintId,
    key,
    rpcAddress,
    registrationInputs,
    managerErrors: agentSandboxErrorAbi,
    captureOnlyPath: env.registrationCaptureOnly ? env.registrationOutputPath : undefined,
    logger: log,
  }).catch((e: unknown) => {
    throw withStakeHint(e);
  });
  out({ ...r, operator: key.address, blueprintId: `${env.blueprintId}`, capacity, rpcAddress });
  return 0;
}

/** Tangle refused the registration for staking: say which command fixes it. */
function withStakeHint(e: unknown): unknown {
  const name = isSdkError(e, 'REGISTRATION') ? e.details?.['errorName'] : undefined;
  if (name !== 'OperatorNotActive' && name !== 'InsufficientStake') return e;
  const d = (e as { details?: Record<string, unknown> }).details ?? {};
  const missing =
    typeof d['requiredWei'] === 'string' && typeof d['stakedWei'] === 'string'
      ? BigInt(d['requiredWei']) - BigInt(d['stakedWei'])
      : undefined;
  const how =
    missing !== undefined && missing > 0n
      ? `agent-sandbox-operator stake --amount ${formatEther(missing)}`
      : "agent-sandbox-operator stake --amount N (in units of the bond, at least the staking contract's minimum; `agent-sandbox-operator stake` alone shows it)";
  return Object.assign(
    new Error(
      `${(e as Error).message}\nTo fix: ${how} with STAKING_CONTRACT set to Tangle's staking contract, then register again.`,
      { cause: e },
    ),
    { code: 'REGISTRATION' },
  );
}

export async function cmdKeys(opts: { action: string | undefined; force: boolean }): Promise<number> {
  const { cfg } = config('keys', false);
  const v = cfg.values;
  const uri = v.KEYSTORE_URI!;
  if (opts.action === 'show') {
    const key = await loadKeystore({ uri, password: v.KEYSTORE_PASSWORD, testMode: v.TEST_MODE });
    out({ address: key.address, publicKey: key.publicKey, kind: key.kind, path: key.path });
    return 0;
  }
  if (opts.action === 'create') {
    if (v.KEYSTORE_PASSWORD === undefined && !v.TEST_MODE) {
      throw new ConfigError([
        {
          variable: 'KEYSTORE_PASSWORD',
          problem: 'is required to create an encrypted key (or set TEST_MODE=true for a plain dev key)',
        },
      ]);
    }
    const isDir =
      uri.endsWith('/') ||
      (await stat(uri).catch(() => undefined))?.isDirectory() ||
      !/\.(json|key)$/.test(uri);
    if (isDir) await mkdir(uri, { recursive: true, mode: 0o700 });
    const k = await createKeystore({
      path: isDir ? `${uri.replace(/\/$/, '')}/` : uri,
      password: v.KEYSTORE_PASSWORD,
      overwrite: opts.force,
    });
    out({ created: k.path, address: k.address, publicKey: k.publicKey, kind: k.kind });
    return 0;
  }
  process.stderr.write('usage: agent-sandbox-operator keys <create|show> (see --help)\n');
  return 2;
}

/** Reads the secret kept in DATA_DIR, or generates and keeps one (0600). Never printed. */
export async function devnetSecret(dataDir: string): Promise<string> {
  const file = join(dataDir, 'session-auth-secret');
  const existing = await readFile(file, 'utf8').catch(() => undefined);
  if (existing && /^[0-9a-f]{64}$/.test(existing.trim())) {
    await chmod(file, 0o600);
    return existing.trim();
  }
  const secret = randomBytes(32).toString('hex');
  await writeFile(file, `${secret}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return secret;
}

/**
 * The devnet operator's RPC: HTTP_RPC_URL / WS_RPC_URL when set (a proxy in front of the devnet's
 * anvil, say), else the devnet's own. A set HTTP_RPC_URL must reach the devnet's chain — its chain
 * id and its Tangle contract — or the command refuses to start.
 */
async function devnetRpc(
  info: { chainId: number; rpcUrl: string; contracts: { tangle: Hex } },
  env: Record<string, string | undefined>,
): Promise<{ http: string; ws: string | undefined }> {
  const http = env['HTTP_RPC_URL'];
  const ws = env['WS_RPC_URL'];
  if (!http) return { http: info.rpcUrl, ws };
  const { createPublicClient, http: transport } = await import('viem');
  const client = createPublicClient({ transport: transport(http, { retryCount: 0, timeout: 5000 }) });
  let why: string | undefined;
  try {
    const [chainId, code] = await Promise.all([
      client.getChainId(),
      client.getCode({ address: info.contracts.tangle }),
    ]);
    if (chainId !== info.chainId) why = `reaches chain ${chainId}, not the devnet's ${info.chainId}`;
    else if (!code || code === '0x') why = `has no Tangle contract at ${info.contracts.tangle}`;
  } catch (e) {
    why = `does not answer (${(e as Error).message.split('\n')[0]})`;
  }
  if (why) {
    throw new ConfigError([
      {
        variable: 'HTTP_RPC_URL',
        problem: `(${http}) ${why}: with \`devnet\` it must reach the devnet's anvil at ${info.rpcUrl} (directly or through a proxy); unset it to use the devnet's own`,
      },
    ]);
  }
  return { http, ws };
}

export async function cmdDevnet(opts: {
  pretty: boolean;
  operator: string;
  stateFile?: string | undefined;
  /** The real-protocol mode's two files (`--tangle-state`, `--tangle-deployment`). */
  tangleState?: string | undefined;
  tangleDeployment?: string | undefined;
}): Promise<number> {
  if (opts.operator !== 'operator1' && opts.operator !== 'operator2') {
    throw new ConfigError([{ variable: '--operator', problem: 'expected operator1 or operator2' }]);
  }
  const which = opts.operator;
  const log = createLogger({
    level: process.env['LOG_LEVEL'] ?? 'info',
    pretty: opts.pretty || process.env['LOG_PRETTY'] === 'true',
  });
  // Imported here: the devnet scripts (anvil, forge output) are only needed by this command.
  const { startDevnet, DevnetError } = await import('@agent-sandbox/devnet');
  const tangle =
    opts.tangleState || opts.tangleDeployment
      ? { stateFile: opts.tangleState, deploymentFile: opts.tangleDeployment }
      : undefined;
  const devnet = await startDevnet({
    reuse: true,
    detach: true,
    ...(opts.stateFile ? { stateFile: resolve(opts.stateFile) } : {}),
    tangle,
    log: (line) => log.info({ step: 'devnet' }, line),
  }).catch((err: unknown) => {
    if (err instanceof DevnetError && ['TANGLE_STATE_MISSING', 'STATE_INVALID'].includes(err.code)) {
      throw new ConfigError([{ variable: '--tangle-state / --tangle-deployment', problem: err.message }]);
    }
    throw err;
  });
  const info = devnet.info;
  const rpc = await devnetRpc(info, process.env);
  const dataDir = resolve(process.env['DATA_DIR'] ?? resolve(devnet.stateFile, '..', which));
  await mkdir(join(dataDir, 'keystore'), { recursive: true, mode: 0o700 });
  const keyFile = join(dataDir, 'keystore', KEYSTORE_DEV_FILE);
  if (!(await stat(keyFile).catch(() => undefined))) {
    await createKeystore({ path: keyFile, privateKey: info.accounts[which].privateKey });
  }
  const env: Record<string, string | undefined> = {
    ...process.env,
    HTTP_RPC_URL: rpc.http,
    WS_RPC_URL: rpc.ws,
    TANGLE_CONTRACT: info.contracts.tangle,
    // On tnt-core's Tangle the manager comes from getBlueprint, as on a real network.
    BLUEPRINT_CONTRACT: info.protocol ? undefined : info.contracts.cloud,
    BLUEPRINT_ID: `${info.blueprints.cloud}`,
    SERVICE_ID: `${info.services.cloud}`,
    DATA_DIR: dataDir,
    KEYSTORE_URI: join(dataDir, 'keystore'),
    TEST_MODE: 'true',
    OPERATOR_API_PORT: process.env['OPERATOR_API_PORT'] ?? (which === 'operator1' ? '9090' : '9091'),
    SESSION_AUTH_SECRET: process.env['SESSION_AUTH_SECRET'] ?? (await devnetSecret(dataDir)),
  };
  log.info(
    { rpc: rpc.http, ws: rpc.ws, devnetRpc: info.rpcUrl, serviceId: info.services.cloud, dataDir },
    `devnet ready; starting ${which}`,
  );
  return cmdRun({ pretty: opts.pretty, env });
}

export async function cmdStatus(opts: { url?: string | undefined; local: boolean }): Promise<number> {
  const { cfg } = config('status', false);
  const url = (opts.url ?? cfg.api.publicUrl ?? `http://${cfg.api.host}:${cfg.api.port}`).replace(/\/$/, '');
  if (!opts.local) {
    try {
      const get = async (path: string) => {
        // With METRICS_TOKEN the operator's own status shows what /health keeps from anonymous callers.
        const token = cfg.values.METRICS_TOKEN;
        const r = await fetch(`${url}${path}`, {
          signal: AbortSignal.timeout(5000),
          ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
        });
        return { status: r.status, body: (await r.json()) as unknown };
      };
      const [health, capabilities] = await Promise.all([get('/health'), get('/api/capabilities')]);
      out({ url, health: health.body, capabilities: capabilities.body });
      return health.status === 200 ? 0 : 1;
    } catch (e) {
      process.stderr.write(
        `operator API at ${url} does not answer (${(e as Error).message}); reading the local store\n`,
      );
    }
  }
  const dataDir = cfg.dataDir;
  const secret = cfg.values.SESSION_AUTH_SECRET;
  if (!dataDir || !secret) {
    throw new ConfigError([
      ...(dataDir ? [] : [{ variable: 'DATA_DIR', problem: 'is required for the local store summary' }]),
      ...(secret
        ? []
        : [{ variable: 'SESSION_AUTH_SECRET', problem: 'is required for the local store summary' }]),
    ]);
  }
  const { EncryptedStore: Store } = await import('@agent-sandbox/runtime');
  let store: EncryptedStore;
  try {
    store = await Store.open({ dir: join(dataDir, 'store'), secret });
  } catch (e) {
    process.stderr.write(
      `cannot open the store in ${dataDir} (${(e as Error).message}); is the operator running? use --url\n`,
    );
    return 1;
  }
  try {
    const sandboxes = await store.collection<{ state: string }>('sandboxes').values();
    const byState: Record<string, number> = {};
    for (const s of sandboxes) byState[s.state] = (byState[s.state] ?? 0) + 1;
    out({
      dataDir,
      sandboxes: byState,
      handledCalls: await store.collection('handled-calls').count(),
      workflows: await store.collection('workflows').count(),
    });
  } finally {
    await store.close();
  }
  return 0;
}
