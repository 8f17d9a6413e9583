// The create job's options beyond the ABI struct's own fields, carried in `capabilities_json` as
// one JSON object (so the job's ABI, and every client and contract built on it, is unchanged):
//   {"shape":"medium","agent":false,"delete_after_stopped_seconds":86400,
//    "network":{"mode":"strict","allow_domains":["example.com"],"include_implicit_domains":true},
//    "runtime":"runsc","from_sandbox":"sbx-…"}            (or "from_snapshot":"sha256:…": a fork, see runtime fork.ts)
// Strict: an unknown option is refused by name (a dropped option would create another sandbox
// than asked). A JSON array (an older client's capability list) carries no options.
import { DomainSchema } from '@agent-sandbox/runtime';
import { z } from 'zod';
import { BlueprintError } from './errors.ts';

/** The wire form (snake_case) of the runtime's NetworkPolicy. */
export const NetworkOptionSchema = z
  .object({
    mode: z.enum(['default', 'strict']),
    allow_domains: z.array(DomainSchema).max(64).default([]),
    include_implicit_domains: z.boolean().default(false),
  })
  .strict();

export const CreateOptionsSchema = z
  .object({
    shape: z.string().min(1).max(64).optional(),
    /** false: plain compute (no coding agent, no model credentials, no startup scripts). */
    agent: z.boolean().optional(),
    delete_after_stopped_seconds: z.number().int().positive().optional(),
    /**
     * A script to run when the sandbox starts. This operator runs none: named with agent: false it
     * is the model's refusal (plain compute has no startup scripts), otherwise "not supported".
     */
    startup_script: z
      .string()
      .max(16 * 1024)
      .optional(),
    network: NetworkOptionSchema.optional(),
    /** The OCI runtime: runc, or runsc (gVisor) where the operator offers it (SANDBOX_RUNTIMES_ALLOWED). */
    runtime: z.enum(['runc', 'runsc']).optional(),
    /** Branch: a copy of this sandbox's workspace (the caller's own sandbox; no secrets copied). */
    from_sandbox: z
      .string()
      .regex(/^sbx-[0-9a-f]{32}$/, 'must be a sandbox id (sbx- and 32 hex digits)')
      .optional(),
    /** A copy of the workspace this snapshot of the caller's holds (the id `snapshot` printed). */
    from_snapshot: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/, 'must be a snapshot id (sha256: and 64 lowercase hex digits)')
      .optional(),
  })
  .strict()
  .refine((o) => !(o.from_sandbox && o.from_snapshot), {
    message: 'names both from_sandbox and from_snapshot; a sandbox is copied from one of them',
    path: ['from_snapshot'],
  });
export type CreateOptions = z.infer<typeof CreateOptionsSchema>;

/** `capabilities_json` → the create options ('' and arrays: none). */
export function parseCreateOptions(text: string): CreateOptions {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BlueprintError('INVALID_REQUEST', 'capabilities_json is not valid JSON', {
      details: { field: 'capabilities_json' },
    });
  }
  if (Array.isArray(value)) return {};
  const r = CreateOptionsSchema.safeParse(value);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const keys = i.code === 'unrecognized_keys' ? ` (${i.keys.join(', ')})` : '';
    const at = ['capabilities_json', ...i.path].join('.');
    throw new BlueprintError('INVALID_REQUEST', `${at}: ${i.message}${keys}`, { details: { field: at } });
  }
  return r.data;
}
