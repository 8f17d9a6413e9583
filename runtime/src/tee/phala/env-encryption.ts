// Phala Cloud's env encryption: X25519 with an ephemeral key to the CVM's env public key, the raw
// shared secret as an AES-256-GCM key, output hex(ephemeral pubkey ‖ iv ‖ ciphertext ‖ tag) of
// the JSON {"env":[{key,value}…]}. node:crypto only.
import {
  createCipheriv,
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import { RuntimeError } from '../../errors.ts';

const rawPublic = (k: KeyObject) => Buffer.from(k.export({ format: 'jwk' }).x!, 'base64url');
const x25519Public = (raw: Buffer) =>
  createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: raw.toString('base64url') }, format: 'jwk' });

export function encryptEnvForCvm(env: Record<string, string>, cvmPubkeyHex: string): string {
  const remote = Buffer.from(cvmPubkeyHex.replace(/^0x/, ''), 'hex');
  if (remote.length !== 32)
    throw new RuntimeError('VALIDATION', 'the CVM env public key must be 32 bytes (X25519)');
  const eph = generateKeyPairSync('x25519');
  const key = diffieHellman({ privateKey: eph.privateKey, publicKey: x25519Public(remote) });
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const plain = JSON.stringify({ env: Object.entries(env).map(([k, value]) => ({ key: k, value })) });
  const ct = Buffer.concat([c.update(plain, 'utf8'), c.final(), c.getAuthTag()]);
  return Buffer.concat([rawPublic(eph.publicKey), iv, ct]).toString('hex');
}

/** The CVM side (tests, and what Phala's KMS does): decrypt with the env private key. */
export function decryptEnvForCvm(hex: string, cvmPrivateKey: KeyObject): Record<string, string> {
  const b = Buffer.from(hex, 'hex');
  const key = diffieHellman({ privateKey: cvmPrivateKey, publicKey: x25519Public(b.subarray(0, 32)) });
  const d = createDecipheriv('aes-256-gcm', key, b.subarray(32, 44));
  d.setAuthTag(b.subarray(b.length - 16));
  const plain = Buffer.concat([d.update(b.subarray(44, b.length - 16)), d.final()]).toString('utf8');
  const { env } = JSON.parse(plain) as { env: Array<{ key: string; value: string }> };
  return Object.fromEntries(env.map((e) => [e.key, e.value]));
}

export const x25519PrivateFromPkcs8 = (der: Buffer) =>
  createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
