// What the console checks a TEE enclave against, and where each part comes from — never from the
// operator (its /api/capabilities is not read here):
//   chain id       the network of the user's wallet (the RPC the user configured in it)
//   contract, service id   typed by the user (kept in this browser's localStorage)
//   operator       the chain: the service's provisioned operator that reported this page's origin
//                  (getOperatorEndpoints), or an address the user typed that the chain lists
//   sandbox id     the chain: the reportProvisioned call whose attestation hash the contract keeps
//   owner          the signed-in wallet; an enclave naming another owner is refused
// Then the evidence: SEV-SNP is verified in this page (live over our nonce, and the on-chain
// document); TDX and Nitro cannot be (see attestation/src/verify-web.ts), so their key must be the
// one `agent-sandbox tee verify` printed (the user pastes it) and the binding must name it.
import type { AttestationResult, BoundAttestation } from '@agent-sandbox/attestation/browser';
import { createPublicClient, custom, getAddress, isAddress } from 'viem';
import type { TeeSettings } from './tee-session.ts';
import { injected } from './wallet.ts';

export interface ChainContext {
  chainId: bigint;
  serviceId: bigint;
  operator: `0x${string}`;
  sandboxId: string;
  owner: `0x${string}`;
  ctx: string;
  /** The on-chain document and the transaction that carried it. */
  docJson: string;
  tx: string;
  /** Where the operator address came from, for the panel. */
  operatorFrom: 'chain' | 'you';
}

const fail = (m: string) => new Error(m);

/** Reads the context from the chain through the wallet (see the header for where each part comes from). */
export async function chainContext(s: TeeSettings, owner: string): Promise<ChainContext> {
  const [{ operatorEndpoints, readOnChainAttestation }, v] = await Promise.all([
    import('@agent-sandbox/client/browser'),
    import('@agent-sandbox/attestation/browser'),
  ]);
  if (!isAddress(s.blueprint)) throw fail('Enter the TEE-instance contract address (0x…, 20 bytes).');
  if (!/^\d{1,20}$/.test(s.serviceId.trim())) throw fail('Enter the service id (a number).');
  if (!isAddress(owner)) throw fail('Sign in with your wallet first.');
  const blueprint = getAddress(s.blueprint);
  const serviceId = BigInt(s.serviceId.trim());
  const pub = createPublicClient({ transport: custom(injected()) });
  const endpoints = await operatorEndpoints(pub as never, blueprint, serviceId);
  let operator: `0x${string}` | undefined;
  let operatorFrom: ChainContext['operatorFrom'] = 'chain';
  if (s.operator.trim()) {
    if (!isAddress(s.operator.trim())) throw fail('The operator address is not an address.');
    const want = s.operator.trim().toLowerCase();
    operator = endpoints.find((e) => e.operator.toLowerCase() === want)?.operator;
    if (!operator) throw fail(`the chain lists no provisioned operator ${want} for service ${serviceId}`);
    operatorFrom = 'you';
  } else {
    const here = endpoints.filter((e) => {
      try {
        return new URL(e.url).origin === location.origin;
      } catch {
        return false;
      }
    });
    if (here.length !== 1) {
      throw fail(
        here.length === 0
          ? `no operator of service ${serviceId} reported this page's address (${location.origin}) on chain; the chain lists: ${endpoints.map((e) => `${e.operator} at ${e.url}`).join(', ') || 'none'}. Enter the operator address.`
          : `several operators of service ${serviceId} reported ${location.origin}; enter the operator address`,
      );
    }
    operator = here[0]!.operator;
  }
  const onChain = await readOnChainAttestation(pub as never, { blueprint, serviceId, operator });
  const ctx = v.contextString({
    chainId: onChain.chainId,
    serviceId,
    sandboxId: onChain.sandboxId,
    operator,
    owner,
  });
  return {
    chainId: onChain.chainId,
    serviceId,
    operator,
    sandboxId: onChain.sandboxId,
    owner: owner.toLowerCase() as `0x${string}`,
    ctx,
    docJson: onChain.json,
    tx: onChain.tx,
    operatorFrom,
  };
}

/** The owner an attestation's context names, or a refusal naming it (a swapped owner). */
export async function refuseOtherOwner(ctxText: string, me: string, what: string): Promise<void> {
  const { parseContext } = await import('@agent-sandbox/attestation/browser');
  let owner: string;
  try {
    owner = parseContext(ctxText).owner;
  } catch {
    throw fail(`the ${what} names no owner: refused`);
  }
  if (owner !== me.toLowerCase())
    throw fail(
      `the ${what} says the enclave takes orders from ${owner}, not from you (${me.toLowerCase()}): refused`,
    );
}

export interface KeyCheck {
  /** The live evidence's result (SEV: full verification; TDX/Nitro: the pinned-key check). */
  live: AttestationResult;
  onChain?: AttestationResult;
  trust: 'verified' | 'pinned';
  pubkey?: Uint8Array;
}

/**
 * TDX/Nitro: this page cannot check the quote's signature, so the key must be the one the CLI
 * verified (pasted by the user), the context the one read from the chain, and (TDX) the quote's
 * report_data the binding of both to our nonce. The verdict says "pinned", never "verified".
 */
export async function checkPinnedKey(
  att: BoundAttestation,
  c: ChainContext,
  nonce: Uint8Array,
  pinnedHex: string,
): Promise<KeyCheck> {
  const v = await import('@agent-sandbox/attestation/browser');
  const verification: AttestationResult['verification'] = {
    verdict: 'unverified',
    structural_ok: true,
    signature_verified: false,
    report_data_matched: false,
    measurement_matched: false,
  };
  const refuse = (reason: string): KeyCheck => ({
    live: { verification: { ...verification, reason } },
    trust: 'pinned',
  });
  const pinned = pinnedHex.trim().toLowerCase().replace(/^0x/, '');
  if (!/^[0-9a-f]{64}$/.test(pinned))
    return refuse(
      `${att.tee}: ${v.CLI_ONLY_REASON}; then paste the enclave key it prints (64 hex digits) here`,
    );
  if ((att.binding?.pubkey ?? '').toLowerCase().replace(/^0x/, '') !== pinned)
    return refuse(
      'the enclave key the operator serves is not the key you pinned (from agent-sandbox tee verify)',
    );
  if (att.binding?.ctx !== c.ctx)
    return refuse(`the evidence is bound to ${att.binding?.ctx}, not to ${c.ctx}`);
  try {
    const pubkey = v.fromHex(pinned);
    if (att.tee === 'tdx') {
      // TD report body's REPORTDATA: quote header (48) + 520.
      v.checkBinding(v.fromHex(att.evidence).subarray(568, 632), c.ctx, pubkey, nonce);
    } else {
      v.checkBinding(v.fromHex(att.report_data), c.ctx, pubkey, nonce);
    }
    return {
      live: { verification: { ...verification, report_data_matched: true, verdict: 'verified' } },
      trust: 'pinned',
      pubkey,
    };
  } catch (e) {
    return refuse((e as Error).message);
  }
}
