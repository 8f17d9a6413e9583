// The TEE binding context a sidecar in a CVM is started with (SIDECAR_TEE_CONTEXT), checked at
// config load so a bad value stops the sidecar at boot instead of at the first request.

/** `chainId:serviceId:sandboxId:0xoperator` (lowercase), as attestation's contextString makes it. */
const CONTEXT = /^(\d{1,78}):(\d{1,20}):([\x21-\x39\x3b-\x7e]{1,128}):(0x[0-9a-f]{40})$/;

export function parseTeeContext(ctx: string): { sandboxId: string } {
  const m = CONTEXT.exec(ctx);
  if (!m) {
    throw new Error(
      'SIDECAR_TEE_CONTEXT must be chainId:serviceId:sandboxId:0xoperator (lowercase), as the operator sets it',
    );
  }
  return { sandboxId: m[3]! };
}
