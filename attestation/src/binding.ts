// The sealing-key binding of spec tee.md §4: report_data commits to the context (chain, service,
// sandbox, operator, owner), the enclave's X25519 public key and a nonce. Also the on-chain nonce.
// The owner is part of the context so a client sees which wallet the enclave takes orders from.
import { sha256, sha512 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesEqual, concatBytes, fromHex, toHex, utf8 } from './bytes.ts';
import { AttestationError } from './errors.ts';

export const BINDING_DOMAIN = 'tangle-sandbox-tee/v1';

export interface BindingContext {
  chainId: bigint | number;
  serviceId: bigint | number;
  sandboxId: string;
  operator: string;
  /** The wallet the enclave accepts owner operations from (the service owner). */
  owner: string;
}

/** ASCII `chainId:serviceId:sandboxId:operatorLowercase:ownerLowercase`. */
export function contextString(c: BindingContext): string {
  for (const [what, a] of [
    ['operator', c.operator],
    ['owner', c.owner],
  ] as const) {
    if (!/^0x[0-9a-fA-F]{40}$/.test(a ?? '')) {
      throw new AttestationError('BAD_INPUT', `${what} ${a} is not a 0x address`);
    }
  }
  if (!/^[\x21-\x7e]{1,128}$/.test(c.sandboxId) || c.sandboxId.includes(':')) {
    throw new AttestationError(
      'BAD_INPUT',
      'sandbox id must be 1-128 printable ASCII characters without ":"',
    );
  }
  return `${BigInt(c.chainId)}:${BigInt(c.serviceId)}:${c.sandboxId}:${c.operator.toLowerCase()}:${c.owner.toLowerCase()}`;
}

const CONTEXT = /^(\d{1,78}):(\d{1,20}):([\x21-\x39\x3b-\x7e]{1,128}):(0x[0-9a-f]{40}):(0x[0-9a-f]{40})$/;

/** The parts of a context string; throws BAD_INPUT when it is not one contextString makes. */
export function parseContext(ctx: string): {
  chainId: bigint;
  serviceId: bigint;
  sandboxId: string;
  operator: string;
  owner: string;
} {
  const m = CONTEXT.exec(ctx);
  if (!m) {
    throw new AttestationError(
      'BAD_INPUT',
      'the context is not chainId:serviceId:sandboxId:0xoperator:0xowner',
    );
  }
  return {
    chainId: BigInt(m[1]!),
    serviceId: BigInt(m[2]!),
    sandboxId: m[3]!,
    operator: m[4]!,
    owner: m[5]!,
  };
}

/** SHA-512("tangle-sandbox-tee/v1" ‖ 0x00 ‖ u16be(len ctx) ‖ ctx ‖ pk ‖ nonce): the 64-byte report_data. */
export function bindingReportData(ctx: string, pubkey: Uint8Array, nonce: Uint8Array): Uint8Array {
  if (pubkey.length !== 32)
    throw new AttestationError('BAD_INPUT', 'the sealing public key must be 32 bytes');
  if (nonce.length !== 32) throw new AttestationError('BAD_INPUT', 'the binding nonce must be 32 bytes');
  const c = utf8(ctx);
  if (c.length > 0xffff) throw new AttestationError('BAD_INPUT', 'binding context too long');
  const len = new Uint8Array([c.length >> 8, c.length & 0xff]);
  return sha512(concatBytes(utf8(BINDING_DOMAIN), new Uint8Array([0]), len, c, pubkey, nonce));
}

/** keccak256(abi.encode(uint256 chainId, uint64 serviceId, address operator)): the on-chain nonce. */
export function onChainNonce(
  chainId: bigint | number,
  serviceId: bigint | number,
  operator: string,
): Uint8Array {
  const word = (v: bigint) => fromHex(v.toString(16).padStart(64, '0'));
  const addr = fromHex(operator, 'operator address');
  if (addr.length !== 20) throw new AttestationError('BAD_INPUT', 'operator must be a 20-byte address');
  return keccak_256(concatBytes(word(BigInt(chainId)), word(BigInt(serviceId)), new Uint8Array(12), addr));
}

/** hex(SHA-256(pubkey))[0:16]: names the sealing key in sealed bodies. */
export const keyId = (pubkey: Uint8Array): string => toHex(sha256(pubkey)).slice(0, 16);

/** A caller's nonce: exactly 32 bytes of hex (0x optional). */
export function parseNonce(hex: string): Uint8Array {
  const n = fromHex(hex, 'nonce');
  if (n.length !== 32)
    throw new AttestationError('BAD_INPUT', 'nonce must be 32 bytes of hex (64 hex digits)');
  return n;
}

/** Throws BINDING unless `reportData` equals the binding of (ctx, pubkey, nonce). */
export function checkBinding(
  reportData: Uint8Array,
  ctx: string,
  pubkey: Uint8Array,
  nonce: Uint8Array,
): void {
  if (!bytesEqual(reportData, bindingReportData(ctx, pubkey, nonce))) {
    throw new AttestationError(
      'BINDING',
      'the signed report_data does not commit to this context, public key and nonce: do not use this key',
    );
  }
}

/**
 * Throws BINDING unless the report_data claimed beside the evidence (`claimedHex`) is the signed
 * one and it binds (ctx, pubkey, nonce). One check for the node and the browser verifiers.
 */
export function checkClaimedBinding(
  claimedHex: string | undefined,
  signed: Uint8Array,
  ctx: string,
  pubkey: Uint8Array,
  nonce: Uint8Array,
): void {
  if (!bytesEqual(fromHex(claimedHex ?? '', 'report_data'), signed)) {
    throw new AttestationError(
      'BINDING',
      'the report_data claimed beside the evidence is not the signed one',
    );
  }
  checkBinding(signed, ctx, pubkey, nonce);
}
