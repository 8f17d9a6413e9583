// Schemas for what the operator API answers (spec/operator-api.md), validated at the edge.
// Objects are loose: the client reads the fields it needs and passes the rest through, so an
// operator that adds fields keeps working with an older client.
import { z } from 'zod';

export const ApiErrorBody = z.object({
  error: z.looseObject({
    code: z.string(),
    message: z.string().optional(),
    request_id: z.string().optional(),
    retry_after_ms: z.number().optional(),
  }),
});

export const Challenge = z.looseObject({
  nonce: z.string().regex(/^(0x)?[0-9a-fA-F]+$/),
  message: z.string(),
  expires_at: z.union([z.number(), z.string()]).optional(),
});

export const Session = z.looseObject({
  token: z.string().min(1),
  address: z.string(),
  expires_at: z.union([z.number(), z.string()]).optional(),
});
export type Session = z.infer<typeof Session>;

/** A sandbox as the owner sees it. Operators may name the id `id` or `sandbox_id`. */
export const Sandbox = z.preprocess(
  (v) => {
    if (v && typeof v === 'object' && !('id' in v) && 'sandbox_id' in v) {
      return { ...v, id: (v as { sandbox_id: unknown }).sandbox_id };
    }
    return v;
  },
  z.looseObject({
    id: z.string(),
    state: z.string().transform((s) => s.toLowerCase()),
  }),
);
export type Sandbox = z.infer<typeof Sandbox>;

export const SandboxList = z.union([
  z.array(Sandbox),
  z.looseObject({ sandboxes: z.array(Sandbox) }).transform((o) => o.sandboxes),
]);

export const ExecResult = z.looseObject({
  exit_code: z.number().int(),
  stdout: z.string(),
  stderr: z.string(),
});
export type ExecResult = z.infer<typeof ExecResult>;

export const RunAccepted = z.looseObject({
  run_id: z.string().min(1),
  session_id: z.string().optional(),
  status: z.string(),
});
export type RunAccepted = z.infer<typeof RunAccepted>;

export const RunInfo = z.preprocess(
  (v) => (v && typeof v === 'object' && 'run' in v ? (v as { run: unknown }).run : v),
  z.looseObject({
    status: z.string().optional(),
    state: z.string().optional(),
  }),
);
export type RunInfo = z.infer<typeof RunInfo>;

/** Run states after which no more events come. */
export const TERMINAL_RUN_STATES = new Set([
  'completed',
  'complete',
  'succeeded',
  'success',
  'failed',
  'error',
  'cancelled',
  'canceled',
  'timeout',
  'timed_out',
]);

export const LifecycleResult = z.looseObject({
  success: z.boolean().optional(),
  sandbox_id: z.string().optional(),
  state: z.string().optional(),
});
export type LifecycleResult = z.infer<typeof LifecycleResult>;

export const SecretNames = z.union([
  z.array(z.string()),
  z
    .looseObject({ keys: z.array(z.string()).optional(), names: z.array(z.string()).optional() })
    .transform((o) => o.keys ?? o.names ?? []),
]);

export const SANDBOX_SCOPES = ['personal', 'team', 'all'] as const;
export type SandboxScope = (typeof SANDBOX_SCOPES)[number];

/** Team access: the sandbox's owner and member wallets. */
export const Members = z.looseObject({
  sandbox_id: z.string(),
  owner: z.string(),
  members: z.array(z.string()),
});
export type Members = z.infer<typeof Members>;

/** SSH into a sandbox: on while a key is in; the keys by fingerprint. */
export const SshKeyView = z.looseObject({
  fingerprint: z.string(),
  type: z.string(),
  comment: z.string(),
  added_at: z.number(),
});
export const SshInfo = z.looseObject({
  sandbox_id: z.string(),
  enabled: z.boolean(),
  keys: z.array(SshKeyView),
  tunnel: z.string(),
});
export type SshInfo = z.infer<typeof SshInfo>;
export const SshKeyAdded = z.looseObject({
  sandbox_id: z.string(),
  key: SshKeyView,
  ssh: z.looseObject({ enabled: z.boolean(), keys: z.array(SshKeyView) }),
});
export type SshKeyAdded = z.infer<typeof SshKeyAdded>;

/** A shareable preview link; `url` only in the answer to its creation. */
export const PreviewLink = z.looseObject({
  id: z.string(),
  port: z.number().int(),
  origin: z.string(),
  state: z.string(),
  created_at: z.string(),
  expires_at: z.string(),
  revoked_at: z.string().nullable(),
  url: z.string().optional(),
});
export type PreviewLink = z.infer<typeof PreviewLink>;
export const PreviewLinkList = z.looseObject({ links: z.array(PreviewLink) });

/** The sidecar's terminal answer, proxied: `{sessionId, data:{sessionId, …}}`. */
export const TerminalCreated = z
  .looseObject({
    sessionId: z.string().optional(),
    id: z.string().optional(),
    terminal_id: z.string().optional(),
    data: z.looseObject({ sessionId: z.string().optional() }).optional(),
  })
  .transform((o, ctx) => {
    const id = o.sessionId ?? o.data?.sessionId ?? o.terminal_id ?? o.id;
    if (!id) {
      ctx.addIssue({ code: 'custom', message: 'terminal id missing' });
      return z.NEVER;
    }
    return { ...o, terminalId: id };
  });

export const PROVISION_PHASES = [
  'queued',
  'pool_claim',
  'image_pull',
  'workspace_copy',
  'container_create',
  'container_start',
  'health_check',
  'ready',
  'failed',
] as const;

/** GET /api/provisions/{callId}: where a create job is, with a failure reason when it failed. */
export const Provision = z.preprocess(
  (v) => {
    if (v && typeof v === 'object' && !('phase' in v) && 'state' in v) {
      return { ...v, phase: (v as { state: unknown }).state };
    }
    return v;
  },
  z.looseObject({
    phase: z.string(),
    /** Every phase entered, oldest first (the runtime writes `[{phase, at}]`). */
    phases: z.array(z.unknown()).optional(),
    /** The phase that was running when it failed (`failedPhase` from the runtime). */
    failedPhase: z.string().nullish(),
    failed_phase: z.string().nullish(),
    sandboxId: z.string().nullish(),
    sandbox_id: z.string().nullish(),
    message: z.string().nullish(),
    reason: z.string().nullish(),
    error: z.union([z.string(), z.looseObject({ message: z.string().optional() })]).nullish(),
  }),
);
export type Provision = z.infer<typeof Provision>;

export function provisionFailureReason(p: Provision): string {
  if (typeof p.error === 'string') return p.error;
  return p.error?.message ?? p.reason ?? p.message ?? 'no reason given';
}

const Size = z.looseObject({ cpuCores: z.number(), memoryMb: z.number(), diskGb: z.number() });

/** GET /api/shapes: the operator's size presets, its default preset and its ceiling. */
export const Shapes = z.looseObject({
  presets: z.array(Size.extend({ name: z.string(), fits: z.boolean() })),
  default: z.string(),
  ceiling: Size,
});
export type Shapes = z.infer<typeof Shapes>;
