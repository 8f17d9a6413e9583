// The TEE binding context a sidecar in a CVM is started with (SIDECAR_TEE_CONTEXT), checked at
// config load so a bad value stops the sidecar at boot instead of at the first request. It names
// the owner: the one wallet this enclave takes orders from (routes/tee-channel.ts).
import { parseContext } from '@agent-sandbox/attestation/sealing';

/** `chainId:serviceId:sandboxId:0xoperator:0xowner` (lowercase), as attestation's contextString makes it. */
export function parseTeeContext(ctx: string): { sandboxId: string; owner: string } {
  try {
    const c = parseContext(ctx);
    return { sandboxId: c.sandboxId, owner: c.owner };
  } catch {
    throw new Error(
      'SIDECAR_TEE_CONTEXT must be chainId:serviceId:sandboxId:0xoperator:0xowner (lowercase), as the operator sets it',
    );
  }
}

/**
 * In a CVM the deploy env is the operator's to choose, so none of it may decide what runs or as
 * whom (an agent command run at the owner's next prompt with the sealed env; children as root,
 * able to read this process's memory and its key): these must be the image's values (or unset),
 * else the sidecar refuses to boot.
 */
export const TEE_FIXED_ENV: Readonly<Record<string, string | undefined>> = {
  SIDECAR_AGENT_COMMAND: undefined,
  SIDECAR_DEFAULT_HARNESS: undefined,
  SIDECAR_SOCKET: undefined,
  AGENT_SUBPROCESS_UID: '1000',
  AGENT_SUBPROCESS_GID: '1000',
};

/** The only names of the container env a child sees in a CVM (the rest is the operator's). */
export const TEE_CHILD_ENV_NAMES = ['PATH', 'LANG', 'HOME', 'HOSTNAME', 'TERM', 'NODE_ENV'] as const;

export function checkTeeEnv(env: Record<string, string | undefined>): void {
  for (const [k, want] of Object.entries(TEE_FIXED_ENV)) {
    const got = env[k];
    if (got !== undefined && got !== want) {
      throw new Error(
        `${k} cannot be set for a sidecar in a TEE (SIDECAR_TEE): the deploy env is the operator's, and it must not decide what runs`,
      );
    }
  }
}
