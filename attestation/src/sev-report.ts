// AMD SEV-SNP report layout and policy, with no node built-ins (shared by sev.ts on node:crypto and
// sev-web.ts on WebCrypto): parsing, the signature as r‖s, and the guest-policy checks.
import { toHex } from './bytes.ts';
import { AttestationError } from './errors.ts';
import { checkReportAgainstVcek, type VcekFacts } from './sev-vcek.ts';
import type { EvidenceFacts } from './types.ts';

export const SNP_REPORT_SIZE = 0x4a0;
/** The report signature covers bytes [0, 0x2a0). */
export const SNP_SIGNED_LEN = 0x2a0;
const POLICY_DEBUG = 1n << 19n;

export interface SevAnchors {
  /** AMD root (ARK) and intermediate (ASK), PEM or DER. */
  ark: string | Uint8Array;
  ask: string | Uint8Array;
}

export interface SevMinTcb {
  bootloader: number;
  tee: number;
  snp: number;
  microcode: number;
}

export interface SevOptions {
  nowMs: number;
  anchors: SevAnchors;
  minTcb?: SevMinTcb;
}

export interface SnpReport {
  version: number;
  policy: bigint;
  vmpl: number;
  reportData: Uint8Array;
  measurement: Uint8Array;
  hostData: Uint8Array;
  reportedTcb: SevMinTcb;
  chipId: Uint8Array;
}

export function parseSnpReport(report: Uint8Array): SnpReport {
  if (report.length !== SNP_REPORT_SIZE) {
    throw new AttestationError(
      'BAD_INPUT',
      `an SNP report is ${SNP_REPORT_SIZE} bytes, got ${report.length}`,
    );
  }
  const v = new DataView(report.buffer, report.byteOffset, report.byteLength);
  const tcb = report.subarray(0x180, 0x188);
  return {
    version: v.getUint32(0, true),
    policy: v.getBigUint64(8, true),
    vmpl: v.getUint32(0x30, true),
    reportData: report.slice(0x50, 0x90),
    measurement: report.slice(0x90, 0xc0),
    hostData: report.slice(0xc0, 0xe0),
    reportedTcb: { bootloader: tcb[0]!, tee: tcb[1]!, snp: tcb[6]!, microcode: tcb[7]! },
    chipId: report.slice(0x1a0, 0x1e0),
  };
}

/** r and s are 72-byte little-endian fields; P-384 uses the low 48 bytes of each. Returns r‖s big-endian. */
export function snpSignatureP1363(report: Uint8Array): Uint8Array {
  const out = new Uint8Array(96);
  out.set(report.slice(0x2a0, 0x2a0 + 48).reverse(), 0);
  out.set(report.slice(0x2e8, 0x2e8 + 48).reverse(), 48);
  return out;
}

/**
 * Policy once the signature verified: version ≥ 2, debug off, VMPL 0, REPORTED_TCB and CHIP_ID
 * those the VCEK was issued for, and the optional minimum TCB applied to the VCEK's TCB (what
 * the signing key proves, not what the report claims).
 */
export function snpPolicyFacts(r: SnpReport, vcek: VcekFacts, minTcb?: SevMinTcb): EvidenceFacts {
  if (r.version < 2) throw new AttestationError('POLICY', `SNP report version ${r.version} < 2`);
  if (r.policy & POLICY_DEBUG) {
    throw new AttestationError(
      'POLICY',
      'the guest policy allows debugging: its memory is not private, refused',
    );
  }
  if (r.vmpl !== 0) throw new AttestationError('POLICY', `the report was requested at VMPL ${r.vmpl}, not 0`);
  checkReportAgainstVcek(r, vcek);
  if (minTcb) {
    for (const k of ['bootloader', 'tee', 'snp', 'microcode'] as const) {
      if (vcek.tcb[k] < minTcb[k]) {
        throw new AttestationError(
          'POLICY',
          `the VCEK's TCB ${k} ${vcek.tcb[k]} is below the minimum ${minTcb[k]}`,
        );
      }
    }
  }
  return {
    tee: 'sev',
    reportData: r.reportData,
    measurements: { measurement: toHex(r.measurement), host_data: toHex(r.hostData) },
  };
}
