// The TEE backend interface (spec tee.md §1, in TS): where evidence comes from. `direct` runs
// sandboxes on this confidential VM's own engine (the SandboxManager deploys them) and takes
// quotes from configfs-tsm; remote backends (phala) also deploy and tear down.
import type { TeeKind } from '@agent-sandbox/attestation';

export interface TeeEvidence {
  tee: TeeKind;
  evidence: Uint8Array;
  /** TDX: Intel PCS collateral JSON; SEV: {vcek: derHex}; Nitro: none. */
  collateral?: unknown;
}

export interface TeeBackend {
  readonly name: 'direct' | 'phala';
  teeType(): TeeKind;
  /** False ⇒ a nonce challenge fails closed (no backend of ours returns false). */
  supportsAttestationReportData(): boolean;
  /** Fresh evidence whose signed report_data is exactly these 64 bytes. */
  attest(reportData: Uint8Array, sandboxId: string): Promise<TeeEvidence>;
  /** Fails, saying why, when this host cannot produce evidence (checked once at start). */
  check(): Promise<void>;
}
