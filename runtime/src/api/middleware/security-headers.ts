// Security headers on every response; HSTS only when the API is served over TLS.
import type { MiddlewareHandler } from 'hono';
import type { ApiEnv } from '../context.ts';

export function securityHeaders(opts: { tls: boolean }): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    await next();
    const h = c.res.headers;
    h.set('x-content-type-options', 'nosniff');
    h.set('x-frame-options', 'DENY');
    h.set('cache-control', 'no-store');
    h.set('referrer-policy', 'no-referrer');
    if (opts.tls) h.set('strict-transport-security', 'max-age=31536000; includeSubDomains');
  };
}
