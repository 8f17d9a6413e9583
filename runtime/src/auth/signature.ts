// EIP-191 signature recovery: normalizes the signature forms wallets produce, then recovers.
import { type Hex, recoverMessageAddress } from 'viem';
import { RuntimeError } from '../errors.ts';

const SIG_RE = /^(0x)?[0-9a-fA-F]{130}$/;

/**
 * Normalizes a 65-byte hex signature (with or without 0x) to 0x-prefixed r ‖ s ‖ v with v ∈
 * {27, 28}; wallets and hardware signers emit v as 0/1 or 27/28. Anything else → UNAUTHORIZED.
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
