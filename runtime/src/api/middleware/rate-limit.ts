// Per-IP rate limits by route class (auth, write, read, terminal); public probes are not limited.
import type { MiddlewareHandler } from 'hono';
import { RuntimeError } from '../../errors.ts';
import type { ApiConfig } from '../config.ts';
import type { ApiEnv } from '../context.ts';
import { SlidingWindowLimiter } from './sliding-window.ts';

export type RouteClass = 'public' | 'auth' | 'read' | 'write' | 'terminal';

const PUBLIC = /^\/(health|readyz|metrics)$|^\/api\/(capabilities|openapi\.json)$/;
const SANDBOX = /^\/api\/(sandboxes\/[^/]+|sandbox)(\/.*)?$/;

/** The class of a request, from its method and path (one table, so no route can forget it). */
export function classify(method: string, path: string): RouteClass {
  if (PUBLIC.test(path)) return 'public';
  if (path.startsWith('/api/auth/')) return 'auth';
  const m = SANDBOX.exec(path);
  const rest = m?.[2] ?? '';
  if (m) {
    if (rest.startsWith('/terminals')) return 'terminal';
    // Reading secret names and the port proxy count as writes (spec table).
    if (rest.startsWith('/secrets') || rest.startsWith('/port/') || rest.startsWith('/tee/')) return 'write';
  }
  return method === 'GET' || method === 'HEAD' ? 'read' : 'write';
}

export interface RateLimiters {
  middleware: MiddlewareHandler<ApiEnv>;
  stop(): void;
}

export function rateLimit(cfg: ApiConfig['rateLimits']): RateLimiters {
  const limiters: Record<Exclude<RouteClass, 'public'>, SlidingWindowLimiter> = {
    auth: new SlidingWindowLimiter(cfg.auth, cfg.windowMs),
    read: new SlidingWindowLimiter(cfg.read, cfg.windowMs),
    write: new SlidingWindowLimiter(cfg.write, cfg.windowMs),
    terminal: new SlidingWindowLimiter(cfg.terminal, cfg.windowMs),
  };
  const sweeper = setInterval(() => {
    for (const l of Object.values(limiters)) l.sweep();
  }, cfg.windowMs);
  sweeper.unref();
  const middleware: MiddlewareHandler<ApiEnv> = async (c, next) => {
    if (c.req.method === 'OPTIONS') return next();
    const cls = classify(c.req.method, c.req.path);
    if (cls === 'public') return next();
    const d = limiters[cls].hit(c.get('clientIp'));
    if (!d.allowed) {
      throw new RuntimeError(
        'RATE_LIMITED',
        `too many ${cls} requests from this address; retry after the delay`,
        {
          details: { retry_after_ms: Math.ceil(d.retryAfterMs), class: cls },
        },
      );
    }
    await next();
  };
  return { middleware, stop: () => clearInterval(sweeper) };
}
