// Every environment variable the operator reads: its zod parser, default, requiredness and
// documentation (the README's Configuration table is generated from this table).

import { envAddress, envUint64 } from '@agent-sandbox/sdk';
import { z } from 'zod';
import { bool, int, list, secretHex, text, url, v } from './config-var-parsers.ts';
import { APPROVAL_VARIABLES } from './config-vars-approval.ts';
import { SANDBOX_VARIABLES } from './config-vars-sandbox.ts';
import { SNAPSHOT_S3_VARIABLES } from './config-vars-snapshot-s3.ts';
import { TEE_VARIABLES } from './config-vars-tee.ts';
import { WORKFLOW_VARIABLES } from './config-vars-workflows.ts';

export type { Command, Group, Var } from './config-var-parsers.ts';

const CHAIN_CMDS = ['run', 'register', 'deploy-blueprint', 'stake', 'requests', 'unregister'] as const;
const BLUEPRINT_CMDS = ['run', 'register', 'requests', 'unregister'] as const;

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
    requiredFor: BLUEPRINT_CMDS,
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
    requiredFor: ['stake'],
    defaultDoc: '(none)',
    doc: "Tangle's staking contract (MultiAssetDelegation): `stake` deposits the operator's self-stake there",
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
    doc: 'Blocks below the head before a job is taken. Per chain kind: 0 for the devnet or instant finality, 0-1 on an L2 sequencer, 2+ on an Ethereum-like L1, else its finality depth (README: reorgs)',
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
    doc: 'URL clients use; posted in create results; sign-in messages (EIP-4361) name its host and origin, and clients refuse messages naming another (so `run` requires it when OPERATOR_API_HOST is 0.0.0.0 or ::)',
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
  PREVIEW_ORIGIN: v({
    group: 'Operator API',
    schema: z
      .string()
      .trim()
      .regex(
        /^https?:\/\/\*\.[a-zA-Z0-9.-]+(:\d{1,5})?\/?$/,
        'expected http(s)://*.<domain>[:port], e.g. https://*.preview.example.com',
      ),
    defaultDoc: 'http://*.localhost:<port> when reached on a loopback host; else previews refused',
    doc: 'Where port previews are served: one host per sandbox port (p3000-<sandbox id>.<domain>), apart from the console origin; route the wildcard name to the operator with Host passed through (see runtime/src/api/README.md)',
  }),
  SANDBOX_SSH: v({
    group: 'Operator API',
    schema: bool,
    def: 'true',
    doc: 'Let owners SSH into their sandboxes (`agent-sandbox ssh add|connect`): keys they add, over a WebSocket tunnel through this API (no host port); `false` refuses key adds and tunnels. Never offered in TEE mode',
  }),
  PREVIEW_LINKS: v({
    group: 'Operator API',
    schema: bool,
    def: 'false',
    doc: 'Let owners create shareable preview links (`agent-sandbox preview create`): anyone with a link reaches that one port on the preview origin until it expires or is revoked',
  }),
  PREVIEW_LINK_TTL: v({
    group: 'Operator API',
    schema: int(1),
    def: '86400',
    doc: 'Seconds a preview link lasts when its owner names no expiry',
  }),
  PREVIEW_LINK_MAX_TTL: v({
    group: 'Operator API',
    schema: int(1),
    def: '604800',
    doc: 'The longest expiry (seconds) an owner may give a preview link',
  }),
  PREVIEW_LINK_RATE_LIMIT: v({
    group: 'Operator API',
    schema: int(1),
    def: '600',
    doc: 'Requests per minute through one preview link, whoever sends them (429 beyond; the per-IP limits apply too)',
  }),
  METRICS_TOKEN: v({
    group: 'Operator API',
    schema: z.string().trim().min(16, 'must be at least 16 characters (generate one: openssl rand -hex 32)'),
    secret: true,
    defaultDoc: '(none: /metrics public without per-sandbox series)',
    doc: "Bearer token for /metrics (then required, every series incl. per-sandbox token usage) and for the instance's sandbox id and last error on /health; `status` sends it",
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

  ...SANDBOX_VARIABLES,
  ...SNAPSHOT_S3_VARIABLES,
  ...TEE_VARIABLES,
  ...WORKFLOW_VARIABLES,
  ...APPROVAL_VARIABLES,
} as const;

export type VariableName = keyof typeof VARIABLES;
