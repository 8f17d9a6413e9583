// PASETO v4.local for the `paseto` package: its extension API frames tokens and claims, this file
// supplies the cryptography (XChaCha20 + keyed BLAKE2b, per the PASETO v4 specification).
//
// Encrypt(K, m, f, i), with h = "v4.local.":
//   n   = 32 random bytes
//   tmp = BLAKE2b-448(key = K, "paseto-encryption-key" ‖ n); Ek = tmp[0..32], n2 = tmp[32..56]
//   Ak  = BLAKE2b-256(key = K, "paseto-auth-key-for-aead" ‖ n)
//   c   = XChaCha20(key = Ek, nonce = n2, m)
//   t   = BLAKE2b-256(key = Ak, PAE(h, n, c, f, i))
//   payload = n ‖ c ‖ t
// Decrypt checks t in constant time before touching c.
import { xchacha20 } from '@noble/ciphers/chacha.js';
import { equalBytes, randomBytes } from '@noble/ciphers/utils.js';
import { blake2b } from '@noble/hashes/blake2.js';
import { InvalidTokenError, type Key, LocalDecrypt, LocalEncrypt, LocalProtocol, PAE } from 'paseto';

const encoder = new TextEncoder();
const HEADER = encoder.encode('v4.local.');
const ENC_DOMAIN = encoder.encode('paseto-encryption-key');
const AUTH_DOMAIN = encoder.encode('paseto-auth-key-for-aead');
const NONCE_LEN = 32;
const TAG_LEN = 32;

/** An opaque v4.local key handle; the key bytes live in a WeakMap, so logging the handle shows none. */
export interface V4LocalKey extends Key {
  readonly algorithm: { readonly name: 'PASETO v4.local' };
  readonly type: 'secret';
  readonly extractable: false;
}

const keyBytes = new WeakMap<V4LocalKey, Uint8Array>();

/** Wraps 32 key bytes (copied) as a v4.local key handle. */
export function v4LocalKey(bytes: Uint8Array): V4LocalKey {
  if (!(bytes instanceof Uint8Array) || bytes.length !== 32) {
    throw new TypeError('a v4.local key must be exactly 32 bytes');
  }
  const handle: V4LocalKey = Object.freeze({
    algorithm: Object.freeze({ name: 'PASETO v4.local' as const }),
    type: 'secret' as const,
    extractable: false as const,
  });
  keyBytes.set(handle, Uint8Array.from(bytes));
  return handle;
}

function material(key: V4LocalKey): Uint8Array {
  const k = keyBytes.get(key);
  if (!k) throw new TypeError('not a v4.local key created by v4LocalKey()');
  return k;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function splitKeys(k: Uint8Array, n: Uint8Array): { ek: Uint8Array; n2: Uint8Array; ak: Uint8Array } {
  const tmp = blake2b(concat(ENC_DOMAIN, n), { key: k, dkLen: 56 });
  const ak = blake2b(concat(AUTH_DOMAIN, n), { key: k, dkLen: 32 });
  return { ek: tmp.subarray(0, 32), n2: tmp.subarray(32, 56), ak };
}

/** The v4.local payload (n ‖ c ‖ t) of message `m`; `nonce` is fixed only by test vectors. */
export function sealV4Local(
  key: V4LocalKey,
  m: Uint8Array,
  f: Uint8Array,
  i: Uint8Array,
  nonce: Uint8Array = randomBytes(NONCE_LEN),
): Uint8Array {
  if (nonce.length !== NONCE_LEN) throw new TypeError('v4.local nonce must be 32 bytes');
  const { ek, n2, ak } = splitKeys(material(key), nonce);
  const c = xchacha20(ek, n2, m);
  const t = blake2b(PAE([HEADER, nonce, c, f, i]), { key: ak, dkLen: TAG_LEN });
  const out = new Uint8Array(NONCE_LEN + c.length + TAG_LEN);
  out.set(nonce, 0);
  out.set(c, NONCE_LEN);
  out.set(t, NONCE_LEN + c.length);
  return out;
}

/** The message inside a v4.local payload; InvalidTokenError when it fails authentication. */
export function openV4Local(key: V4LocalKey, payload: Uint8Array, f: Uint8Array, i: Uint8Array): Uint8Array {
  if (payload.length < NONCE_LEN + TAG_LEN) throw new InvalidTokenError('Token payload too short');
  const n = payload.subarray(0, NONCE_LEN);
  const c = payload.subarray(NONCE_LEN, payload.length - TAG_LEN);
  const t = payload.subarray(payload.length - TAG_LEN);
  const { ek, n2, ak } = splitKeys(material(key), n);
  const t2 = blake2b(PAE([HEADER, n, c, f, i]), { key: ak, dkLen: TAG_LEN });
  if (!equalBytes(t, t2)) throw new InvalidTokenError('Token authentication failed');
  return xchacha20(ek, n2, c);
}

/**
 * A `paseto` LocalProtocol with Encrypt and Decrypt for v4.local. `nonce` exists for reproducing
 * the official test vectors; production callers leave it out (32 fresh random bytes per token).
 */
export function createV4Local(opts: { nonce?: () => Uint8Array } = {}) {
  const nextNonce = opts.nonce ?? (() => randomBytes(NONCE_LEN));
  const EncryptFactory = LocalEncrypt<4, V4LocalKey>({
    version: 4,
    run: async (key, m, f, i) => sealV4Local(key, m, f, i, nextNonce()),
  });
  const DecryptFactory = LocalDecrypt<4, V4LocalKey>({
    version: 4,
    run: async (key, payload, f, i) => openV4Local(key, payload, f, i),
  });
  return new LocalProtocol(EncryptFactory, DecryptFactory);
}

export type V4Local = ReturnType<typeof createV4Local>;
