// Shared types of the attestation package.

export type TeeKind = 'tdx' | 'sev' | 'nitro';

/** The contract's `uint8 tee_type`: 0 none, 1 tdx, 2 nitro, 3 sev. */
export const TEE_TYPE_CODE: Record<TeeKind, number> = { tdx: 1, nitro: 2, sev: 3 };

/** What a verified piece of evidence says, once its signature chain and policy checks passed. */
export interface EvidenceFacts {
  tee: TeeKind;
  /** The signed 64-byte report_data (Nitro: user_data). */
  reportData: Uint8Array;
  /** Lowercase hex, by name: mrtd/rtmr0..3, measurement/host_data, pcr0..2. */
  measurements: Record<string, string>;
  tcbStatus?: string;
  advisories?: string[];
}

/** The verdict shape of spec tee.md §5/§6. */
export interface Verification {
  verdict: 'verified' | 'unverified' | 'measurement_mismatch';
  reason?: string;
  structural_ok: boolean;
  signature_verified: boolean;
  report_data_matched: boolean;
  measurement_matched: boolean;
}
