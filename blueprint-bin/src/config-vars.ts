// Every environment variable the operator reads: its zod parser, default, requiredness and
// documentation (the README's Configuration table is generated from this table).

import { envAddress, envUint64 } from '@agent-sandbox/sdk';
import { z } from 'zod';
import { TEE_VARIABLES } from './config-vars-tee.ts';
import { WORKFLOW_VARIABLES } from './config-vars-workflows.ts';

export type Command = 'run' | 'register' | 'keys' | 'status' | 'devnet';

// ── value parsers (string in, typed value out; messages never echo the value) ─────────────────
const text = z.string().trim().min(1, 'must not be empty');
const bool = z
  .string()
  .trim()
  .toLowerCase()
  .refine((s) => ['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off'].includes(s), 'expected true or false')
  .transform((s) => ['1', 'true', 'yes', 'on'].includes(s));
const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'expected a whole number')
    .transform(Number)
    .refine((n) => n >= min && n <= max, `expected a number from ${min} to ${max}`);
const num = (min: number) =>
  z
    .string()
    .trim()
    .refine((s) => s !== '' && Number.isFinite(Number(s)), 'expected a number')
    .transform(Number)
    .refine((n) => n >= min, `expected a number >= ${min}`);
const url = (...schemes: string[]) =>
  z
    .string()
    .trim()
    .refine(
      (s) => {
        try {
          return schemes.includes(new URL(s).protocol);
        } catch {
          return false;
        }
      },
      `expected a ${schemes.map((p) => p.replace(':', '://')).join(' or ')} URL`,
    )
    .transform((s) => s.replace(/\/+$/, ''));
const list = z.string().transform((s) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean),
);
const labels = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .refine(
    (xs) => xs.every((x) => /^[a-zA-Z0-9._/-]+=[^,]*$/.test(x)),
    'expected key=value pairs separated by commas',
  )
  .transform((xs) =>
    Object.fromEntries(xs.map((x) => [x.slice(0, x.indexOf('=')), x.slice(x.indexOf('=') + 1)])),
  );
const ports = list
  .refine(
    (xs) => xs.every((x) => /^\d+$/.test(x) && Number(x) >= 1 && Number(x) <= 65535),
    'expected port numbers 1-65535 separated by commas',
  )
  .transform((xs) => [...new Set(xs.map(Number))])
  .refine((xs) => xs.length <= 8, 'at most 8 ports');
const secretHex = z
  .string()
  .trim()
  .regex(
    /^(0x)?[0-9a-fA-F]{64}$/,
    'must be 32 bytes as 64 hex characters (generate one: openssl rand -hex 32)',
  );

export type Group = 'Chain and keys' | 'Jobs' | 'Operator' | 'Operator API' | 'Sandboxes' | 'TEE';

export interface Var<S extends z.ZodType = z.ZodType> {
  group: Group;
  schema: S;
  /** Raw default applied when unset (parsed like a set value). */
  def?: string;
  /** How the README shows a computed default. */
  defaultDoc?: string;
  /** Commands for which the variable must be set. */
  requiredFor?: readonly Command[];
  /** Never echoed (it is not anyway) and marked in the table. */
  secret?: boolean;
  doc: string;
}

const v = <S extends z.ZodType>(spec: Var<S>): Var<S> => spec;
const CHAIN_CMDS = ['run', 'register'] as const;

/** Every variable the operator reads. Order = README order. */
export const VARIABLES = {
  HTTP_RPC_URL: v({
    group: 'Chain and keys',
    schema: url('http:', 'https:'),
    requiredFor: CHAIN_CMDS,
    doc: 'JSON-RPC endpoint of the chain holding Tangle',
  }),
  WS_RPC_URL: v({
    group: 'Chain and keys',
    schema: url('ws:', 'wss:'),
    defaultDoc: '(none: polling)',
    doc: 'WebSocket RPC; new heads wake the job producer at once',
  }),
  TANGLE_CONTRACT: v({
    group: 'Chain and keys',
    schema: envAddress,
    requiredFor: CHAIN_CMDS,
    doc: 'Tangle core contract (proxy) address',
  }),
  BLUEPRINT_ID: v({
    group: 'Chain and keys',
    schema: envUint64,
    requiredFor: CHAIN_CMDS,
    doc: 'Blueprint id on Tangle',
  }),
  SERVICE_ID: v({
    group: 'Chain and keys',
    schema: envUint64,
    requiredFor: ['run'],
    doc: 'Service whose jobs this operator runs (unset in registration mode)',
  }),
  BLUEPRINT_CONTRACT: v({
    group: 'Chain and keys',
    schema: envAddress,
    defaultDoc: "read from Tangle's getBlueprint",
    doc: 'The blueprint service-manager contract (emits OperatorAssigned/OperatorRouted)',
  }),
  STAKING_CONTRACT: v({
    group: 'Chain and keys',
    schema: envAddress,
    defaultDoc: '(none)',
    doc: 'Staking contract (real deployments)',
  }),
  STATUS_REGISTRY_CONTRACT: v({
    group: 'Chain and keys',
    schema: envAddress,
    defaultDoc: '(none)',
    doc: 'Status registry contract (real deployments)',
  }),
  PROTOCOL: v({
    group: 'Chain and keys',
    schema: z.literal('tangle', { message: 'only "tangle" is supported' }),
    def: 'tangle',
    doc: 'Protocol the blueprint manager names',
  }),
  KEYSTORE_URI: v({
    group: 'Chain and keys',
    schema: text,
    def: './keystore',
    doc: 'Operator key file, or a directory holding operator-ecdsa.json / operator-ecdsa.key',
  }),
  KEYSTORE_PASSWORD: v({
    group: 'Chain and keys',
    schema: z.string().min(1),
    secret: true,
    defaultDoc: '(none)',
    doc: 'Password of an encrypted keystore',
  }),
  TEST_MODE: v({
    group: 'Chain and keys',
    schema: bool,
    def: 'false',
    doc: 'Dev chains only: allows a plain hex dev key file',
  }),
  DATA_DIR: v({
    group: 'Chain and keys',
    schema: text,
    requiredFor: ['run', 'register', 'devnet'],
    doc: 'Persistent state: store, job cursor, snapshots',
  }),
  BRIDGE_SOCKET_PATH: v({
    group: 'Chain and keys',
    schema: text,
    defaultDoc: '(none)',
    doc: 'Blueprint-manager bridge socket (accepted, unused here)',
  }),
  REGISTRATION_MODE_ON: v({
    group: 'Chain and keys',
    schema: bool,
    def: 'false',
    doc: 'Set by the blueprint manager when it spawns the operator to register',
  }),
  REGISTRATION_CAPTURE_ONLY: v({
    group: 'Chain and keys',
    schema: bool,
    def: 'false',
    doc: 'Write the registration payload to REGISTRATION_OUTPUT_PATH instead of sending it',
  }),
  REGISTRATION_OUTPUT_PATH: v({
    group: 'Chain and keys',
    schema: text,
    defaultDoc: '(none)',
    doc: 'Where a captured registration payload goes',
  }),

  JOB_POLL_INTERVAL_MS: v({
    group: 'Jobs',
    schema: int(50, 600_000),
    def: '1000',
    doc: 'eth_getLogs poll period (WebSocket: safety scan every 4x)',
  }),
  JOB_CONCURRENCY: v({ group: 'Jobs', schema: int(1, 64), def: '4', doc: 'Job handlers running at once' }),
  JOB_CONFIRMATIONS: v({
    group: 'Jobs',
    schema: int(0, 1000),
    def: '0',
    doc: 'Blocks below the head before a job is taken',
  }),
  JOB_START_BLOCK: v({
    group: 'Jobs',
    schema: z.union([z.literal('latest'), envUint64]),
    def: 'latest',
    doc: 'Where a fresh DATA_DIR starts following jobs (a block number replays from there)',
  }),
  SHUTDOWN_GRACE_MS: v({
    group: 'Jobs',
    schema: int(0, 600_000),
    def: '10000',
    doc: 'How long a stop lets in-flight jobs finish before aborting them',
  }),

  OPERATOR_MODE: v({
    group: 'Operator',
    schema: z.enum(['cloud', 'instance', 'tee-instance'], {
      message: 'expected cloud, instance or tee-instance',
    }),
    def: 'cloud',
    doc: 'cloud (jobs 0/1 create/delete sandboxes), instance or tee-instance',
  }),
  INSTANCE_CHECK_INTERVAL_MS: v({
    group: 'Operator',
    schema: int(100, 3_600_000),
    def: '10000',
    doc: 'Instance modes: how often the service (active? still served?) and its sandbox (running?) are checked; also the first retry delay after a failed provision',
  }),
  INSTANCE_RETRY_MAX_MS: v({
    group: 'Operator',
    schema: int(100, 86_400_000),
    def: '300000',
    doc: 'Instance modes: the longest wait between provision retries (the delay doubles from INSTANCE_CHECK_INTERVAL_MS)',
  }),
  OPERATOR_ID: v({
    group: 'Operator',
    schema: z
      .string()
      .trim()
      .regex(/^[a-zA-Z0-9._-]{1,64}$/, 'expected 1-64 of [a-zA-Z0-9._-]'),
    defaultDoc: 'the operator address (lowercase)',
    doc: "Label on this operator's containers; reconcile touches only its own",
  }),
  OPERATOR_MAX_CAPACITY: v({
    group: 'Operator',
    schema: int(0, 4_294_967_295),
    def: '0',
    doc: 'Most live sandboxes (0 = unlimited); also the capacity `register` declares (0 = the contract default)',
  }),
  OPERATOR_RPC_ADDRESS: v({
    group: 'Operator',
    schema: z.string().trim(),
    defaultDoc: 'OPERATOR_PUBLIC_URL',
    doc: 'rpcAddress sent by `register`',
  }),
  LOG_LEVEL: v({
    group: 'Operator',
    schema: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], {
      message: 'expected trace, debug, info, warn, error, fatal or silent',
    }),
    def: 'info',
    doc: 'pino log level',
  }),
  LOG_PRETTY: v({
    group: 'Operator',
    schema: bool,
    def: 'false',
    doc: 'Human-readable logs (same as --pretty)',
  }),

  SESSION_AUTH_SECRET: v({
    group: 'Operator API',
    schema: secretHex,
    secret: true,
    requiredFor: ['run'],
    doc: 'Key material for PASETO sessions and the encrypted store (32 bytes hex)',
  }),
  OPERATOR_API_HOST: v({
    group: 'Operator API',
    schema: text,
    def: '127.0.0.1',
    doc: 'Bind address of the operator API',
  }),
  OPERATOR_API_PORT: v({
    group: 'Operator API',
    schema: int(0, 65535),
    def: '9090',
    doc: 'Bind port of the operator API (0 = any free port)',
  }),
  OPERATOR_PUBLIC_URL: v({
    group: 'Operator API',
    schema: url('http:', 'https:'),
    defaultDoc: 'http://OPERATOR_API_HOST:OPERATOR_API_PORT',
    doc: 'URL clients use; posted in create results; sign-in messages (EIP-4361) name its host and origin, and clients refuse messages naming another',
  }),
  CORS_ALLOWED_ORIGINS: v({
    group: 'Operator API',
    schema: list,
    def: '',
    doc: 'Comma-separated origins allowed by CORS (empty: none)',
  }),
  TRUSTED_PROXIES: v({
    group: 'Operator API',
    schema: list,
    def: '',
    doc: 'Comma-separated proxy IPs/CIDRs whose X-Forwarded-For is believed',
  }),
  OPERATOR_API_TLS: v({
    group: 'Operator API',
    schema: bool,
    def: 'false',
    doc: 'Served over TLS (sends HSTS)',
  }),
  AUTH_ALLOW_LEGACY_MESSAGE: v({
    group: 'Operator API',
    schema: bool,
    def: 'false',
    doc: 'Also accept the old plain sign-in message, which names no operator: a signature over it can be relayed to another operator (see README, Security)',
  }),
  RUN_MAX_EVENTS: v({
    group: 'Operator API',
    schema: int(10, 10_000_000),
    def: '10000',
    doc: 'Stored events per agent run (start and end events excepted); past it one run.truncated event, later output dropped',
  }),
  RUN_MAX_BYTES: v({
    group: 'Operator API',
    schema: int(4096),
    def: '8388608',
    doc: "Stored bytes of one agent run's streamed events; past it like RUN_MAX_EVENTS",
  }),
  RUN_MAX_TEXT_CHARS: v({
    group: 'Operator API',
    schema: int(1024),
    def: '1048576',
    doc: "A run's final text (and any string in its end events) is cut to this many characters",
  }),
  RUN_RETENTION: v({
    group: 'Operator API',
    schema: int(60),
    def: '604800',
    doc: "Seconds a finished agent run (record and events) is kept; a deleted sandbox's runs go with it",
  }),
  SESSION_GC_INTERVAL: v({
    group: 'Operator API',
    schema: int(1, 86_400),
    def: '300',
    doc: 'Seconds between collections of expired sessions/challenges and idle circuit-breaker entries',
  }),

  SANDBOX_IMAGE: v({
    group: 'Sandboxes',
    schema: text,
    defaultDoc: 'the built sandbox image tag (built on first run)',
    doc: 'Image of a sandbox when a request names none',
  }),
  SANDBOX_HARNESS_IMAGE: v({
    group: 'Sandboxes',
    schema: text,
    defaultDoc: 'none',
    doc: "Image with the coding-agent CLIs (codex, claude, opencode, gemini) for requests that name no image and whose agent_identifier is one of them; 'build' builds the project's harness image at start-up (minutes the first time, then cached); empty: none",
  }),
  SANDBOX_IMAGE_ALLOWLIST: v({
    group: 'Sandboxes',
    schema: list,
    def: '',
    doc: 'Other images a request may name (comma-separated); the default image is always allowed',
  }),
  SANDBOX_DEFAULT_CPU_CORES: v({
    group: 'Sandboxes',
    schema: num(0.1),
    def: '1',
    doc: 'CPU cores when a request asks 0',
  }),
  SANDBOX_DEFAULT_MEMORY_MB: v({
    group: 'Sandboxes',
    schema: int(128),
    def: '1024',
    doc: 'Memory (MB) when a request asks 0',
  }),
  SANDBOX_DEFAULT_DISK_GB: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '10',
    doc: 'Disk (GB) when a request asks 0',
  }),
  SANDBOX_MAX_CPU_CORES: v({
    group: 'Sandboxes',
    schema: num(0.1),
    def: '2',
    doc: 'Most CPU cores a request may ask',
  }),
  SANDBOX_MAX_MEMORY_MB: v({
    group: 'Sandboxes',
    schema: int(128),
    def: '8192',
    doc: 'Most memory (MB) a request may ask',
  }),
  SANDBOX_MAX_DISK_GB: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '50',
    doc: 'Most disk (GB) a request may ask',
  }),
  SANDBOX_PIDS_LIMIT: v({
    group: 'Sandboxes',
    schema: int(16),
    def: '1024',
    doc: 'Process limit per sandbox',
  }),
  SANDBOX_DEFAULT_IDLE_TIMEOUT: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '1800',
    doc: 'Idle seconds before a sandbox is stopped',
  }),
  SANDBOX_DEFAULT_MAX_LIFETIME: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '86400',
    doc: 'Seconds of running before a sandbox is deleted',
  }),
  SANDBOX_MAX_IDLE_TIMEOUT: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '7200',
    doc: 'Cap on a requested idle timeout (clamped)',
  }),
  SANDBOX_MAX_MAX_LIFETIME: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '172800',
    doc: 'Cap on a requested max lifetime (clamped)',
  }),
  SANDBOX_REAPER_INTERVAL: v({
    group: 'Sandboxes',
    schema: num(0.1),
    def: '30',
    doc: 'Seconds between reaper ticks (idle/lifetime)',
  }),
  SANDBOX_GC_INTERVAL: v({
    group: 'Sandboxes',
    schema: num(0.1),
    def: '3600',
    doc: 'Seconds between storage GC ticks',
  }),
  SANDBOX_GC_HOT_RETENTION: v({
    group: 'Sandboxes',
    schema: num(0),
    def: '86400',
    doc: 'Seconds a stopped sandbox stays hot (container kept) before warm',
  }),
  SANDBOX_GC_WARM_RETENTION: v({
    group: 'Sandboxes',
    schema: num(0),
    def: '172800',
    doc: 'Seconds warm (image + workspace tar) before cold',
  }),
  SANDBOX_GC_COLD_RETENTION: v({
    group: 'Sandboxes',
    schema: num(0),
    def: '604800',
    doc: 'Seconds cold (archives on disk) before gone',
  }),
  SANDBOX_SNAPSHOT_AUTO_COMMIT: v({
    group: 'Sandboxes',
    schema: bool,
    def: 'true',
    doc: 'Snapshot the container on every stop',
  }),
  SANDBOX_WORKSPACE_DISK: v({
    group: 'Sandboxes',
    schema: z.enum(['auto', 'loop', 'none'], { message: 'expected auto, loop or none' }),
    def: 'auto',
    doc: 'How a workspace is held to disk_gb: loop (an ext4 loop disk per workspace; root, util-linux, e2fsprogs), none (not limited), auto (loop when possible, else none with a warning); the sandbox view records it',
  }),
  SANDBOX_SNAPSHOT_MAX_MB: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '20480',
    doc: 'Most snapshot storage (MB) one sandbox may hold: committed layer + workspace.tar + image.tar; a snapshot or GC demotion past it fails, nothing written',
  }),
  SANDBOX_STORAGE_BUDGET_MB: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '102400',
    doc: "Operator-wide budget (MB) for all sandboxes' snapshot storage; a snapshot or GC demotion past it fails, nothing written",
  }),
  SANDBOX_SNAPSHOT_DIR: v({
    group: 'Sandboxes',
    schema: text,
    defaultDoc: 'DATA_DIR/snapshots',
    doc: 'Where warm/cold archives live',
  }),
  SANDBOX_WARM_POOL: v({
    group: 'Sandboxes',
    schema: int(0, 64),
    def: '0',
    doc: 'Containers of the default shape (image, cpu, memory, disk, exposed ports) kept started and healthy for creates to claim (phase `pool_claim`, no cold start); 0 = off. Never counted as sandboxes; shrinks to what OPERATOR_MAX_CAPACITY leaves; removed at shutdown and by reconcile after a crash',
  }),
  SANDBOX_HEALTH_TIMEOUT_MS: v({
    group: 'Sandboxes',
    schema: int(100, 600_000),
    def: '30000',
    doc: 'How long a new sidecar may take to answer /health',
  }),
  SANDBOX_EXTRA_LABELS: v({
    group: 'Sandboxes',
    schema: labels,
    def: '',
    doc: 'Extra Docker labels on everything created (key=value,…)',
  }),
  SANDBOX_EXPOSED_PORTS: v({
    group: 'Sandboxes',
    schema: ports,
    def: '',
    doc: 'Container ports every sandbox publishes on 127.0.0.1 for the port proxy (comma-separated)',
  }),
  SANDBOX_EGRESS: v({
    group: 'Sandboxes',
    schema: z.enum(['public', 'none', 'open'], { message: 'expected public, none or open' }),
    def: 'public',
    doc: 'Sandbox network: public (internet only; private/CGNAT/link-local/loopback addresses and the host refused; needs root and iptables), none (no interface but loopback; the sidecar answers on a Unix socket; no exposed ports), open (Docker default bridge, no isolation)',
  }),
  SANDBOX_SOCKET_DIR: v({
    group: 'Sandboxes',
    schema: text,
    def: '/run/agent-sandbox',
    doc: 'Under SANDBOX_EGRESS=none: where each sandbox gets its 0700 sidecar socket directory (at most 57 characters, so the socket path fits a Unix socket address)',
  }),
  SIDECAR_PUBLIC_HOST: v({
    group: 'Sandboxes',
    schema: text,
    def: '127.0.0.1',
    doc: 'Host in sidecar URLs (ports are published on 127.0.0.1 only)',
  }),
  SIDECAR_HTTP_PORT: v({
    group: 'Sandboxes',
    schema: int(1, 65535),
    def: '8080',
    doc: 'Sidecar port inside the container',
  }),
  ...TEE_VARIABLES,
  ...WORKFLOW_VARIABLES,
} as const;

export type VariableName = keyof typeof VARIABLES;
