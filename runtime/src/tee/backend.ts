// The TEE backend interface (spec tee.md §1, in TS): where evidence comes from and where the
// sealing key lives. `direct` runs sandboxes on this confidential VM's own engine (the
// SandboxManager deploys them), holds the keys in this process and takes quotes from
// configfs-tsm. `phala` deploys each sandbox as a dstack CVM whose sidecar holds the key and
// makes the quotes; the operator only forwards (it can neither read a sealed body nor swap the key
// without the client's binding check failing).
import type { TeeKind } from '@agent-sandbox/attestation';

export interface TeeEvidence {
  tee: TeeKind;
  evidence: Uint8Array;
  /** TDX: Intel PCS collateral JSON; SEV: {vcek: derHex}; Nitro: none. */
  collateral?: unknown;
}

interface TeeBackendBase {
  readonly name: 'direct' | 'phala';
  teeType(): TeeKind;
  /** False ⇒ a nonce challenge fails closed (no backend of ours returns false). */
  supportsAttestationReportData(): boolean;
  /** Fails, saying why, when this host cannot produce evidence (checked once at start). */
  check(): Promise<void>;
}

/** The sealing key lives in this (operator) process, which runs inside the TEE. */
export interface LocalTeeBackend extends TeeBackendBase {
  readonly keyHolder: 'operator';
  /** Fresh evidence whose signed report_data is exactly these 64 bytes. */
  attest(reportData: Uint8Array, sandboxId: string): Promise<TeeEvidence>;
}

export interface TeeDeployParams {
  sandboxId: string;
  /** The binding context (`chainId:serviceId:sandboxId:operator`) the enclave is started with. */
  ctx: string;
  image: string;
  cpuCores: number;
  memoryMb: number;
  diskGb: number;
  /** The user's env for the sandbox (not delivered to a CVM: only the owner may set env there). */
  env: Record<string, string>;
}

export interface TeeDeployment {
  sandboxId: string;
  deploymentId: string;
  /** Where the operator reaches the sandbox's sidecar (never published on chain). */
  sidecarUrl: string;
}

/** The sealing key lives in the sandbox's sidecar inside a CVM; evidence and sealed bodies are forwarded. */
export interface SandboxTeeBackend extends TeeBackendBase {
  readonly keyHolder: 'sandbox';
  deploy(p: TeeDeployParams): Promise<TeeDeployment>;
  /** The sidecar's answer to GET /tee/attestation or /tee/public-key, untouched. */
  forwardEvidence(
    sandboxId: string,
    what: 'attestation' | 'public-key',
    nonceHex: string,
  ): Promise<Record<string, unknown>>;
  /** The sandbox's sidecar (URL and bearer token) for the operator API's sidecar client. */
  endpoint(sandboxId: string): { url: string; token: string };
  /**
   * Relays one owner-channel message (encrypted to the sidecar's key, signed inside by the owner)
   * to the sidecar's POST /tee/channel and returns its streamed, sealed answer. The only way an
   * owner operation reaches a CVM: the operator's token opens no owner route there.
   */
  forwardChannel(sandboxId: string, message: Uint8Array): Promise<Response>;
  stop(sandboxId: string): Promise<void>;
  destroy(sandboxId: string): Promise<void>;
}

export type TeeBackend = LocalTeeBackend | SandboxTeeBackend;
