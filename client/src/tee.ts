// TEE-instance verification on the user's machine, before any secret leaves it: the v1 attestation
// document from the reportProvisioned calldata (its hash checked against the contract), then fresh
// evidence over our own nonce from the operator API; both verified against vendor roots (or test
// anchors), bound to (chain, service, sandbox, operator) and the user's measurement allow-list.
import { randomBytes } from 'node:crypto';
import {
  type AttestationResult,
  type BoundAttestation,
  ChannelClient,
  contextString,
  docAsAttestation,
  type MeasurementEntry,
  onChainNonce,
  parseAttestationDoc,
  parseContext,
  productionAnchors,
  type SealedBody,
  type SevMinTcb,
  sealSecrets,
  type TrustAnchors,
  toHex,
  verifyBoundAttestation,
} from '@agent-sandbox/attestation';
import { type Address, createPublicClient, type Hex, http, type LocalAccount } from 'viem';
import { z } from 'zod';
import { ClientError, ExitCode } from './errors.ts';
import type { OperatorHttp } from './operator-http.ts';
import { type OnChainAttestation, readOnChainAttestation as readFromChain } from './tee-chain.ts';

export type { OnChainAttestation };

export interface TeeTarget {
  rpcUrl: string;
  /** The TEE-instance blueprint (service manager) contract. */
  blueprint: Address;
  serviceId: bigint;
  operator: Address;
  /** Who the enclave must take orders from: you (the signing wallet). Part of the binding context. */
  owner: Address;
  /** Where to start looking for the TeeAttestationStored event (RPCs limit log ranges). Default 0. */
  fromBlock?: bigint;
}

export interface TeeVerifyOptions {
  allowList: readonly MeasurementEntry[];
  anchors?: TrustAnchors;
  sevMinTcb?: SevMinTcb;
  /** Unix ms; default Date.now(). */
  nowMs?: number;
}

const notVerified = (what: string, r: AttestationResult) =>
  new ClientError(
    'ATTESTATION',
    `${what}: ${r.verification.verdict} (${r.verification.reason ?? 'no reason'})`,
    {
      exitCode: ExitCode.ATTESTATION,
      details: { verification: r.verification },
    },
  );

/** The document the operator posted (tee-chain.ts), read over `t.rpcUrl`. */
export function readOnChainAttestation(t: TeeTarget): Promise<OnChainAttestation> {
  return readFromChain(createPublicClient({ transport: http(t.rpcUrl) }), t);
}

const AttestationView = z.looseObject({
  tee: z.enum(['tdx', 'sev', 'nitro']),
  evidence: z.string(),
  collateral: z.unknown().optional(),
  report_data: z.string(),
  binding: z.object({ ctx: z.string(), nonce: z.string(), pubkey: z.string() }),
  key_id: z.string().optional(),
});

export interface TeeVerified {
  sandboxId: string;
  ctx: string;
  onChain: AttestationResult;
  live: AttestationResult;
  /** The bound sealing key, verified over our own fresh nonce. */
  pubkey: Uint8Array;
  tx: Hex;
}

/**
 * The enclave takes orders from the owner its context names: one naming another wallet (a
 * swapped owner) would obey someone else, so it is refused before anything else is looked at.
 */
function refuseOtherOwner(ctx: string, me: Address, what: string): void {
  let owner: string;
  try {
    owner = parseContext(ctx).owner;
  } catch {
    throw new ClientError(
      'ATTESTATION',
      `the ${what} names no owner (an enclave from before owner binding?)`,
      {
        exitCode: ExitCode.ATTESTATION,
      },
    );
  }
  if (owner !== me.toLowerCase()) {
    throw new ClientError(
      'ATTESTATION',
      `the ${what} says the enclave takes orders from ${owner}, not from you (${me.toLowerCase()}): nothing was sent`,
      { exitCode: ExitCode.ATTESTATION },
    );
  }
}

/** Both checks; throws ClientError ATTESTATION (exit 8) unless both are `verified`. */
export async function verifyTeeInstance(
  t: TeeTarget,
  api: Pick<OperatorHttp, 'json'>,
  o: TeeVerifyOptions,
): Promise<TeeVerified> {
  const anchors = o.anchors ?? productionAnchors();
  const nowMs = o.nowMs ?? Date.now();
  const chainDoc = await readOnChainAttestation(t);
  const doc = (() => {
    try {
      return parseAttestationDoc(chainDoc.json);
    } catch (e) {
      throw new ClientError(
        'ATTESTATION',
        `the on-chain attestation is not a v1 document: ${(e as Error).message}`,
        {
          exitCode: ExitCode.ATTESTATION,
        },
      );
    }
  })();
  const ctx = contextString({
    chainId: chainDoc.chainId,
    serviceId: t.serviceId,
    sandboxId: chainDoc.sandboxId,
    operator: t.operator,
    owner: t.owner,
  });
  refuseOtherOwner(doc.binding.ctx, t.owner, 'on-chain attestation');
  // A fresh nonce of ours: the operator cannot replay evidence made for anyone else.
  const nonce = new Uint8Array(randomBytes(32));
  const view = await api.json('GET', `/api/sandbox/tee/public-key?nonce=${toHex(nonce)}`, AttestationView);
  refuseOtherOwner(view.binding.ctx, t.owner, 'live attestation');
  const policy = {
    nowMs,
    anchors,
    allowList: o.allowList,
    ...(o.sevMinTcb ? { sevMinTcb: o.sevMinTcb } : {}),
  };
  const live = verifyBoundAttestation(view as BoundAttestation, { ...policy, expect: { ctx, nonce } });
  if (live.verification.verdict !== 'verified') throw notVerified('live attestation over our nonce', live);
  // The chain's document: evidence is on chain, collateral (VCEK / PCS) comes with the live view.
  const onChain = verifyBoundAttestation(docAsAttestation(doc, view.collateral), {
    ...policy,
    expect: { ctx, nonce: onChainNonce(chainDoc.chainId, t.serviceId, t.operator) },
  });
  if (onChain.verification.verdict !== 'verified') throw notVerified('on-chain attestation', onChain);
  return { sandboxId: chainDoc.sandboxId, ctx, onChain, live, pubkey: live.pubkey!, tx: chainDoc.tx };
}

/**
 * The owner's channel into a verified enclave: requests encrypted to the key verified over our
 * own nonce, signed by `owner` inside, relayed by the operator API (POST /api/sandbox/tee/channel).
 */
export function ownerChannel(
  verified: Pick<TeeVerified, 'pubkey' | 'ctx'>,
  api: Pick<OperatorHttp, 'request'>,
  owner: LocalAccount,
): ChannelClient {
  return new ChannelClient({
    pubkey: verified.pubkey,
    ctx: verified.ctx,
    address: owner.address,
    signMessage: (message) => owner.signMessage({ message }),
    relay: (bytes, type, signal) =>
      api.request('POST', '/api/sandbox/tee/channel', {
        raw: { bytes, type },
        timeoutMs: 24 * 3_600_000, // a terminal or agent-run stream lasts as long as the owner keeps it
        ...(signal ? { signal } : {}),
      }),
  });
}

const SealedAnswer = z.looseObject({ success: z.boolean(), secrets_count: z.number().optional() });

/**
 * Verify, then seal `env` to the verified key and send it through the owner channel, signed by the
 * owner inside (the enclave takes sealed secrets from its owner only, on both backends). A relay
 * that refuses the channel gets nothing else: no fallback to a route the operator could replay.
 */
export async function sendSealedSecrets(
  t: TeeTarget,
  api: Pick<OperatorHttp, 'json' | 'request'>,
  env: Record<string, string>,
  o: TeeVerifyOptions & { owner: LocalAccount },
): Promise<{ verified: TeeVerified; secrets_count: number }> {
  const verified = await verifyTeeInstance(t, api, o);
  const body: SealedBody = sealSecrets(verified.pubkey, verified.ctx, verified.sandboxId, env);
  const answer = await ownerChannel(verified, api, o.owner).json('POST', '/tee/sealed-secrets', body);
  const r = SealedAnswer.parse(answer.json);
  if (!r.success) {
    throw new ClientError(
      'REMOTE',
      'the enclave refused the sealed secrets (it says no more, by design); retry',
      {
        exitCode: ExitCode.REMOTE,
      },
    );
  }
  return { verified, secrets_count: r.secrets_count ?? Object.keys(env).length };
}
