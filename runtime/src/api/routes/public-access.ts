// Who is asking a public route: anonymous, a signed-in wallet (its session), or the operator (its
// METRICS_TOKEN). Public answers carry only what a client needs before sign-in; per-tenant detail
// is for the owner's session or the operator's token. Also the cached health checks.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context } from 'hono';
import { sameAddress, scopeAllows } from '../../auth/index.ts';
import { RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';
import type { ApiSessions, HealthCheck } from '../deps.ts';
import { bearerToken } from '../middleware/session.ts';

export type CheckResult = 'ok' | 'error' | 'not_configured';

export interface PublicCaller {
  /** Presented the operator's METRICS_TOKEN. */
  operator: boolean;
  /** A verified session's address (lowercase) and scope. */
  session?: { address: string; scope?: string | undefined };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Constant-time comparison of a presented token with the configured one. */
export function isMetricsToken(presented: string | undefined, configured: string | undefined): boolean {
  if (!presented || !configured) return false;
  return timingSafeEqual(digest(presented), digest(configured));
}

/**
 * The caller of a public route. No Authorization header: anonymous. A header that is neither the
 * metrics token nor a valid session is a 401 (a client that believes it is signed in must learn
 * it is not, rather than silently get the anonymous answer).
 */
export async function publicCaller(
  c: Context<ApiEnv>,
  sessions: Pick<ApiSessions, 'verify'>,
  metricsToken: string | undefined,
): Promise<PublicCaller> {
  const header = c.req.header('authorization');
  if (!header) return { operator: false };
  const token = bearerToken(header);
  if (isMetricsToken(token, metricsToken)) return { operator: true };
  try {
    if (!token) throw new Error('malformed');
    const claims = await sessions.verify(token);
    const scope = typeof claims.scope === 'string' ? claims.scope : undefined;
    return { operator: false, session: { address: claims.address.toLowerCase(), scope } };
  } catch {
    throw new RuntimeError(
      'UNAUTHORIZED',
      'session invalid or expired; sign in again (or send no Authorization)',
    );
  }
}

/** True when the caller may see the detail of a sandbox owned by `owner`. */
export function mayInspect(
  caller: PublicCaller,
  sandbox: { id: string; owner: string | undefined },
): boolean {
  if (caller.operator) return true;
  const s = caller.session;
  return !!s && !!sandbox.owner && sameAddress(s.address, sandbox.owner) && scopeAllows(s, sandbox.id);
}

const CHECK_TIMEOUT_MS = 2_000;

async function runCheck(check: HealthCheck): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const r = await Promise.race([
      Promise.resolve().then(check),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS);
      }),
    ]);
    return r === false ? 'error' : 'ok';
  } catch {
    return 'error';
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A health check run at most once per `ttlMs`: callers within the period get the last result, and
 * concurrent callers while it runs share the one run. So /health costs the chain and the engine
 * one call per period whatever the request rate.
 */
export function cachedCheck(
  check: HealthCheck | undefined,
  ttlMs: number,
  now: () => number = Date.now,
): () => Promise<CheckResult> {
  if (!check) return async () => 'not_configured';
  let last: { at: number; result: CheckResult } | undefined;
  let running: Promise<CheckResult> | undefined;
  return () => {
    if (last && now() - last.at < ttlMs) return Promise.resolve(last.result);
    running ??= runCheck(check).then((result) => {
      last = { at: now(), result };
      running = undefined;
      return result;
    });
    return running;
  };
}
