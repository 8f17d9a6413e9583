// Sign-in challenges that cost the server nothing until redeemed: the nonce carries its own
// issue and expiry times and a MAC over them and the address it was issued for, so nothing is
// stored when a challenge is handed out. The message to sign is EIP-4361 (Sign-In with Ethereum)
// bound to this operator's public URL and chain; the old plain text exists only for the legacy
// switch (AUTH_ALLOW_LEGACY_MESSAGE).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type Address, getAddress } from 'viem';
import { createSiweMessage, parseSiweMessage, validateSiweMessage } from 'viem/siwe';
import { RuntimeError } from '../errors.ts';

/** 16 random bytes ‖ issued-at (u32 s) ‖ expires (u32 s) ‖ MAC (16 bytes), as 80 hex chars. */
export const NONCE_RE = /^[0-9a-f]{80}$/;
export const SIWE_STATEMENT = 'Sign in to this Tangle Sandbox operator.';
const LEGACY_TAG = 'legacy';

/** Where and on which chain this operator asks wallets to sign in. */
export interface SiweBinding {
  /** OPERATOR_PUBLIC_URL: the URL clients reach the API at (a function when known only after listen). */
  publicUrl: string | (() => string);
  chainId: number;
}

export interface DecodedNonce {
  iat: number;
  exp: number;
}

export function legacyMessage(nonce: string, expiresAtSec: number): string {
  return `Sign this message to authenticate with Tangle Sandbox.\n\nNonce: ${nonce}\nExpires: ${expiresAtSec}`;
}

/** The domain (host[:port]) and URI a SIWE message of this operator names. */
export function siweOrigin(binding: SiweBinding): { domain: string; uri: string; scheme: string } {
  const raw = typeof binding.publicUrl === 'function' ? binding.publicUrl() : binding.publicUrl;
  let url: URL;
  try {
    url = new URL(raw);
  } catch (cause) {
    throw new RuntimeError('CONFIG_INVALID', `OPERATOR_PUBLIC_URL "${raw}" is not a URL`, { cause });
  }
  return { domain: url.host, uri: url.origin, scheme: url.protocol.replace(/:$/, '') };
}

/** The exact EIP-4361 message this operator asks `address` to sign for a nonce. */
export function siweMessage(binding: SiweBinding, address: Address, nonce: string, n: DecodedNonce): string {
  const { domain, uri } = siweOrigin(binding);
  return createSiweMessage({
    address: getAddress(address),
    chainId: binding.chainId,
    domain,
    uri,
    nonce,
    version: '1',
    statement: SIWE_STATEMENT,
    issuedAt: new Date(n.iat * 1000),
    expirationTime: new Date(n.exp * 1000),
  });
}

export class ChallengeMinter {
  readonly #key: Uint8Array;
  constructor(macKey: Uint8Array) {
    this.#key = macKey;
  }

  #mac(payload: Buffer, subject: string): Buffer {
    return createHmac('sha256', this.#key)
      .update('tangle-sandbox-challenge-v1\0')
      .update(payload)
      .update(subject)
      .digest()
      .subarray(0, 16);
  }

  /** A fresh nonce for `address` (lowercase 0x hex) or, for the legacy message, undefined. */
  mint(address: string | undefined, iat: number, exp: number): string {
    const payload = Buffer.alloc(24);
    randomBytes(16).copy(payload);
    payload.writeUInt32BE(iat, 16);
    payload.writeUInt32BE(exp, 20);
    return Buffer.concat([payload, this.#mac(payload, address ?? LEGACY_TAG)]).toString('hex');
  }

  /** Times carried by a nonce this operator minted for `address` (or legacy); null otherwise. */
  open(nonce: string, address: string | undefined): DecodedNonce | null {
    if (!NONCE_RE.test(nonce)) return null;
    const raw = Buffer.from(nonce, 'hex');
    const payload = raw.subarray(0, 24);
    if (!timingSafeEqual(raw.subarray(24), this.#mac(payload, address ?? LEGACY_TAG))) return null;
    return { iat: payload.readUInt32BE(16), exp: payload.readUInt32BE(20) };
  }
}

/**
 * The text that must have been signed, for a nonce this operator minted and that is live: rebuilt
 * from the nonce and the address (given, or read from `message`, which must then be exactly the
 * message this operator issued). UNAUTHORIZED when anything does not match.
 */
export function resolveSigned(
  binding: SiweBinding,
  minter: ChallengeMinter,
  allowLegacy: boolean,
  i: { nonce: unknown; address?: string | undefined; message?: string | undefined; now: number },
): {
  text: string;
  nonce: string;
  exp: number;
  address?: string;
} {
  let nonce = i.nonce;
  let address = i.address?.toLowerCase();
  let legacy = false;
  if (i.message !== undefined) {
    const parsed = parseSiweMessage(i.message);
    if (parsed.address !== undefined && parsed.nonce !== undefined) {
      const { domain, uri, scheme } = siweOrigin(binding);
      const ok = validateSiweMessage({
        message: parsed,
        domain,
        nonce: typeof nonce === 'string' ? nonce : parsed.nonce,
        ...(parsed.scheme ? { scheme } : {}),
        time: new Date(i.now * 1000),
      });
      if (!ok || parsed.uri !== uri || parsed.chainId !== binding.chainId) {
        throw unauthorized(
          `the message was not issued by this operator for now (it must name ${domain}, ${uri} and chain ${binding.chainId})`,
        );
      }
      if (address !== undefined && parsed.address.toLowerCase() !== address) {
        throw unauthorized('the message names another address');
      }
      address = parsed.address.toLowerCase();
      nonce = parsed.nonce;
    } else {
      const m = /\nNonce: ([0-9a-f]{80})\n/.exec(i.message);
      if (!m)
        throw unauthorized('message is neither an EIP-4361 sign-in message nor a challenge of this operator');
      if (typeof nonce === 'string' && nonce !== m[1]) throw unauthorized('message and nonce differ');
      nonce = m[1];
      legacy = true;
    }
  } else if (address === undefined) {
    legacy = true;
  }
  if (typeof nonce !== 'string') {
    throw unauthorized('nonce must be the nonce of a challenge from /api/auth/challenge');
  }
  if (legacy && !allowLegacy) {
    throw unauthorized(
      'send the address (or the signed EIP-4361 message): the plain legacy message is disabled on this operator',
    );
  }
  const times: DecodedNonce | null = minter.open(nonce, legacy ? undefined : address);
  if (!times) throw unauthorized('unknown challenge (not issued by this operator, or for another address)');
  if (i.now > times.exp) throw unauthorized('challenge expired; request a new one');
  const text = legacy
    ? legacyMessage(nonce, times.exp)
    : siweMessage(binding, address as Address, nonce, times);
  if (i.message !== undefined && i.message !== text) {
    throw unauthorized('message differs from the challenge this operator issued; sign it unchanged');
  }
  return { text, nonce, exp: times.exp, ...(legacy ? {} : { address }) };
}

function unauthorized(message: string): RuntimeError {
  return new RuntimeError('UNAUTHORIZED', message);
}
