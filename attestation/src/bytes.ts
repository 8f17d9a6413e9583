// Byte helpers shared by the verifiers: strict hex in and out, constant-time equality. No node
// built-ins: the browser entry (browser.ts) uses them too.
import { AttestationError } from './errors.ts';

const HEX = /^(0x)?([0-9a-fA-F]{2})*$/;

/** Decode hex (optional 0x); throws BAD_INPUT naming `what` when it is not whole-byte hex. */
export function fromHex(hex: string, what = 'hex value'): Uint8Array {
  if (typeof hex !== 'string' || !HEX.test(hex)) {
    throw new AttestationError('BAD_INPUT', `${what} is not hex (whole bytes, 0x optional)`);
  }
  const h = hex.replace(/^0x/, '');
  const out = new Uint8Array(h.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(h.slice(2 * i, 2 * i + 2), 16);
  return out;
}

const HEX_DIGITS = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
export const toHex = (b: Uint8Array): string => {
  let s = '';
  for (const x of b) s += HEX_DIGITS[x];
  return s;
};

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Constant-time equality (false on a length mismatch; the lengths themselves are not secret). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}

export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
