// The v1 attestation document posted with reportProvisioned (spec tee.md §3): fixed key order,
// lowercase hex, collateral kept off chain. The contract stores keccak256 of these exact bytes.
import { z } from 'zod';
import { AttestationError } from './errors.ts';
import type { TeeKind } from './types.ts';
import type { BoundAttestation } from './verify.ts';

const hex = (bytes?: number) =>
  z
    .string()
    .regex(
      bytes === undefined ? /^([0-9a-f]{2})+$/ : new RegExp(`^[0-9a-f]{${bytes * 2}}$`),
      'lowercase hex',
    );

export const AttestationDocV1Schema = z
  .object({
    v: z.literal(1),
    tee: z.enum(['tdx', 'sev', 'nitro']),
    evidence: hex(),
    report_data: hex(64),
    binding: z.object({ ctx: z.string().min(1).max(400), nonce: hex(32), pubkey: hex(32) }).strict(),
    measurements: z.record(z.string(), hex()),
    ts: z.number().int().nonnegative(),
  })
  .strict();
export type AttestationDocV1 = z.infer<typeof AttestationDocV1Schema>;

export interface DocInput {
  tee: TeeKind;
  evidence: string;
  reportData: string;
  binding: { ctx: string; nonce: string; pubkey: string };
  measurements: Record<string, string>;
  ts: number;
}

/** Serialise in the spec's key order (JSON.stringify keeps insertion order). */
export function serializeAttestationDoc(d: DocInput): string {
  const doc: AttestationDocV1 = {
    v: 1,
    tee: d.tee,
    evidence: d.evidence.toLowerCase(),
    report_data: d.reportData.toLowerCase(),
    binding: {
      ctx: d.binding.ctx,
      nonce: d.binding.nonce.toLowerCase(),
      pubkey: d.binding.pubkey.toLowerCase(),
    },
    measurements: Object.fromEntries(Object.entries(d.measurements).map(([k, v]) => [k, v.toLowerCase()])),
    ts: Math.floor(d.ts),
  };
  return JSON.stringify(AttestationDocV1Schema.parse(doc));
}

export function parseAttestationDoc(text: string): AttestationDocV1 {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new AttestationError('BAD_INPUT', 'the attestation document is not JSON', { cause: e });
  }
  const r = AttestationDocV1Schema.safeParse(raw);
  if (!r.success) {
    throw new AttestationError(
      'BAD_INPUT',
      `not a v1 attestation document: ${r.error.issues[0]?.message ?? ''}`,
    );
  }
  return r.data;
}

/** The document as a BoundAttestation, with collateral fetched elsewhere (the API). */
export const docAsAttestation = (d: AttestationDocV1, collateral?: unknown): BoundAttestation => ({
  tee: d.tee,
  evidence: d.evidence,
  report_data: d.report_data,
  binding: d.binding,
  ...(collateral === undefined ? {} : { collateral }),
});
