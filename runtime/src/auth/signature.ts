// EIP-191 signature recovery: normalizes the signature forms wallets produce, then recovers.
import { type Hex, recoverMessageAddress } from 'viem';
import { RuntimeError } from '../errors.ts';

const SIG_RE = /^(0x)?[0-9a-fA-F]{130}$/;
// secp256k1 group order n, and n/2: Ethereum (EIP-2) accepts only s ≤ n/2, so (r, n−s) — the same
// signature made malleable — is refused.
const HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

/**
 * Normalizes a 65-byte hex signature (with or without 0x) to 0x-prefixed r ‖ s ‖ v with v ∈
 * {27, 28}; wallets and hardware signers emit v as 0/1 or 27/28. High-s (EIP-2), zero r or s and
 * anything else → UNAUTHORIZED.
 */
export function normalizeSignature(signature: unknown): Hex {
  if (typeof signature !== 'string' || !SIG_RE.test(signature)) {
    throw new RuntimeError(
      'UNAUTHORIZED',
      'signature must be 65 bytes as hex (r ‖ s ‖ v, with or without 0x)',
    );
  }
  const body = signature.replace(/^0x/, '').toLowerCase();
  let v = Number.parseInt(body.slice(128), 16);
  if (v === 0 || v === 1) v += 27;
  if (v !== 27 && v !== 28) {
    throw new RuntimeError('UNAUTHORIZED', 'signature recovery byte v must be 0, 1, 27 or 28');
  }
  const r = BigInt(`0x${body.slice(0, 64)}`);
  const s = BigInt(`0x${body.slice(64, 128)}`);
  if (r === 0n || s === 0n || s > HALF_N) {
    throw new RuntimeError(
      'UNAUTHORIZED',
      'signature s must be in the lower half of the curve order (EIP-2); sign again with a standard wallet',
    );
  }
  return `0x${body.slice(0, 128)}${v.toString(16)}`;
}

/** The lowercase address that signed `message` with personal_sign (EIP-191). */
export async function recoverSigner(message: string, signature: unknown): Promise<string> {
  const sig = normalizeSignature(signature);
  try {
    return (await recoverMessageAddress({ message, signature: sig })).toLowerCase();
  } catch (cause) {
    throw new RuntimeError('UNAUTHORIZED', 'signature does not recover to an address', { cause });
  }
}
