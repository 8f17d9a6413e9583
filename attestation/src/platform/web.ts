// The browser's primitives for the HPKE channel and sealed secrets (the console's bundle; see
// ./node.ts for the same functions on node:crypto): X25519 from @noble/curves, HMAC-SHA256 from
// @noble/hashes, randomness from crypto.getRandomValues. Synchronous, as hpke.ts needs them
// (WebCrypto's X25519 is async); a request costs two scalar multiplications, ~1 ms each here.
import { x25519 as nobleX25519 } from '@noble/curves/ed25519.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes } from '../bytes.ts';

export const x25519PublicKey = (sk: Uint8Array): Uint8Array => nobleX25519.getPublicKey(sk);

/** X25519(sk, pk), raw; noble throws on a low-order peer key (an all-zero result). */
export const x25519 = (sk: Uint8Array, pk: Uint8Array): Uint8Array => nobleX25519.getSharedSecret(sk, pk);

export function x25519Generate(): { secretKey: Uint8Array; publicKey: Uint8Array } {
  const secretKey = randomBytes(32);
  return { secretKey, publicKey: nobleX25519.getPublicKey(secretKey) };
}

export const hmacSha256 = (key: Uint8Array, ...parts: Uint8Array[]): Uint8Array =>
  hmac(sha256, key, concatBytes(...parts));

export const randomBytes = (n: number): Uint8Array => crypto.getRandomValues(new Uint8Array(n));
