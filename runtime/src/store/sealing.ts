// Value sealing for the store: XChaCha20-Poly1305 per value, key names bound as associated data.
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { randomBytes } from '@noble/ciphers/utils.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { deriveKey } from '../crypto.ts';

/** First byte of every sealed value; lets a future format coexist with this one. */
const FORMAT_V1 = 0x01;
const NONCE_LEN = 24;
const TAG_LEN = 16;
const encoder = new TextEncoder();

// Distinct HKDF info strings from the PASETO key ("session-auth-symmetric-key-v1"), so the store
// key and the token key are independent even though both come from SESSION_AUTH_SECRET.
const SALT = 'tangle-sandbox-blueprint-store';
const VALUE_INFO = 'agent-sandbox-store-v1';
const INDEX_INFO = 'agent-sandbox-store-index-v1';
const OBJECT_INFO = 'agent-sandbox-snapshot-objects-v1';

export class StoreKeys {
  readonly #valueKey: Uint8Array;
  readonly #indexKey: Uint8Array;
  readonly #objectKey: Uint8Array;

  constructor(secret: Uint8Array) {
    this.#valueKey = deriveKey(secret, SALT, VALUE_INFO);
    this.#indexKey = deriveKey(secret, SALT, INDEX_INFO);
    this.#objectKey = deriveKey(secret, SALT, OBJECT_INFO);
  }

  /**
   * The key snapshot objects are sealed under before they leave for object storage (snapshot-store/):
   * its own HKDF info, so it is independent of the value and index keys. A copy; it stays in process.
   */
  objectKey(): Uint8Array {
    return this.#objectKey.slice();
  }

  /**
   * The on-disk key for an id: HMAC-SHA256 under a secret-derived key, hex. Ids (call ids, session
   * ids, token hashes) then never appear on disk, and the same id maps to the same key every time.
   */
  diskKey(collection: string, id: string): string {
    const mac = hmac(sha256, this.#indexKey, encoder.encode(`${collection}\u0000${id}`));
    let hex = '';
    for (const b of mac) hex += b.toString(16).padStart(2, '0');
    return hex;
  }

  /** nonce ‖ ciphertext ‖ tag, with a format byte in front. */
  seal(aad: string, plaintext: Uint8Array): Uint8Array {
    const nonce = randomBytes(NONCE_LEN);
    const ct = xchacha20poly1305(this.#valueKey, nonce, encoder.encode(aad)).encrypt(plaintext);
    const out = new Uint8Array(1 + NONCE_LEN + ct.length);
    out[0] = FORMAT_V1;
    out.set(nonce, 1);
    out.set(ct, 1 + NONCE_LEN);
    return out;
  }

  /** Returns the plaintext, or undefined when the value fails authentication (never garbage). */
  open(aad: string, sealed: Uint8Array): Uint8Array | undefined {
    if (sealed.length < 1 + NONCE_LEN + TAG_LEN || sealed[0] !== FORMAT_V1) return undefined;
    const nonce = sealed.subarray(1, 1 + NONCE_LEN);
    const ct = sealed.subarray(1 + NONCE_LEN);
    try {
      return xchacha20poly1305(this.#valueKey, nonce, encoder.encode(aad)).decrypt(ct);
    } catch {
      return undefined;
    }
  }
}
