// Byte helpers shared by the verifiers: strict hex in and out, constant-time equality.
import { timingSafeEqual } from 'node:crypto';
import { AttestationError } from './errors.ts';

const HEX = /^(0x)?([0-9a-fA-F]{2})*$/;

/** Decode hex (optional 0x); throws BAD_INPUT naming `what` when it is not whole-byte hex. */
export function fromHex(hex: string, what = 'hex value'): Uint8Array {
  if (typeof hex !== 'string' || !HEX.test(hex)) {
    throw new AttestationError('BAD_INPUT', `${what} is not hex (whole bytes, 0x optional)`);
  }
  return new Uint8Array(Buffer.from(hex.replace(/^0x/, ''), 'hex'));
}

export const toHex = (b: Uint8Array): string =>
  Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Constant-time equality (false on a length mismatch). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
