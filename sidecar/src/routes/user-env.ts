// PUT /env: the operator delivers the sandbox user's env (create env and secrets), replacing what
// was there; the sidecar keeps it in memory for the agent's children only (see user-env.ts).
import type { SidecarConfig } from '../config.ts';
import { SidecarError } from '../errors.ts';
import { type Handler, ok, parseBody } from '../http/http-router.ts';
import * as z from '../schema.ts';
import { firstPlatformOwned } from '../user-env/user-env.ts';

const EnvBody = z.object({
  env: z.record(z.string().check(z.regex(/^[A-Za-z_][A-Za-z0-9_]*$/)), z.string()),
});

/** 400 when a request's env names a platform-owned variable (it would never reach the child). */
export function refusePlatformOwned(env: Record<string, string> | undefined): void {
  const bad = env ? firstPlatformOwned(env) : undefined;
  if (bad) throw new SidecarError('INVALID_ENV', `env "${bad.key.slice(0, 64)}": ${bad.reason}`, 400);
}

export function putUserEnvHandler(config: SidecarConfig): Handler {
  return async (ctx) => {
    const body = parseBody(EnvBody, await ctx.body());
    refusePlatformOwned(body.env);
    config.userEnv.replace(body.env);
    ctx.log.info({ names: Object.keys(body.env).length }, 'user env delivered');
    return ok({ success: true, names: Object.keys(body.env).sort() });
  };
}
