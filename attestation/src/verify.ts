// One verifier for operator and client: evidence (TDX quote, SNP report, Nitro COSE) checked
// against trust anchors at a given time, then the sealing-key binding and the caller's
// measurement allow-list. Freshness comes only from the caller's nonce inside the binding.

import { productionAnchors, type TrustAnchors } from './anchors.ts';
import { checkClaimedBinding } from './binding.ts';
import { fromHex } from './bytes.ts';
import { checkDstackEventLog } from './dstack-eventlog.ts';
import { AttestationError } from './errors.ts';
import { type MeasurementEntry, measurementAllowed } from './measurements.ts';
import { verifyNitroDocument } from './nitro.ts';
import { type SevMinTcb, verifySnpReport } from './sev.ts';
import { verifyTdxQuote } from './tdx.ts';
import type { EvidenceFacts, TeeKind, Verification } from './types.ts';

export interface EvidenceOptions {
  /** Verification time, unix milliseconds. Never defaulted: pass Date.now() explicitly. */
  nowMs: number;
  anchors?: TrustAnchors;
  /** Default ['UpToDate']. */
  acceptedTcbStatuses?: readonly string[];
  sevMinTcb?: SevMinTcb;
}

/** Checks signatures, chains, validity windows and TEE policy; returns the signed facts or throws. */
export function verifyEvidence(
  tee: TeeKind,
  evidence: Uint8Array,
  collateral: unknown,
  o: EvidenceOptions,
): EvidenceFacts {
  const anchors = o.anchors ?? productionAnchors();
  switch (tee) {
    case 'tdx':
      return verifyTdxQuote(evidence, collateral, {
        nowSecs: Math.floor(o.nowMs / 1000),
        acceptedTcbStatuses: o.acceptedTcbStatuses ?? ['UpToDate'],
        ...(anchors.intelRootDer ? { intelRootDer: anchors.intelRootDer } : {}),
      });
    case 'sev': {
      const vcek = (collateral as { vcek?: unknown } | undefined)?.vcek;
      if (typeof vcek !== 'string') {
        throw new AttestationError('BAD_INPUT', 'an SNP report needs its VCEK as collateral {vcek: derHex}');
      }
      return verifySnpReport(evidence, fromHex(vcek, 'VCEK'), {
        nowMs: o.nowMs,
        anchors: anchors.sev,
        ...(o.sevMinTcb ? { minTcb: o.sevMinTcb } : {}),
      });
    }
    case 'nitro':
      return verifyNitroDocument(evidence, { nowMs: o.nowMs, root: anchors.nitroRoot });
    default:
      throw new AttestationError('BAD_INPUT', `unknown TEE type ${String(tee)} (tdx, sev or nitro)`);
  }
}

export { type MeasurementEntry, measurementAllowed, parseAllowList } from './measurements.ts';

/** Attestation as the API and the v1 on-chain document carry it (hex strings). */
export interface BoundAttestation {
  tee: TeeKind;
  evidence: string;
  collateral?: unknown;
  report_data: string;
  binding: { ctx: string; nonce: string; pubkey: string };
  /** TDX from a dstack CVM: the agent's RTMR event log (JSON), replayed to the signed RTMR3. */
  event_log?: string;
}

export interface BindingExpectation {
  /** The context the verifier computed itself (contextString). */
  ctx: string;
  /** The verifier's own nonce (fresh over the API; onChainNonce for the chain's document). */
  nonce: Uint8Array;
}

export interface AttestationOptions extends EvidenceOptions {
  expect: BindingExpectation;
  allowList: readonly MeasurementEntry[];
  /** Default true: an empty allow-list never matches. False: measurements are reported, not required. */
  requirePinned?: boolean;
}

export interface AttestationResult {
  verification: Verification;
  facts?: EvidenceFacts;
  /** The sealing key, only when verdict is `verified`. */
  pubkey?: Uint8Array;
}

export function verifyBoundAttestation(a: BoundAttestation, o: AttestationOptions): AttestationResult {
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
  try {
    evidence = fromHex(a.evidence, 'evidence');
    pubkey = fromHex(a.binding?.pubkey ?? '', 'binding.pubkey');
    v.structural_ok = true;
  } catch (e) {
    return fail(e);
  }
  let facts: EvidenceFacts;
  try {
    facts = verifyEvidence(a.tee, evidence, a.collateral, o);
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
  if (a.tee === 'tdx' && typeof a.event_log === 'string' && a.event_log) {
    // The app facts (compose_hash, app_id, …) join the measurements only through the signed RTMR3,
    // so an allow-list entry may pin {"compose_hash": "…"} beside mrtd and rtmr0-2.
    try {
      const app = checkDstackEventLog(a.event_log, facts.measurements['rtmr3'] ?? '');
      facts = { ...facts, measurements: { ...facts.measurements, ...app } as Record<string, string> };
    } catch (e) {
      return { ...fail(e), facts };
    }
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
