// HPKE base mode (RFC 9180) for one suite: DHKEM(X25519, HKDF-SHA256) 0x0020, HKDF-SHA256 0x0001,
// ChaCha20-Poly1305 0x0003: X25519 and HMAC from #platform (node:crypto, or @noble in a browser),
// the AEAD from @noble.
// Proven against RFC 9180 A.2.1.

import { chacha20poly1305 } from '@noble/ciphers/chacha.js';
import { x25519, x25519Generate, x25519PublicKey } from '#platform';
import { concatBytes, utf8 } from './bytes.ts';
import { hkdfExpand, hkdfExtract } from './hkdf.ts';

const KEM_ID = 0x0020;
const KDF_ID = 0x0001;
const AEAD_ID = 0x0003;
const i2osp = (n: number, len: number) => {
  const out = new Uint8Array(len);
  for (let i = len - 1, v = n; i >= 0; i--, v = Math.floor(v / 256)) out[i] = v & 0xff;
  return out;
};
const KEM_SUITE = concatBytes(utf8('KEM'), i2osp(KEM_ID, 2));
const HPKE_SUITE = concatBytes(utf8('HPKE'), i2osp(KEM_ID, 2), i2osp(KDF_ID, 2), i2osp(AEAD_ID, 2));
const V1 = utf8('HPKE-v1');

const labeledExtract = (suite: Uint8Array, salt: Uint8Array, label: string, ikm: Uint8Array) =>
  hkdfExtract(concatBytes(V1, suite, utf8(label), ikm), salt);
const labeledExpand = (suite: Uint8Array, prk: Uint8Array, label: string, info: Uint8Array, len: number) =>
  hkdfExpand(prk, concatBytes(i2osp(len, 2), V1, suite, utf8(label), info), len);

/** X25519(sk, pk); refuses a low-order peer key (an all-zero shared secret, RFC 9180 §7.1.4). */
function x25519Shared(sk: Uint8Array, pk: Uint8Array): Uint8Array {
  if (pk.length !== 32) throw new Error('an X25519 public key is 32 bytes');
  let dh: Uint8Array;
  try {
    dh = x25519(sk, pk);
  } catch (e) {
    throw new Error('X25519 refused the peer key (low order?)', { cause: e });
  }
  if (dh.every((b) => b === 0)) throw new Error('X25519 gave the all-zero secret: a low-order peer key');
  return dh;
}

/** RFC 9180 §7.1.3 DeriveKeyPair for X25519. */
export function deriveKeyPair(ikm: Uint8Array): { secretKey: Uint8Array; publicKey: Uint8Array } {
  const prk = labeledExtract(KEM_SUITE, new Uint8Array(0), 'dkp_prk', ikm);
  const secretKey = labeledExpand(KEM_SUITE, prk, 'sk', new Uint8Array(0), 32);
  return { secretKey, publicKey: x25519PublicKey(secretKey) };
}

/** A fresh key pair (RFC 9180 lets GenerateKeyPair be any random key generation). */
export function generateKeyPair(): { secretKey: Uint8Array; publicKey: Uint8Array } {
  return x25519Generate();
}

function extractAndExpand(dh: Uint8Array, kemContext: Uint8Array): Uint8Array {
  const prk = labeledExtract(KEM_SUITE, new Uint8Array(0), 'eae_prk', dh);
  return labeledExpand(KEM_SUITE, prk, 'shared_secret', kemContext, 32);
}

export interface HpkeContext {
  key: Uint8Array;
  baseNonce: Uint8Array;
  exporterSecret: Uint8Array;
  /** Nonce for sequence number `seq` (RFC 9180 §5.2). */
  nonce(seq: number): Uint8Array;
  seal(seq: number, aad: Uint8Array, pt: Uint8Array): Uint8Array;
  open(seq: number, aad: Uint8Array, ct: Uint8Array): Uint8Array;
  /** RFC 9180 §5.3 Export: LabeledExpand(exporter_secret, "sec", context, len). */
  export(context: Uint8Array, len: number): Uint8Array;
}

function keySchedule(sharedSecret: Uint8Array, info: Uint8Array): HpkeContext {
  const empty = new Uint8Array(0);
  const pskIdHash = labeledExtract(HPKE_SUITE, empty, 'psk_id_hash', empty);
  const infoHash = labeledExtract(HPKE_SUITE, empty, 'info_hash', info);
  const ctx = concatBytes(new Uint8Array([0]), pskIdHash, infoHash);
  const secret = labeledExtract(HPKE_SUITE, sharedSecret, 'secret', empty);
  const key = labeledExpand(HPKE_SUITE, secret, 'key', ctx, 32);
  const baseNonce = labeledExpand(HPKE_SUITE, secret, 'base_nonce', ctx, 12);
  const exporterSecret = labeledExpand(HPKE_SUITE, secret, 'exp', ctx, 32);
  const nonce = (seq: number) => {
    const s = i2osp(seq, 12);
    return baseNonce.map((b, i) => b ^ s[i]!);
  };
  return {
    key,
    baseNonce,
    exporterSecret,
    nonce,
    seal: (seq, aad, pt) => chacha20poly1305(key, nonce(seq), aad).encrypt(pt),
    open: (seq, aad, ct) => chacha20poly1305(key, nonce(seq), aad).decrypt(ct),
    export: (context, len) => labeledExpand(HPKE_SUITE, exporterSecret, 'sec', context, len),
  };
}

/** SetupBaseS with a given ephemeral key pair (tests) or a fresh one. */
export function setupBaseS(
  pkR: Uint8Array,
  info: Uint8Array,
  ephemeral = generateKeyPair(),
): { enc: Uint8Array; sharedSecret: Uint8Array; ctx: HpkeContext } {
  const dh = x25519Shared(ephemeral.secretKey, pkR);
  const enc = ephemeral.publicKey;
  const sharedSecret = extractAndExpand(dh, concatBytes(enc, pkR));
  return { enc, sharedSecret, ctx: keySchedule(sharedSecret, info) };
}

// The enclave's own public key, derived once per secret key (by the key's identity, as the
// platform's KeyObject cache): every request opened with it needs pkR in the KEM context, and
// re-deriving it cost an OpenSSL public-key export per request (bench/tee-channel.bench.ts).
const publicKeys = new WeakMap<Uint8Array, Uint8Array>();
function publicKeyOf(sk: Uint8Array): Uint8Array {
  let pk = publicKeys.get(sk);
  if (!pk) {
    pk = x25519PublicKey(sk);
    publicKeys.set(sk, pk);
  }
  return pk;
}

export function setupBaseR(
  enc: Uint8Array,
  skR: Uint8Array,
  info: Uint8Array,
): { sharedSecret: Uint8Array; ctx: HpkeContext } {
  const pkR = publicKeyOf(skR);
  const dh = x25519Shared(skR, enc); // throws on a low-order point (all-zero result)
  const sharedSecret = extractAndExpand(dh, concatBytes(enc, pkR));
  return { sharedSecret, ctx: keySchedule(sharedSecret, info) };
}
