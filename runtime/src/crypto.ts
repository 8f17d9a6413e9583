// Key material for the runtime: parse SESSION_AUTH_SECRET once and derive purpose-bound keys from it.
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { RuntimeError } from './errors.ts';

const SECRET_RE = /^(0x)?[0-9a-fA-F]{64}$/;
const encoder = new TextEncoder();

/**
 * Parses SESSION_AUTH_SECRET (32 bytes as 64 hex chars, optional 0x) into bytes.
 * The message never echoes the value: a misconfigured secret is still a secret.
 */
export function parseAuthSecret(secret: unknown): Uint8Array {
  if (typeof secret !== 'string' || !SECRET_RE.test(secret.trim())) {
    const got = typeof secret === 'string' ? `a string of ${secret.trim().length} chars` : typeof secret;
    throw new RuntimeError(
      'CONFIG_INVALID',
      `SESSION_AUTH_SECRET must be 32 bytes as 64 hex characters (got ${got}); generate one with \`openssl rand -hex 32\``,
    );
  }
  const hex = secret.trim().replace(/^0x/, '');
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** HKDF-SHA256(ikm = secret bytes, salt, info) → `length` bytes. Distinct info = independent key. */
export function deriveKey(secret: Uint8Array, salt: string, info: string, length = 32): Uint8Array {
  return hkdf(sha256, secret, encoder.encode(salt), encoder.encode(info), length);
}
