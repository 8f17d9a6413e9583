// verifyBoundAttestation for browsers (WebCrypto, async): SEV-SNP evidence, then the binding of
// report_data to the caller's own context + key + nonce, then the caller's measurement allow-list.
// TDX and Nitro are not verified here: @phala/dcap-qvl 0.3.9 calls node:crypto's X509Certificate
// and createVerify directly (its browser field maps crypto to nothing), so they answer "use the CLI".
import { checkClaimedBinding } from './binding.ts';
import { fromHex } from './bytes.ts';
import { AttestationError } from './errors.ts';
import { type MeasurementEntry, measurementAllowed } from './measurements.ts';
import type { SevAnchors, SevMinTcb } from './sev-report.ts';
import { verifySnpReportWeb } from './sev-web.ts';
import type { EvidenceFacts, Verification } from './types.ts';
import type { AttestationResult, BindingExpectation, BoundAttestation } from './verify.ts';

export interface WebAttestationOptions {
  /** Verification time, unix milliseconds (Date.now() in a page; pinned in tests). */
  nowMs: number;
  /** AMD ARK/ASK the user trusts: AMD Milan's by default, a test PKI's for a devnet. */
  sevAnchors: SevAnchors;
  sevMinTcb?: SevMinTcb;
  expect: BindingExpectation;
  allowList: readonly MeasurementEntry[];
  /** Default true: an empty allow-list never matches. */
  requirePinned?: boolean;
}

export const CLI_ONLY_REASON =
  'this browser verifies SEV-SNP only; verify TDX and Nitro evidence with the CLI: agent-sandbox tee verify';

/** Same verdicts, flags and reasons as verifyBoundAttestation (verify.ts); SEV-SNP only. */
export async function verifyBoundAttestationWeb(
  a: BoundAttestation,
  o: WebAttestationOptions,
): Promise<AttestationResult> {
  const v: Verification = {
    verdict: 'unverified',
    structural_ok: false,
    signature_verified: false,
    report_data_matched: false,
    measurement_matched: false,
  };
  const fail = (e: unknown): AttestationResult => ({
    verification: { ...v, reason: e instanceof Error ? e.message : String(e) },
  });
  let evidence: Uint8Array;
  let pubkey: Uint8Array;
  let vcek: string;
  try {
    evidence = fromHex(a.evidence, 'evidence');
    pubkey = fromHex(a.binding?.pubkey ?? '', 'binding.pubkey');
    if (a.tee !== 'sev') return fail(new AttestationError('BAD_INPUT', `${a.tee}: ${CLI_ONLY_REASON}`));
    const c = (a.collateral as { vcek?: unknown } | undefined)?.vcek;
    if (typeof c !== 'string') {
      throw new AttestationError('BAD_INPUT', 'an SNP report needs its VCEK as collateral {vcek: derHex}');
    }
    vcek = c;
    v.structural_ok = true;
  } catch (e) {
    return fail(e);
  }
  let facts: EvidenceFacts;
  try {
    facts = await verifySnpReportWeb(evidence, fromHex(vcek, 'VCEK'), {
      nowMs: o.nowMs,
      anchors: o.sevAnchors,
      ...(o.sevMinTcb ? { minTcb: o.sevMinTcb } : {}),
    });
    v.signature_verified = true;
  } catch (e) {
    return fail(e);
  }
  try {
    checkClaimedBinding(a.report_data, facts.reportData, o.expect.ctx, pubkey, o.expect.nonce);
    v.report_data_matched = true;
  } catch (e) {
    return { ...fail(e), facts };
  }
  v.measurement_matched = measurementAllowed(facts, o.allowList);
  if (!v.measurement_matched && (o.requirePinned ?? true)) {
    return {
      verification: {
        ...v,
        verdict: 'measurement_mismatch',
        reason: `measurements ${JSON.stringify(facts.measurements)} are not in your allow-list`,
      },
      facts,
    };
  }
  return { verification: { ...v, verdict: 'verified' }, facts, pubkey };
}
