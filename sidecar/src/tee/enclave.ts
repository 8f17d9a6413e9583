// The sealing key inside a dstack CVM (spec tee.md §4, TEE_BACKEND=phala): an X25519 key pair
// made at boot in this process's memory, never written anywhere; every quote the dstack agent
// gives us carries report_data = binding(ctx, public key, caller nonce); sealed secrets are
// opened here. The context is fixed at boot (SIDECAR_TEE_CONTEXT), so a body sealed for another
// sandbox, service or operator cannot open. The operator only forwards.
import {
  bindingReportData,
  ChannelEndpoint,
  generateKeyPair,
  keyId,
  parseNonce,
  SEALED_ALGORITHM,
  SealedSecretOpener,
  toHex,
} from '@agent-sandbox/attestation/sealing';
import { SidecarError } from '../errors.ts';
import { firstPlatformOwned } from '../user-env/user-env.ts';
import { parseTeeContext } from './context.ts';
import type { DstackClient } from './dstack-client.ts';

export interface EnclaveEvidence {
  tee: 'tdx';
  evidence: string;
  report_data: string;
  binding: { ctx: string; nonce: string; pubkey: string };
  pubkey: string;
  /** dstack's RTMR event log (JSON text), for replaying RTMR3 (app id, compose hash). */
  event_log: string;
}

export class DstackEnclave {
  readonly #publicKey: Uint8Array;
  readonly #opener: SealedSecretOpener;
  readonly sandboxId: string;
  /** The owner channel's end here: requests encrypted to this key, signed by the context's owner. */
  readonly channel: ChannelEndpoint;
  constructor(
    private readonly ctx: string,
    private readonly dstack: DstackClient,
  ) {
    this.sandboxId = parseTeeContext(ctx).sandboxId;
    const kp = generateKeyPair();
    this.#publicKey = kp.publicKey;
    this.#opener = new SealedSecretOpener(kp.secretKey, kp.publicKey, ctx, this.sandboxId);
    this.channel = new ChannelEndpoint(kp.secretKey, kp.publicKey, ctx);
  }

  get keyId(): string {
    return keyId(this.#publicKey);
  }

  async evidence(nonceHex: string | null): Promise<EnclaveEvidence> {
    let nonce: Uint8Array;
    try {
      nonce = parseNonce(nonceHex ?? '');
    } catch {
      throw new SidecarError(
        'INVALID_REQUEST',
        'send ?nonce=<32 random bytes as 64 hex digits>: the quote is bound to it',
        400,
      );
    }
    const reportData = bindingReportData(this.ctx, this.#publicKey, nonce);
    const q = await this.dstack.getQuote(reportData);
    return {
      tee: 'tdx',
      evidence: toHex(q.quote),
      report_data: toHex(reportData),
      binding: { ctx: this.ctx, nonce: toHex(nonce), pubkey: toHex(this.#publicKey) },
      pubkey: toHex(this.#publicKey),
      event_log: q.eventLog,
    };
  }

  async publicKey(nonceHex: string | null) {
    return { ...(await this.evidence(nonceHex)), algorithm: SEALED_ALGORITHM, key_id: this.keyId };
  }

  /** The env inside, or undefined for any failure (a replay, another sandbox's body, a platform name). */
  open(body: unknown): Record<string, string> | undefined {
    let env: Record<string, string>;
    try {
      env = this.#opener.open(body);
    } catch {
      return undefined;
    }
    return firstPlatformOwned(env) ? undefined : env;
  }
}
