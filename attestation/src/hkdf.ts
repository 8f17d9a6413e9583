// HKDF-SHA256 (RFC 5869) on #platform's HMAC (node:crypto: ~10 µs a step, against ~60 µs in pure
// JS; @noble in a browser): Extract and Expand as separate steps, as HPKE's LabeledExtract and
// LabeledExpand need them. An owner-channel request runs about ten on each side.
import { hmacSha256 } from '#platform';

/** HKDF-Extract(salt, IKM); an empty salt is HashLen zeros (HMAC pads the key the same way). */
export function hkdfExtract(ikm: Uint8Array, salt: Uint8Array): Uint8Array {
  return hmacSha256(salt, ikm);
}

/** HKDF-Expand(PRK, info, L), L ≤ 255 × 32. */
export function hkdfExpand(prk: Uint8Array, info: Uint8Array, len: number): Uint8Array {
  if (len > 255 * 32) throw new Error('HKDF-Expand: length too large');
  const out = new Uint8Array(len);
  let t: Uint8Array = new Uint8Array(0);
  for (let i = 1, at = 0; at < len; i++) {
    t = hmacSha256(prk, t, info, new Uint8Array([i]));
    out.set(t.subarray(0, Math.min(32, len - at)), at);
    at += 32;
  }
  return out;
}
