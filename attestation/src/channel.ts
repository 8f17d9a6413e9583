// The owner's end-to-end channel into the enclave, in the shape of Oblivious HTTP (RFC 9458): a
// request is HPKE-encapsulated (RFC 9180 base mode, our one suite) to the enclave's attested X25519
// key; the response is keyed from the request's HPKE context as RFC 9458 §4.4 does (Export →
// response_nonce salt → HKDF → AEAD key/nonce) and sent as a sequence of chunks, each sealed with
// nonce XOR its index and the last one with aad "final" (the chunked-OHTTP draft's rule), so a
// relay that reorders, drops, splices or truncates chunks is caught. The operator only relays bytes.
//
// Wire: request  = hdr(7) ‖ enc(32) ‖ ct; hdr = key_config_id(1) ‖ kem 0x0020 ‖ kdf 0x0001 ‖ aead 0x0003.
//       response = response_nonce(32) ‖ { u32be(len) ‖ chunk_ct }*.
// Framing inside (documented instead of Binary HTTP, RFC 9292): the request plaintext is UTF-8
// JSON `{v:1, ts, auth:{message, signature}, method, path, body?}`; the response's first chunk is
// JSON `{status, type}`, the next ones are body bytes as the enclave produced them.

import { chacha20poly1305 } from '@noble/ciphers/chacha.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { randomBytes } from '#platform';
import { concatBytes, utf8 } from './bytes.ts';
import { AttestationError } from './errors.ts';
import { hkdfExpand, hkdfExtract } from './hkdf.ts';
import { type HpkeContext, setupBaseR, setupBaseS } from './hpke.ts';

export const CHANNEL_REQUEST_TYPE = 'message/ohttp-req';
export const CHANNEL_RESPONSE_TYPE = 'message/ohttp-chunked-res';
const REQUEST_LABEL = 'tangle-sandbox-channel/v1 request';
const RESPONSE_LABEL = 'tangle-sandbox-channel/v1 response';
const HDR_LEN = 7;
const ENC_LEN = 32;
const NONCE_LEN = 12;
const KEY_LEN = 32;
/** max(Nn, Nk) of RFC 9458 §4.4 for ChaCha20-Poly1305. */
const RESPONSE_NONCE_LEN = 32;
const FINAL = utf8('final');
const EMPTY = new Uint8Array(0);
/** The largest chunk either side accepts (a response body is cut into chunks at most this big). */
export const MAX_CHUNK = 1 << 20;

const bad = (msg: string) => new AttestationError('CHANNEL', msg);

/** RFC 9458 key_config_id: one byte naming the key; ours is the first byte of SHA-256(pubkey). */
export const keyConfigId = (pubkey: Uint8Array): number => sha256(pubkey)[0]!;

function header(pubkey: Uint8Array): Uint8Array {
  return new Uint8Array([keyConfigId(pubkey), 0x00, 0x20, 0x00, 0x01, 0x00, 0x03]);
}
const requestInfo = (hdr: Uint8Array) => concatBytes(utf8(REQUEST_LABEL), new Uint8Array([0]), hdr);

function responseKeys(hpke: HpkeContext, enc: Uint8Array, responseNonce: Uint8Array) {
  const secret = hpke.export(utf8(RESPONSE_LABEL), RESPONSE_NONCE_LEN);
  const prk = hkdfExtract(secret, concatBytes(enc, responseNonce));
  return {
    key: hkdfExpand(prk, utf8('key'), KEY_LEN),
    nonce: hkdfExpand(prk, utf8('nonce'), NONCE_LEN),
  };
}

function chunkNonce(base: Uint8Array, index: number): Uint8Array {
  const n = base.slice();
  for (let i = NONCE_LEN - 1, v = index; i >= 0 && v > 0; i--, v = Math.floor(v / 256)) n[i]! ^= v & 0xff;
  return n;
}

const u32 = (n: number) => new Uint8Array([n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);

/** The enclave side of one response: the nonce goes first, then one frame per chunk. */
export class ResponseSealer {
  readonly #key: Uint8Array;
  readonly #nonce: Uint8Array;
  #index = 0;
  #done = false;
  /** The response_nonce: the first 32 bytes on the wire. */
  readonly head: Uint8Array;
  constructor(hpke: HpkeContext, enc: Uint8Array) {
    this.head = randomBytes(RESPONSE_NONCE_LEN);
    const k = responseKeys(hpke, enc, this.head);
    this.#key = k.key;
    this.#nonce = k.nonce;
  }
  /** One framed chunk; `final` ends the response (nothing may follow). */
  chunk(plaintext: Uint8Array, final = false): Uint8Array {
    if (this.#done) throw bad('the response is already final');
    if (plaintext.length > MAX_CHUNK) throw bad('chunk too large');
    const ct = chacha20poly1305(
      this.#key,
      chunkNonce(this.#nonce, this.#index++),
      final ? FINAL : EMPTY,
    ).encrypt(plaintext);
    this.#done = final;
    return concatBytes(u32(ct.length), ct);
  }
}

/** The client side of one response: feed wire bytes as they come; get plaintext chunks in order. */
export class ResponseOpener {
  #buf: Uint8Array = EMPTY;
  #keys: { key: Uint8Array; nonce: Uint8Array } | undefined;
  #index = 0;
  #final = false;
  constructor(
    private readonly hpke: HpkeContext,
    private readonly enc: Uint8Array,
  ) {}
  get final(): boolean {
    return this.#final;
  }
  feed(bytes: Uint8Array): Uint8Array[] {
    this.#buf = concatBytes(this.#buf, bytes);
    if (!this.#keys) {
      if (this.#buf.length < RESPONSE_NONCE_LEN) return [];
      this.#keys = responseKeys(this.hpke, this.enc, this.#buf.subarray(0, RESPONSE_NONCE_LEN));
      this.#buf = this.#buf.slice(RESPONSE_NONCE_LEN);
    }
    const out: Uint8Array[] = [];
    while (this.#buf.length >= 4) {
      const len =
        ((this.#buf[0]! << 24) | (this.#buf[1]! << 16) | (this.#buf[2]! << 8) | this.#buf[3]!) >>> 0;
      if (len > MAX_CHUNK + 16 || len < 16) throw bad('a response chunk has an impossible length');
      if (this.#buf.length < 4 + len) break;
      if (this.#final) throw bad('bytes after the final chunk: the relay added to the response');
      const ct = this.#buf.slice(4, 4 + len);
      const nonce = chunkNonce(this.#keys.nonce, this.#index);
      let pt: Uint8Array;
      try {
        pt = chacha20poly1305(this.#keys.key, nonce, EMPTY).decrypt(ct);
      } catch {
        try {
          pt = chacha20poly1305(this.#keys.key, nonce, FINAL).decrypt(ct);
          this.#final = true;
        } catch {
          throw bad('a response chunk does not open: tampered, reordered or dropped by the relay');
        }
      }
      this.#index++;
      this.#buf = this.#buf.slice(4 + len);
      out.push(pt);
    }
    return out;
  }
  /** Throws unless the final chunk arrived and nothing is left over (a truncated stream). */
  end(): void {
    if (!this.#final || this.#buf.length > 0) {
      throw bad('the response ended before its final chunk: the relay cut it short');
    }
  }
}

/** Client: encapsulate one request to the enclave's key. */
export function encapsulateRequest(
  pubkey: Uint8Array,
  plaintext: Uint8Array,
): { message: Uint8Array; opener: ResponseOpener } {
  const hdr = header(pubkey);
  const { enc, ctx } = setupBaseS(pubkey, requestInfo(hdr));
  const ct = ctx.seal(0, new Uint8Array(0), plaintext);
  return { message: concatBytes(hdr, enc, ct), opener: new ResponseOpener(ctx, enc) };
}

/** Enclave: open one request; throws CHANNEL for any failure (wrong key, suite or a flipped byte). */
export function decapsulateRequest(
  secretKey: Uint8Array,
  publicKey: Uint8Array,
  message: Uint8Array,
): { plaintext: Uint8Array; enc: Uint8Array; sealer: ResponseSealer } {
  const hdr = header(publicKey);
  if (message.length < HDR_LEN + ENC_LEN + 16) throw bad('the request is too short');
  for (let i = 0; i < HDR_LEN; i++) {
    if (message[i] !== hdr[i]) throw bad('the request names another key or suite');
  }
  const enc = message.slice(HDR_LEN, HDR_LEN + ENC_LEN);
  try {
    const { ctx } = setupBaseR(enc, secretKey, requestInfo(hdr));
    // A copy, not a subarray: the image's Node 18 + @noble/ciphers fail the tag on an offset view.
    const plaintext = ctx.open(0, new Uint8Array(0), message.slice(HDR_LEN + ENC_LEN));
    return { plaintext, enc, sealer: new ResponseSealer(ctx, enc) };
  } catch {
    throw bad('the request does not open with this enclave key');
  }
}
