// Intel TDX: a DCAP quote v4 checked with @phala/dcap-qvl (PCK chain to the Intel root, QE
// identity, TCB info, CRLs) at a given `now`, then our policy: TDX report type, accepted TCB
// status, debug off. Measurements: MRTD and RTMR0-3.
import { type Collateral, QuoteVerifier, type VerifiedReport } from '@phala/dcap-qvl';
import { toHex } from './bytes.ts';
import { AttestationError } from './errors.ts';
import type { EvidenceFacts } from './types.ts';

export interface TdxCollateral {
  pck_crl_issuer_chain: string;
  root_ca_crl: string;
  pck_crl: string;
  tcb_info_issuer_chain: string;
  tcb_info: string;
  tcb_info_signature: string;
  qe_identity_issuer_chain: string;
  qe_identity: string;
  qe_identity_signature: string;
}

export interface TdxOptions {
  nowSecs: number;
  /** Intel SGX root CA (DER); default Intel's production root bundled with dcap-qvl. */
  intelRootDer?: Uint8Array;
  acceptedTcbStatuses: readonly string[];
}

const TD_DEBUG_BIT = 0x01; // TDATTRIBUTES bit 0 (byte 0): DEBUG

export function verifyTdxQuote(quote: Uint8Array, collateral: unknown, o: TdxOptions): EvidenceFacts {
  if (!collateral || typeof collateral !== 'object') {
    throw new AttestationError(
      'BAD_INPUT',
      'a TDX quote needs its Intel PCS collateral (GET …/tee/attestation)',
    );
  }
  const verifier = o.intelRootDer
    ? QuoteVerifier.newWithRootCa(Buffer.from(o.intelRootDer))
    : QuoteVerifier.newProd();
  let verified: VerifiedReport;
  try {
    verified = verifier.verify(Buffer.from(quote), collateral as Collateral, o.nowSecs);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    const code = /expired|in the future|not yet valid/i.test(msg) ? 'EXPIRED' : 'SIGNATURE';
    throw new AttestationError(code, `TDX quote does not verify: ${msg}`, { cause: e });
  }
  const type = verified.report.type;
  if (type !== 'td10' && type !== 'td15') {
    throw new AttestationError('POLICY', `the quote is an ${type} quote, not TDX (td10/td15): refused`);
  }
  if (!o.acceptedTcbStatuses.includes(verified.status)) {
    throw new AttestationError(
      'POLICY',
      `TCB status ${verified.status} is not accepted (accepted: ${o.acceptedTcbStatuses.join(', ')})`,
    );
  }
  const td = verified.report.asTd10() ?? verified.report.asTd15()?.base;
  if (!td) throw new AttestationError('BAD_INPUT', 'TDX report body missing');
  if ((td.tdAttributes[0] ?? 0) & TD_DEBUG_BIT) {
    throw new AttestationError('POLICY', 'the TD runs in debug mode: its memory is not private, refused');
  }
  return {
    tee: 'tdx',
    reportData: new Uint8Array(td.reportData),
    measurements: {
      mrtd: toHex(td.mrTd),
      rtmr0: toHex(td.rtMr0),
      rtmr1: toHex(td.rtMr1),
      rtmr2: toHex(td.rtMr2),
      rtmr3: toHex(td.rtMr3),
    },
    tcbStatus: verified.status,
    advisories: verified.advisory_ids,
  };
}
