// Jobs 0 and 1 on the wire (spec/contract.md): the SandboxCreateRequest input taken from the
// generated blueprint ABI, its validation (nothing secret may go on chain), the flat encodings
// front-ends send, and decoding of the outputs the operator posts back.
import {
  jsonOutputParams,
  type SandboxCreateRequest,
  sandboxCreateOutputParams,
  sandboxCreateRequestParams,
  sandboxDeleteInputParams,
} from '@agent-sandbox/contracts';
import { type AbiParameter, decodeAbiParameters, encodeAbiParameters, type Hex } from 'viem';
import { z } from 'zod';
import { ClientError } from './errors.ts';

export const JOB_SANDBOX_CREATE = 0;
export const JOB_SANDBOX_DELETE = 1;

/** SandboxCreateRequest, typed from the generated ABI (contracts/jobs.ts). */
export type { SandboxCreateRequest };

/** The fields in on-chain order, from the generated ABI (contracts/jobs.ts). */
export const FIELD_ORDER: ReadonlyArray<keyof SandboxCreateRequest> = sandboxCreateRequestParams.map(
  (p) => p.name,
);

/** The struct's components, from the generated IAgentSandboxJobs ABI (contracts/jobs.ts). */
export function sandboxCreateRequestLayout(): { components: readonly AbiParameter[]; source: 'abi' } {
  return { components: sandboxCreateRequestParams, source: 'abi' };
}

export function sandboxCreateRequestComponents(): readonly AbiParameter[] {
  return sandboxCreateRequestParams;
}

// Job 0's output is posted as one tuple `abi.encode((string sandboxId, string json))`.
const DELETE_INPUT = sandboxDeleteInputParams;

/** Env names that look like credentials: they belong in `secrets set`, never on chain. */
const SECRET_NAME = /(SECRET|TOKEN|PASSWORD|PASSWD|PRIVATE|CREDENTIAL|API_?KEY|ACCESS_?KEY|_KEY$)/i;

const u64 = (what: string) =>
  z
    .union([z.bigint(), z.number().int(), z.string().regex(/^\d+$/)])
    .transform((v) => BigInt(v))
    .refine((v) => v >= 0n && v < 2n ** 64n, `${what} must fit in uint64`);

const jsonText = (what: string, kind: 'object' | 'array' | 'any') =>
  z.string().refine(
    (s) => {
      try {
        const v = JSON.parse(s);
        if (kind === 'object') return v !== null && typeof v === 'object' && !Array.isArray(v);
        if (kind === 'array') return Array.isArray(v);
        return true;
      } catch {
        return false;
      }
    },
    `${what} must be JSON${kind === 'any' ? '' : ` (an ${kind})`}`,
  );

const CreateRequestSchema = z
  .object({
    name: z.string().max(255).default(''),
    image: z.string().max(512).default(''),
    stack: z.string().max(255).default(''),
    agent_identifier: z.string().max(255).default(''),
    env_json: jsonText('env_json', 'object').default('{}'),
    metadata_json: jsonText('metadata_json', 'object').default('{}'),
    ssh_enabled: z.boolean().default(false),
    ssh_public_key: z.string().max(16_384).default(''),
    web_terminal_enabled: z.boolean().default(true),
    max_lifetime_seconds: u64('max_lifetime_seconds').default(3600n),
    idle_timeout_seconds: u64('idle_timeout_seconds').default(900n),
    // 0 = from the operator's default preset (clamped to its ceiling), or from the named `shape`.
    cpu_cores: u64('cpu_cores').default(0n),
    memory_mb: u64('memory_mb').default(0n),
    disk_gb: u64('disk_gb').default(0n),
    tee_required: z.boolean().default(false),
    tee_type: z.number().int().min(0).max(3).default(0),
    attestation_nonce: z.string().max(1024).default(''),
    capabilities_json: jsonText('capabilities_json', 'any').default('{}'),
  })
  .strict()
  .superRefine((r, ctx) => {
    if (r.tee_required && r.tee_type === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['tee_type'],
        message: 'tee_required needs a tee_type (1 TDX, 2 Nitro, 3 SEV)',
      });
    }
    if (r.ssh_enabled && !r.ssh_public_key) {
      ctx.addIssue({
        code: 'custom',
        path: ['ssh_public_key'],
        message: 'ssh_enabled needs an ssh_public_key',
      });
    }
    const env = JSON.parse(r.env_json) as Record<string, unknown>;
    for (const [k, v] of Object.entries(env)) {
      if (typeof v !== 'string') {
        ctx.addIssue({
          code: 'custom',
          path: ['env_json', k],
          message: `env value of ${k} must be a string`,
        });
      }
      if (SECRET_NAME.test(k)) {
        ctx.addIssue({
          code: 'custom',
          path: ['env_json', k],
          message: `${k} looks like a secret, and job inputs are public on chain; set it after create with \`agent-sandbox secrets set\``,
        });
      }
    }
  });

export type SandboxCreateRequestInput = z.input<typeof CreateRequestSchema>;

/** Fills defaults and validates; every problem is a USAGE error naming the field. */
export function buildCreateRequest(input: SandboxCreateRequestInput = {}): SandboxCreateRequest {
  const parsed = CreateRequestSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
    throw new ClientError('USAGE', `invalid create request: ${where}${issue.message}`);
  }
  return parsed.data;
}

/** Job 0 input, flat: `encodeAbiParameters(fields, values)` as Tangle front-ends send it. */
export function encodeCreateInput(req: SandboxCreateRequest): Hex {
  return encodeAbiParameters(
    sandboxCreateRequestComponents(),
    FIELD_ORDER.map((k) => req[k]),
  );
}

/** Job 1 input, flat `(string sandbox_id)`. */
export function encodeDeleteInput(sandboxId: string): Hex {
  if (!sandboxId || new TextEncoder().encode(sandboxId).length > 255) {
    throw new ClientError('USAGE', 'sandbox id must be 1–255 bytes');
  }
  return encodeAbiParameters(DELETE_INPUT, [sandboxId]);
}

export interface CreateOutput {
  /** Empty when provisioning failed. */
  sandboxId: string;
  /** The result document: sandboxId, the operator API URL and public facts; `error`/`phase` on failure. */
  json: Record<string, unknown>;
}

function parseResultJson(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return { raw: text };
  }
}

/**
 * Decodes the create output: a single tuple per the spec; a flat pair is accepted too. Each form
 * must re-encode to the same bytes, so one form is never misread as the other.
 */
/**
 * A job output's fields, whether posted as one tuple (as operators post results) or flat: the
 * encoding that re-encodes to the same bytes wins, so neither is misread as the other.
 */
function decodeOutput<const P extends readonly AbiParameter[]>(
  params: P,
  output: Hex,
): Record<string, unknown> | undefined {
  const same = (a: Hex) => a.toLowerCase() === output.toLowerCase();
  const tuple = [{ type: 'tuple', components: params }] as const;
  try {
    const [v] = decodeAbiParameters(tuple, output) as unknown as [Record<string, unknown>];
    if (same(encodeAbiParameters(tuple, [v as never]))) return v;
  } catch {
    // not the tuple form
  }
  try {
    const values = decodeAbiParameters(params, output);
    if (same(encodeAbiParameters(params, values as never))) {
      return Object.fromEntries(params.map((p, i) => [p.name ?? `${i}`, values[i]]));
    }
  } catch {
    // not the flat form either
  }
  return undefined;
}

export function decodeCreateOutput(output: Hex): CreateOutput {
  const v = decodeOutput(sandboxCreateOutputParams, output);
  if (!v || typeof v['sandboxId'] !== 'string' || typeof v['json'] !== 'string')
    throw new ClientError('CHAIN', 'the operator posted a create result this client cannot decode');
  return { sandboxId: v['sandboxId'], json: parseResultJson(v['json']) };
}

export function decodeDeleteOutput(output: Hex): Record<string, unknown> {
  const v = decodeOutput(jsonOutputParams, output);
  if (!v || typeof v['json'] !== 'string')
    throw new ClientError('CHAIN', 'the operator posted a delete result this client cannot decode');
  return parseResultJson(v['json']);
}

/** The operator API URL a create result names (field spellings vary between writers). */
export function operatorUrlFromResult(json: Record<string, unknown>): string | undefined {
  for (const k of [
    'operatorApiUrl',
    'operator_api_url',
    'operatorUrl',
    'operator_url',
    'apiUrl',
    'api_url',
  ]) {
    const v = json[k];
    if (typeof v === 'string' && /^https?:\/\//.test(v)) return v;
  }
  return undefined;
}
