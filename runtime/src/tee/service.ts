// The TEE side of the operator API: per sandbox, an X25519 sealing key and evidence over
// report_data binding (context, key, nonce) per spec tee.md §4, and sealed secrets opened into
// the sandbox's normal secret path. With a `direct` backend the key is made in this process's
// memory (inside the confidential VM) and never persisted; with `phala` it lives in the sandbox's
// sidecar inside its CVM and this class only forwards, adding the operator's own verdict (a hint).
// The context string comes from the caller (runtime knows no chain).
import {
  type AttestationDocV1,
  type BoundAttestation,
  bindingReportData,
  generateKeyPair,
  keyId,
  type MeasurementEntry,
  parseNonce,
  SEALED_ALGORITHM,
  SealedSecretOpener,
  serializeAttestationDoc,
  type TeeKind,
  type TrustAnchors,
  toHex,
  type Verification,
  verifyBoundAttestation,
} from '@agent-sandbox/attestation';
import { ChannelEndpoint } from '@agent-sandbox/attestation/sealing';
import { RuntimeError } from '../errors.ts';
import type { TeeBackend } from './backend.ts';
import { directChannel, type SidecarTarget } from './direct-channel.ts';

export interface TeeServiceOptions {
  backend: TeeBackend;
  /** `chainId:serviceId:sandboxId:operator` for a sandbox (blueprint-lib's contextString). */
  contextFor(sandboxId: string): string;
  /** Where opened secrets go: the sandbox's normal secret path. */
  injectSecrets(sandboxId: string, env: Record<string, string>): Promise<unknown>;
  /**
   * direct: the sandbox's sidecar inside this CVM, which the owner channel ends in front of (the
   * operator API's plain routes do not reach it for a TEE sandbox).
   */
  sidecarFor?(sandboxId: string): Promise<SidecarTarget> | SidecarTarget;
  log?: (fields: Record<string, unknown>, msg: string) => void;
  /** The operator's own check of its evidence (a hint to callers; clients verify themselves). */
  verify: {
    anchors?: TrustAnchors;
    acceptedTcbStatuses: readonly string[];
    allowList: readonly MeasurementEntry[];
    requirePinned: boolean;
  };
  now?: () => number;
}

export interface TeeAttestationView {
  tee: TeeKind;
  evidence: string;
  collateral?: unknown;
  report_data: string;
  binding: { ctx: string; nonce: string; pubkey: string };
  pubkey: string;
  measurements: Record<string, string>;
  verification: Verification;
}

interface SealingKey {
  publicKey: Uint8Array;
  opener: SealedSecretOpener;
  /** The owner channel's end (direct): same key, the context's owner checked on every request. */
  endpoint: ChannelEndpoint;
}

export class TeeService {
  readonly #keys = new Map<string, SealingKey>();
  constructor(private readonly o: TeeServiceOptions) {}

  get teeType() {
    return this.o.backend.teeType();
  }

  #key(sandboxId: string): SealingKey {
    let k = this.#keys.get(sandboxId);
    if (!k) {
      const kp = generateKeyPair();
      const ctx = this.o.contextFor(sandboxId);
      k = {
        publicKey: kp.publicKey,
        opener: new SealedSecretOpener(kp.secretKey, kp.publicKey, ctx, sandboxId),
        endpoint: new ChannelEndpoint(kp.secretKey, kp.publicKey, ctx),
      };
      this.#keys.set(sandboxId, k);
    }
    return k;
  }

  /** Forget a sandbox's key (on delete): a later sandbox with its id gets a new one. */
  forget(sandboxId: string): void {
    this.#keys.delete(sandboxId);
  }

  async evidence(
    sandboxId: string,
    nonce: Uint8Array,
    what: 'attestation' | 'public-key' = 'attestation',
  ): Promise<TeeAttestationView> {
    if (!this.o.backend.supportsAttestationReportData()) {
      throw new RuntimeError('CONFLICT', 'this TEE backend cannot bind a nonce; no attestation is offered');
    }
    const ctx = this.o.contextFor(sandboxId);
    if (this.o.backend.keyHolder === 'sandbox') {
      const fwd = await this.o.backend.forwardEvidence(sandboxId, what, toHex(nonce));
      const r = this.#check(fwd as unknown as BoundAttestation, ctx, nonce);
      // Untouched: the client checks the same bytes against its own context and nonce.
      return {
        ...(fwd as unknown as TeeAttestationView),
        measurements: r.facts?.measurements ?? {},
        verification: r.verification,
      };
    }
    const { publicKey } = this.#key(sandboxId);
    const reportData = bindingReportData(ctx, publicKey, nonce);
    const ev = await this.o.backend.attest(reportData, sandboxId);
    const att = {
      tee: ev.tee,
      evidence: toHex(ev.evidence),
      ...(ev.collateral === undefined ? {} : { collateral: ev.collateral }),
      report_data: toHex(reportData),
      binding: { ctx, nonce: toHex(nonce), pubkey: toHex(publicKey) },
    };
    const r = this.#check(att, ctx, nonce);
    return {
      ...att,
      pubkey: toHex(publicKey),
      measurements: r.facts?.measurements ?? {},
      verification: r.verification,
    };
  }

  #check(att: BoundAttestation, ctx: string, nonce: Uint8Array) {
    return verifyBoundAttestation(att, {
      nowMs: (this.o.now ?? Date.now)(),
      expect: { ctx, nonce },
      allowList: this.o.verify.allowList,
      requirePinned: this.o.verify.requirePinned,
      acceptedTcbStatuses: this.o.verify.acceptedTcbStatuses,
      ...(this.o.verify.anchors ? { anchors: this.o.verify.anchors } : {}),
    });
  }

  async attestation(sandboxId: string, nonceHex: string | undefined): Promise<TeeAttestationView> {
    return this.evidence(sandboxId, this.#nonce(nonceHex));
  }

  async publicKey(sandboxId: string, nonceHex: string | undefined) {
    if (this.o.backend.keyHolder === 'sandbox') {
      // The sidecar names its own algorithm and key id beside the evidence.
      return this.evidence(sandboxId, this.#nonce(nonceHex), 'public-key');
    }
    const view = await this.evidence(sandboxId, this.#nonce(nonceHex));
    return { ...view, algorithm: SEALED_ALGORITHM, key_id: keyId(this.#key(sandboxId).publicKey) };
  }

  /**
   * The operator API's plain sealed route: refused on both backends. Anyone may seal to the public
   * key, so a body the API delivers could be the host's or the operator's own env (an agent
   * command, a base URL) under the owner's replayed session; the enclave takes sealed secrets from
   * its owner only, through the owner channel, where the owner's signature is checked inside.
   */
  async sealedSecrets(
    _sandboxId: string,
    _body: unknown,
  ): Promise<{ success: boolean; secrets_count: number }> {
    throw new RuntimeError(
      'CONFLICT',
      'this enclave takes sealed secrets only from its owner, through the owner channel (POST …/tee/channel); update agent-sandbox',
    );
  }

  /** Opens here (direct); the plaintext goes only to the sandbox's secret path. Any failure: success false. */
  async #openSealed(sandboxId: string, body: unknown): Promise<{ success: boolean; secrets_count: number }> {
    let env: Record<string, string>;
    try {
      env = this.#key(sandboxId).opener.open(body);
    } catch {
      return { success: false, secrets_count: 0 };
    }
    await this.o.injectSecrets(sandboxId, env);
    return { success: true, secrets_count: Object.keys(env).length };
  }

  /**
   * An owner-channel message: relayed to the CVM (phala), or ended here (direct: this program is
   * the enclave); either way the answer streams back sealed to the owner.
   */
  async channel(sandboxId: string, message: Uint8Array): Promise<Response> {
    if (this.o.backend.keyHolder === 'sandbox') return this.o.backend.forwardChannel(sandboxId, message);
    const sidecarFor = this.o.sidecarFor;
    if (!sidecarFor) {
      throw new RuntimeError('CONFLICT', `the ${this.o.backend.name} backend here has no sandbox to reach`);
    }
    return directChannel(
      {
        endpoint: this.#key(sandboxId).endpoint,
        sidecar: () => sidecarFor(sandboxId),
        sealed: (body) => this.#openSealed(sandboxId, body),
        ...(this.o.log ? { log: this.o.log } : {}),
      },
      message,
    );
  }

  /** The v1 document for reportProvisioned, over the on-chain nonce. */
  async onChainDocument(
    sandboxId: string,
    nonce: Uint8Array,
  ): Promise<{ json: string; doc: AttestationDocV1 }> {
    const v = await this.evidence(sandboxId, nonce);
    const json = serializeAttestationDoc({
      tee: v.tee,
      evidence: v.evidence,
      reportData: v.report_data,
      binding: v.binding,
      measurements: v.measurements,
      ts: Math.floor((this.o.now ?? Date.now)() / 1000),
    });
    return { json, doc: JSON.parse(json) as AttestationDocV1 };
  }

  #nonce(hex: string | undefined): Uint8Array {
    if (!hex)
      throw new RuntimeError(
        'VALIDATION',
        'send ?nonce=<32 random bytes as 64 hex digits>: evidence is bound to it',
      );
    try {
      return parseNonce(hex);
    } catch {
      throw new RuntimeError('VALIDATION', 'nonce must be 32 bytes as 64 hex digits (0x optional)');
    }
  }
}
