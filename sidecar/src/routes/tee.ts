// TEE routes of a sidecar inside a dstack CVM (SIDECAR_TEE=dstack): evidence over the caller's
// nonce bound to the sealing key held here, and sealed secrets opened here into the user env.
// The operator forwards these untouched; a sealed-body failure says nothing more than false.
import type { SidecarConfig } from '../config.ts';
import { type Handler, ok } from '../http/http-router.ts';
import type { DstackEnclave } from '../tee/enclave.ts';

export function teeAttestationHandler(enclave: DstackEnclave): Handler {
  return async (ctx) => ok(await enclave.evidence(ctx.query.get('nonce')));
}

export function teePublicKeyHandler(enclave: DstackEnclave): Handler {
  return async (ctx) => ok(await enclave.publicKey(ctx.query.get('nonce')));
}

export function teeSealedSecretsHandler(enclave: DstackEnclave, config: SidecarConfig): Handler {
  return async (ctx) => {
    const env = enclave.open(await ctx.body());
    if (!env) return ok({ success: false, secrets_count: 0 });
    config.userEnv.addSealed(env);
    // Names only: values never reach a log.
    ctx.log.info({ names: Object.keys(env).length }, 'sealed secrets opened');
    return ok({ success: true, secrets_count: Object.keys(env).length });
  };
}
