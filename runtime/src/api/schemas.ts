// Request and response schemas of the operator API: each route validates with one of these, and
// the OpenAPI document is generated from the same objects.
import { z } from '@hono/zod-openapi';
import { SCOPE_RE } from '../auth/index.ts';
import { platformOwnedReason } from '../sandbox/env.ts';

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: 'FORBIDDEN' }),
      message: z.string(),
      request_id: z.string(),
      retry_after_ms: z.number().int().optional(),
      details: z.record(z.string(), z.unknown()).optional(),
    }),
  })
  .openapi('Error');

const err = (description: string) => ({
  content: { 'application/json': { schema: ErrorSchema } },
  description,
});

/** Standard error responses for a route, by status. */
export function errors(...statuses: number[]): Record<number, ReturnType<typeof err>> {
  const text: Record<number, string> = {
    400: 'Invalid input (VALIDATION)',
    401: 'Missing, invalid, expired or revoked session (UNAUTHORIZED)',
    403: 'Another owner’s sandbox, or a token scoped to another sandbox (FORBIDDEN)',
    404: 'No such sandbox or resource',
    409: 'Sandbox stopped / not running, or a run already active',
    413: 'Body too large (PAYLOAD_TOO_LARGE)',
    429: 'Rate limited (RATE_LIMITED), see retry-after',
    502: 'Sidecar or engine failure',
    503: 'Circuit open or capacity exhausted, see retry_after_ms',
    504: 'Sidecar or request timeout',
  };
  return Object.fromEntries(statuses.map((s) => [s, err(text[s] ?? 'Error')]));
}

export const SANDBOX_ERRORS = [401, 403, 404, 429] as const;

export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { 'application/json': { schema } },
  description,
});

export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

// --- auth ---
export const ChallengeSchema = z
  .object({
    nonce: z.string(),
    /** The EIP-4361 message to sign (the legacy plain text only under AUTH_ALLOW_LEGACY_MESSAGE). */
    message: z.string(),
    /** The same text, for front ends that read `challenge`. */
    challenge: z.string(),
    issued_at: z.union([z.number(), z.string()]),
    expires_at: z.union([z.number(), z.string()]),
  })
  .openapi('Challenge');

const ADDRESS = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'address must be a 0x-prefixed 20-byte hex address');

export const ChallengeRequestSchema = z
  .object({
    /** The wallet that will sign: the EIP-4361 message names it. */
    address: ADDRESS.optional(),
  })
  .openapi('ChallengeRequest');

const SIGNED_MESSAGE = z.string().min(1).max(4096);

export const SessionRequestSchema = z
  .object({
    nonce: z
      .string()
      .regex(/^[0-9a-f]{80}$/, 'nonce must be the nonce of a challenge (80 hex chars)')
      .optional(),
    /** The signed message, unchanged (an alternative to nonce + address). */
    message: SIGNED_MESSAGE.optional(),
    signature: z.string().regex(/^(0x)?[0-9a-fA-F]{130}$/, 'signature must be 65 bytes as hex'),
    /** Optional: the wallet the caller means to sign in as; a signature by any other fails. */
    address: z
      .string()
      .regex(/^0x[0-9a-fA-F]{40}$/, 'address must be a 0x-prefixed 20-byte hex address')
      .optional(),
    scope: z.string().regex(SCOPE_RE, 'scope must be sandbox:{id} or instance:{id}').optional(),
  })
  .refine((b) => b.nonce !== undefined || b.message !== undefined, {
    message: 'send the challenge nonce or the signed message',
  })
  .openapi('SessionRequest');

/** POST /api/auth/verify, the seeds' front ends' shape: `challenge` is the text that was signed. */
export const VerifyRequestSchema = z
  .object({
    challenge: SIGNED_MESSAGE,
    signature: z.string().regex(/^(0x)?[0-9a-fA-F]{130}$/, 'signature must be 65 bytes as hex'),
    address: ADDRESS.optional(),
    scope: z.string().regex(SCOPE_RE, 'scope must be sandbox:{id} or instance:{id}').optional(),
  })
  .openapi('VerifyRequest');

export const SessionSchema = z
  .object({ token: z.string(), address: z.string(), expires_at: z.union([z.number(), z.string()]) })
  .openapi('Session');

export const RevokedSchema = z.object({ revoked: z.literal(true) }).openapi('Revoked');

// --- sandboxes ---
export const SshKeyViewSchema = z
  .object({
    fingerprint: z.string().openapi({ description: 'SHA256:… as `ssh-keygen -l` prints it' }),
    type: z.string(),
    comment: z.string(),
    added_at: z.number(),
  })
  .openapi('SshKey');
export const SshSchema = z
  .object({
    enabled: z.boolean().openapi({
      description:
        'SSH is on while the owner has added a key and the operator offers SSH (false under SANDBOX_SSH=false or in a TEE, the keys kept)',
    }),
    keys: z.array(SshKeyViewSchema),
    tunnel: z.string().openapi({
      description:
        'the WebSocket tunnel, relative to the sandbox route: `ssh -o ProxyCommand="agent-sandbox ssh connect <id>" agent@<id>`',
    }),
  })
  .openapi('Ssh');
export const SshKeyRequestSchema = z
  .object({
    public_key: z
      .string()
      .max(16_384)
      .openapi({ description: 'one OpenSSH public key line (`ssh-ed25519 AAAA… comment`), no options' }),
  })
  .openapi('SshKeyRequest');
export const SshKeyAddedSchema = z
  .object({ sandbox_id: z.string(), key: SshKeyViewSchema, ssh: SshSchema })
  .openapi('SshKeyAdded');

export const SandboxViewSchema = z
  .object({
    id: z.string(),
    name: z.string().optional(),
    owner: z.string(),
    state: z.string(),
    resources: z.record(z.string(), z.unknown()),
    timers: z.record(z.string(), z.unknown()),
    ports: z.record(z.string(), z.unknown()),
    tier: z.string().nullable().optional(),
    created_at: z.number(),
    last_activity_at: z.number(),
    started_at: z.number().nullable().optional(),
    stopped_at: z.number().nullable().optional(),
    stop_reason: z.string().nullable().optional(),
    timer_deadlines: z
      .object({
        idle_stop_at: z.number().nullable(),
        max_lifetime_stop_at: z.number().nullable(),
        delete_at: z.number().nullable(),
      })
      .optional()
      .openapi({
        description:
          'epoch ms when each timer fires: a running sandbox stops at idle_stop_at (moved by activity) or max_lifetime_stop_at (create or last resume + maxLifetimeSeconds); a stopped one is deleted at delete_at (stop + deleteAfterStoppedSeconds). null: does not apply now',
      }),
    agent: z.boolean().optional().openapi({ description: 'false: plain compute, no coding agent' }),
    runtime: z.enum(['runc', 'runsc']).optional().openapi({
      description: 'The OCI runtime its containers run under: runc, or runsc (gVisor, a user-space kernel)',
    }),
    image: z.string().optional().openapi({
      description:
        'its image; a registry image by digest (registry/repo@sha256:…: what the operator pulled and verified), after its pull',
    }),
    sidecar: z.enum(['image', 'mounted']).optional().openapi({
      description:
        "image: the image carries the sidecar (the operator's own); mounted: a registry image, the sidecar mounted read-only from the operator's kit (README: images from a registry)",
    }),
    snapshot_id: z.string().nullable().optional().openapi({
      description:
        'the sandbox\'s latest snapshot (POST …/snapshot or a stop takes one, replacing it); a create job with capabilities_json {"from_snapshot": snapshot_id} starts a new sandbox with its workspace',
    }),
    source: z
      .object({
        kind: z.enum(['sandbox', 'snapshot']),
        sandbox_id: z.string(),
        snapshot_id: z.string().optional(),
      })
      .nullable()
      .optional()
      .openapi({
        description:
          'what this sandbox was copied from (create from_sandbox / from_snapshot: the workspace only, never secrets, env or token); null: a fresh sandbox',
      }),
    network: z
      .object({
        mode: z.enum(['default', 'strict']),
        allow_domains: z.array(z.string()),
        include_implicit_domains: z.boolean(),
      })
      .nullable()
      .optional()
      .openapi({
        description:
          "the sandbox's own network policy (create capabilities_json network), enforced by the operator outside it: default = the operator's implicit domains (GET /api/capabilities network.implicitDomains) plus allow_domains; strict = allow_domains only (+ the implicit ones with include_implicit_domains). null: no policy, the operator's SANDBOX_EGRESS applies",
      }),
    role: z.enum(['owner', 'member']).openapi({
      description: "the caller's role: owner, or member (team access: exec, prompt, terminals, files, ports)",
    }),
    members: z.array(z.string()).openapi({ description: 'member wallets (lowercased); team access' }),
    secret_names: z.array(z.string()).openapi({ description: 'names only; empty for a member' }),
    ssh: SshSchema.optional(),
  })
  .openapi('Sandbox');

export const SandboxListSchema = z.object({ sandboxes: z.array(SandboxViewSchema) }).openapi('SandboxList');

export const SANDBOX_SCOPES = ['personal', 'team', 'all'] as const;
export const SandboxListQuerySchema = z.object({
  scope: z.enum(SANDBOX_SCOPES).default('all').openapi({
    description:
      'personal: yours with no members; team: shared ones (yours with members, and those you are a member of); all (default): both',
  }),
});

export const MemberRequestSchema = z
  .object({ address: z.string().openapi({ description: 'the wallet to let in (0x + 40 hex)' }) })
  .openapi('MemberRequest');
export const MemberParamsSchema = z.object({ address: z.string().max(64) });
export const MembersSchema = z
  .object({ sandbox_id: z.string(), owner: z.string(), members: z.array(z.string()) })
  .openapi('Members');

const userEnvName = (what: string) =>
  z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, `${what} names are [A-Za-z_][A-Za-z0-9_]*`)
    .max(256);

/** Refuses names the platform owns, naming the key (an issue on a record key loses its message). */
const refusePlatformOwned = (what: string) => (env: Record<string, unknown>, ctx: z.RefinementCtx) => {
  for (const k of Object.keys(env)) {
    const reason = platformOwnedReason(k);
    if (reason)
      ctx.addIssue({ code: 'custom', path: [k], message: `${what} "${k.slice(0, 64)}": ${reason}` });
  }
};

const EnvMap = z.record(userEnvName('env'), z.string()).superRefine(refusePlatformOwned('env'));

export const ExecRequestSchema = z
  .object({
    command: z.string().min(1, 'command is required').max(65_536),
    cwd: z.string().max(4096).optional(),
    env: EnvMap.optional(),
    // Below the API's 120 s request timeout, so the sidecar's exit 124 can still be answered.
    timeout_ms: z
      .number()
      .int()
      .positive()
      .max(110_000, 'timeout_ms is at most 110000 (use a task for longer work)')
      .optional(),
  })
  .openapi('ExecRequest');

export const ExecResultSchema = z
  .object({ exit_code: z.number().int(), stdout: z.string(), stderr: z.string() })
  .openapi('ExecResult');

/** A caller's idempotency key (the `Idempotency-Key` header or the `idempotency_key` field). */
export const IdempotencyKeySchema = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, 'an idempotency key is 1 to 255 printable ASCII characters, no spaces');

const BackendTypeSchema = z.string().max(64).optional().openapi({
  description:
    "The harness: codex, claude, opencode, gemini or default. Omitted: the harness the sandbox was created for (its agent_identifier), else the sidecar's choice (by which API key is set).",
});

export const PromptRequestSchema = z
  .object({
    message: z.string().min(1, 'message is required').max(262_144),
    session_id: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,128}$/)
      .optional(),
    backend_type: BackendTypeSchema,
    model: z.string().max(256).optional(),
    timeout_ms: z.number().int().positive().max(1_800_000).optional(),
    idempotency_key: IdempotencyKeySchema.optional(),
  })
  // Unknown options are refused (400 naming them), never dropped: a dropped option would run the
  // turn on other settings than the caller asked for.
  .strict()
  .openapi('PromptRequest');

export const TaskRequestSchema = z
  .object({
    prompt: z.string().min(1, 'prompt is required').max(262_144),
    max_turns: z.number().int().positive().max(1000).optional(),
    session_id: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,128}$/)
      .optional(),
    backend_type: BackendTypeSchema,
    model: z.string().max(256).optional(),
    system_prompt: z.string().max(65_536).optional(),
    timeout_ms: z.number().int().positive().max(1_800_000).optional(),
    idempotency_key: IdempotencyKeySchema.optional(),
  })
  .strict()
  .openapi('TaskRequest');

const RunStatusSchema = z.enum(['queued', 'running', 'completed', 'failed', 'cancelled']);

export const RunAcceptedSchema = z
  .object({
    run_id: z.string(),
    session_id: z.string(),
    status: RunStatusSchema,
    /** sha256 of the turn's identity (its options, minus the key; no bearer material). */
    request_digest: z.string(),
    /** True when an earlier request with the same idempotency key admitted this run. */
    replayed: z.boolean().optional(),
  })
  .openapi('RunAccepted');

export const RunSchema = z
  .object({
    run_id: z.string(),
    sandbox_id: z.string(),
    kind: z.enum(['prompt', 'task']),
    session_id: z.string(),
    status: RunStatusSchema,
    created_at: z.number(),
    started_at: z.number().nullable(),
    finished_at: z.number().nullable(),
    last_event_id: z.number().int(),
    final_text: z.string().nullable(),
    usage: z.record(z.string(), z.unknown()).nullable(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    /** sha256 of the turn's effective request: what an idempotency key is bound to. */
    request_digest: z.string().optional(),
    idempotency_key: z.string().nullable().optional(),
    /** The address that admitted the run (lowercase). */
    owner: z.string().optional(),
  })
  .openapi('Run');

export const RunParamsSchema = z.object({
  run_id: z.string().regex(/^run-[0-9a-f]{24}$/, 'run_id looks like run-<24 hex>'),
});

export const LifecycleResultSchema = z
  .object({ success: z.boolean(), sandbox_id: z.string(), state: z.string() })
  .openapi('LifecycleResult');

const MAX_SECRET_VALUE = 64 * 1024;
export const SecretsRequestSchema = z
  .object({
    env: z
      .record(
        userEnvName('secret'),
        z
          .string()
          .refine(
            (v) => Buffer.byteLength(v, 'utf8') <= MAX_SECRET_VALUE,
            'a secret value is at most 64 KiB',
          ),
      )
      .refine((env) => {
        const n = Object.keys(env).length;
        return n >= 1 && n <= 256;
      }, 'env must hold 1 to 256 secrets')
      .superRefine(refusePlatformOwned('secret')),
  })
  .openapi('SecretsRequest');

export const SecretsSetSchema = z
  .object({ status: z.literal('secrets_configured'), sandbox_id: z.string() })
  .openapi('SecretsConfigured');
export const SecretsWipedSchema = z.object({ status: z.literal('secrets_wiped'), sandbox_id: z.string() });
export const SecretNamesSchema = z
  .object({ sandbox_id: z.string(), names: z.array(z.string()) })
  .openapi('SecretNames');

export const TerminalCreateSchema = z
  .object({
    cwd: z.string().max(4096).optional(),
    cols: z.number().int().min(1).max(1000).optional(),
    rows: z.number().int().min(1).max(1000).optional(),
    env: EnvMap.optional(),
    title: z.string().max(256).optional(),
  })
  .openapi('TerminalCreate');
export const TerminalResizeSchema = z
  .object({ cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(1000) })
  .openapi('TerminalResize');
export const TerminalInputSchema = z.object({ data: z.string().max(65_536) }).openapi('TerminalInput');
export const TerminalParamsSchema = z.object({
  tid: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'terminal ids are [A-Za-z0-9_-]'),
});
export const PassThroughSchema = z.record(z.string(), z.unknown()).openapi('SidecarResponse');

export const SnapshotResultSchema = z.record(z.string(), z.unknown()).openapi('SnapshotResult');
