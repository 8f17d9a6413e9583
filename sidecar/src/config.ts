// The sidecar's configuration: read once from the container env at startup, validated, with documented defaults.
import * as z from './schema.ts';
import { checkTeeEnv, parseTeeContext, TEE_CHILD_ENV_NAMES } from './tee/context.ts';
import { UserEnv } from './user-env/user-env.ts';

const intFrom = (def: number) => z._default(z.coerce.number().check(z.int(), z.positive()), def);

const EnvSchema = z.object({
  SIDECAR_PORT: z._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(65535)), 8080),
  SIDECAR_HOST: z._default(z.string(), '0.0.0.0'),
  /** When set, the sidecar listens on this Unix socket only (no TCP): sandboxes without a network. */
  SIDECAR_SOCKET: z.optional(z.string()),
  SIDECAR_AUTH_TOKEN: z
    .string({ error: 'SIDECAR_AUTH_TOKEN is required: the operator sets a per-sandbox bearer token' })
    .check(z.minLength(16, 'SIDECAR_AUTH_TOKEN must be at least 16 characters')),
  AGENT_WORKSPACE_ROOT: z._default(z.string().check(z.startsWith('/')), '/home/agent'),
  AGENT_HOME: z._default(z.string().check(z.startsWith('/')), '/home/agent'),
  AGENT_SUBPROCESS_UID: z._default(z.coerce.number().check(z.int(), z.minimum(0)), 1000),
  AGENT_SUBPROCESS_GID: z._default(z.coerce.number().check(z.int(), z.minimum(0)), 1000),
  SIDECAR_EXEC_TIMEOUT_MS: intFrom(300_000),
  SIDECAR_AGENT_TIMEOUT_MS: intFrom(1_800_000),
  SIDECAR_OUTPUT_LIMIT_BYTES: intFrom(1024 * 1024),
  SIDECAR_MAX_BODY_BYTES: intFrom(32 * 1024 * 1024),
  SIDECAR_MAX_FILE_BYTES: intFrom(16 * 1024 * 1024),
  SIDECAR_MAX_TERMINALS: intFrom(32),
  SIDECAR_SSE_KEEPALIVE_MS: intFrom(15_000),
  SIDECAR_DEFAULT_HARNESS: z.optional(z.string()),
  SIDECAR_AGENT_COMMAND: z.optional(z.string()),
  /** `dstack`: this sidecar runs in a Phala/dstack CVM and holds the sealing key (TEE_BACKEND=phala). */
  SIDECAR_TEE: z.optional(z.enum(['dstack'])),
  /** The binding context `chainId:serviceId:sandboxId:0xoperator`, set by the operator at deploy. */
  SIDECAR_TEE_CONTEXT: z.optional(z.string()),
  SIDECAR_DSTACK_SOCKET: z._default(z.string().check(z.startsWith('/')), '/run/tee/dstack.sock'),
  SIDECAR_LOG_LEVEL: z._default(
    z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']),
    'info',
  ),
});

export interface SidecarConfig {
  port: number;
  host: string;
  /** Unix socket path to listen on instead of host:port (SANDBOX_EGRESS=none). */
  socketPath: string | undefined;
  authToken: string;
  workspaceRoot: string;
  agentHome: string;
  uid: number;
  gid: number;
  execTimeoutMs: number;
  agentTimeoutMs: number;
  outputLimitBytes: number;
  maxBodyBytes: number;
  maxFileBytes: number;
  maxTerminals: number;
  sseKeepAliveMs: number;
  defaultHarness: string | undefined;
  agentCommand: string | undefined;
  logLevel: string;
  /**
   * TEE mode (phala): the dstack agent's socket and the binding context (with the owner); undefined
   * elsewhere. Then `authToken` (the operator's) reaches only /health and /tee/{attestation,
   * public-key,channel}; every owner route takes only the owner channel (routes/tee-channel.ts).
   */
  tee: { kind: 'dstack'; context: string; dstackSocket: string } | undefined;
  /** The environment every child starts from: the container's (platform) env minus the token. */
  childEnv: Record<string, string>;
  /** The user's env (create env, secrets), delivered over PUT /env; children only. */
  userEnv: UserEnv;
}

/** Keys a child process must never see, whatever the request says. */
export const PRIVATE_ENV_KEYS = ['SIDECAR_AUTH_TOKEN'] as const;

export function stripPrivateEnv(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined || (PRIVATE_ENV_KEYS as readonly string[]).includes(k)) continue;
    out[k] = v;
  }
  return out;
}

/** Env the operator sets for the mounted sidecar alone (its OpenSSL config, its HOME, PATH). */
const KIT_ONLY_ENV = ['SIDECAR_IMAGE_ENV', 'OPENSSL_CONF', 'OPENSSL_MODULES', 'HOME', 'PATH'];

/**
 * The children's base env. A registry image (the sidecar mounted from the operator's kit) has its
 * own ENV in SIDECAR_IMAGE_ENV, a JSON object: the container's copies of those keys are empty
 * (so none reached the root sidecar or its loader); the agent's processes get the values.
 */
export function withImageEnv(env: Record<string, string | undefined>): Record<string, string> {
  const raw = env.SIDECAR_IMAGE_ENV;
  if (raw === undefined) return stripPrivateEnv(env);
  let image: Record<string, string> = {};
  try {
    const parsed: unknown = JSON.parse(raw);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      image = Object.fromEntries(
        Object.entries(parsed as Record<string, unknown>).filter(
          (kv): kv is [string, string] =>
            typeof kv[1] === 'string' && !kv[0].startsWith('SIDECAR_') && !kv[0].startsWith('AGENT_'),
        ),
      );
    }
  } catch {}
  const own: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) {
    if (KIT_ONLY_ENV.includes(k) || v === '' || Object.hasOwn(image, k)) continue;
    own[k] = v;
  }
  return stripPrivateEnv({ ...image, ...own });
}

export function loadConfig(env: Record<string, string | undefined> = process.env): SidecarConfig {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const msg = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid sidecar environment: ${msg}`);
  }
  const e = parsed.data;
  if (e.SIDECAR_SOCKET && !e.SIDECAR_SOCKET.startsWith('/')) {
    throw new Error('invalid sidecar environment: SIDECAR_SOCKET must be an absolute path');
  }
  if (e.SIDECAR_TEE) {
    try {
      parseTeeContext(e.SIDECAR_TEE_CONTEXT ?? '');
      checkTeeEnv(env);
    } catch (err) {
      throw new Error(`invalid sidecar environment: ${(err as Error).message}`);
    }
  }
  return {
    port: e.SIDECAR_PORT,
    host: e.SIDECAR_HOST,
    socketPath: e.SIDECAR_SOCKET || undefined,
    authToken: e.SIDECAR_AUTH_TOKEN,
    workspaceRoot: e.AGENT_WORKSPACE_ROOT,
    agentHome: e.AGENT_HOME,
    uid: e.AGENT_SUBPROCESS_UID,
    gid: e.AGENT_SUBPROCESS_GID,
    execTimeoutMs: e.SIDECAR_EXEC_TIMEOUT_MS,
    agentTimeoutMs: e.SIDECAR_AGENT_TIMEOUT_MS,
    outputLimitBytes: e.SIDECAR_OUTPUT_LIMIT_BYTES,
    maxBodyBytes: e.SIDECAR_MAX_BODY_BYTES,
    maxFileBytes: e.SIDECAR_MAX_FILE_BYTES,
    maxTerminals: e.SIDECAR_MAX_TERMINALS,
    sseKeepAliveMs: e.SIDECAR_SSE_KEEPALIVE_MS,
    defaultHarness: e.SIDECAR_DEFAULT_HARNESS || undefined,
    agentCommand: e.SIDECAR_AGENT_COMMAND || undefined,
    logLevel: e.SIDECAR_LOG_LEVEL,
    tee: e.SIDECAR_TEE
      ? { kind: e.SIDECAR_TEE, context: e.SIDECAR_TEE_CONTEXT!, dstackSocket: e.SIDECAR_DSTACK_SOCKET }
      : undefined,
    // In a CVM the rest of the env is the operator's choice: children get only the image's basics.
    childEnv: e.SIDECAR_TEE
      ? Object.fromEntries(TEE_CHILD_ENV_NAMES.flatMap((k) => (env[k] === undefined ? [] : [[k, env[k]!]])))
      : withImageEnv(env),
    userEnv: new UserEnv(),
  };
}
