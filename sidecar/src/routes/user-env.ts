// PUT /env: the operator delivers the sandbox user's env (create env and secrets), replacing what
// was there; the sidecar keeps it in memory for the agent's children only (see user-env.ts). A
// `token` in the same body replaces the bearer token (a warm-pool container claimed by a sandbox).
import type { SidecarConfig } from '../config.ts';
import { SidecarError } from '../errors.ts';
import type { BearerAuth } from '../http/auth.ts';
import { type Handler, ok, parseBody } from '../http/http-router.ts';
import * as z from '../schema.ts';
import { firstPlatformOwned } from '../user-env/user-env.ts';

const EnvBody = z.object({
  env: z.record(z.string().check(z.regex(/^[A-Za-z_][A-Za-z0-9_]*$/)), z.string()),
  /** The sandbox's own bearer token; the one this request used stops working once answered. */
  token: z.optional(z.string().check(z.minLength(32, 'token must be at least 32 characters'))),
});

/** 400 when a request's env names a platform-owned variable (it would never reach the child). */
export function refusePlatformOwned(env: Record<string, string> | undefined): void {
  const bad = env ? firstPlatformOwned(env) : undefined;
  if (bad) throw new SidecarError('INVALID_ENV', `env "${bad.key.slice(0, 64)}": ${bad.reason}`, 400);
}

export function putUserEnvHandler(config: SidecarConfig, auth: BearerAuth): Handler {
  return async (ctx) => {
    const body = parseBody(EnvBody, await ctx.body());
    refusePlatformOwned(body.env);
    config.userEnv.replace(body.env);
    if (body.token) auth.rotate(body.token);
    ctx.log.info({ names: Object.keys(body.env).length, rotated: !!body.token }, 'user env delivered');
    return ok({ success: true, names: Object.keys(body.env).sort() });
  };
}
