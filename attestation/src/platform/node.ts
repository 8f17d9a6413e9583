// The few primitives the HPKE channel and sealed secrets need, on node:crypto (OpenSSL): X25519
// at ~0.1 ms a scalar multiplication (against ~2.5 ms in pure JS), HMAC-SHA256 at ~10 µs a call.
// The browser build takes ./web.ts instead (package.json "imports" #platform, condition "browser").
import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  type KeyObject,
  randomBytes as nodeRandomBytes,
} from 'node:crypto';

// Importing a raw private key (PKCS#8) costs ~0.7 ms in OpenSSL 3, so each private key's
// KeyObject is made once (the enclave's key, an ephemeral one from x25519Generate) and kept
// beside its bytes; a peer's public key is imported from JWK (~10 µs).
const PKCS8_X25519 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const keyObjects = new WeakMap<Uint8Array, KeyObject>();
function privateKeyOf(sk: Uint8Array): KeyObject {
  let k = keyObjects.get(sk);
  if (!k) {
    k = createPrivateKey({ key: Buffer.concat([PKCS8_X25519, sk]), format: 'der', type: 'pkcs8' });
    keyObjects.set(sk, k);
  }
  return k;
}

export function x25519PublicKey(sk: Uint8Array): Uint8Array {
  return new Uint8Array(
    Buffer.from(createPublicKey(privateKeyOf(sk)).export({ format: 'jwk' }).x!, 'base64url'),
  );
}

/** X25519(sk, pk), raw; throws where OpenSSL refuses the peer key. */
export function x25519(sk: Uint8Array, pk: Uint8Array): Uint8Array {
  return new Uint8Array(
    diffieHellman({
      privateKey: privateKeyOf(sk),
      publicKey: createPublicKey({
        key: { kty: 'OKP', crv: 'X25519', x: Buffer.from(pk).toString('base64url') },
        format: 'jwk',
      }),
    }),
  );
}

/** A fresh key pair from OpenSSL's generator (RFC 9180 lets GenerateKeyPair be any). */
export function x25519Generate(): { secretKey: Uint8Array; publicKey: Uint8Array } {
  const { privateKey } = generateKeyPairSync('x25519');
  const jwk = privateKey.export({ format: 'jwk' });
  const secretKey = new Uint8Array(Buffer.from(jwk.d!, 'base64url'));
  keyObjects.set(secretKey, privateKey);
  return { secretKey, publicKey: new Uint8Array(Buffer.from(jwk.x!, 'base64url')) };
}

/** HMAC-SHA256(key, parts[0] ‖ parts[1] ‖ …). */
export function hmacSha256(key: Uint8Array, ...parts: Uint8Array[]): Uint8Array {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
}

// node:crypto, not globalThis.crypto: on the image's Node 18 there is no crypto.getRandomValues global.
export const randomBytes = (n: number): Uint8Array => new Uint8Array(nodeRandomBytes(n));
