// Per-client rate limits by route class (auth, write, read, terminal, probe); the static public
// documents (capabilities, OpenAPI) are not limited. A client is its IPv4 address or its IPv6 /64 (one host is usually given a whole /64, so
// keying by full address would let it pick a fresh bucket per request). OPTIONS requests count too:
// `preflight` counts them before the CORS middleware answers them, `middleware` counts the rest.
import type { MiddlewareHandler } from 'hono';
import { RuntimeError } from '../../errors.ts';
import type { ApiConfig } from '../config.ts';
import type { ApiEnv } from '../context.ts';
import { SlidingWindowLimiter } from './sliding-window.ts';

export type RouteClass = 'public' | 'probe' | 'auth' | 'read' | 'write' | 'terminal';

const PUBLIC = /^\/api\/(capabilities|openapi\.json)$/;
const PROBE = /^\/(health|readyz|metrics)$/;
const SANDBOX = /^\/api\/(sandboxes\/[^/]+|sandbox)(\/.*)?$/;

/** The class of a request, from its method and path (one table, so no route can forget it). */
export function classify(method: string, path: string): RouteClass {
  if (PUBLIC.test(path)) return 'public';
  if (PROBE.test(path)) return 'probe';
  if (path.startsWith('/api/auth/')) return 'auth';
  const m = SANDBOX.exec(path);
  const rest = m?.[2] ?? '';
  if (m) {
    // The owner channel carries every owner operation of a CVM sandbox, a terminal's keystrokes
    // (one request each) included, and the operator cannot tell which: the terminal bucket.
    if (rest.startsWith('/terminals') || rest === '/tee/channel') return 'terminal';
    // Reading secret names and the port proxy count as writes (spec table).
    if (rest.startsWith('/secrets') || rest.startsWith('/port/') || rest.startsWith('/tee/')) return 'write';
  }
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS' ? 'read' : 'write';
}

/** The rate-limit bucket of a client IP: IPv4 as is, IPv6 as its /64 (`a:b:c:d::/64`). */
export function rateKey(ip: string): string {
  const groups = ipv6Groups(ip);
  return groups ? `${groups.slice(0, 4).join(':')}::/64` : ip;
}

/** The eight 16-bit groups of an IPv6 address (hex, no leading zeros), or null if it is not one. */
function ipv6Groups(raw: string): string[] | null {
  const ip = raw
    .trim()
    .replace(/^\[|\]$/g, '')
    .split('%')[0]!
    .toLowerCase();
  if (!ip.includes(':')) return null;
  const halves = ip.split('::');
  if (halves.length > 2) return null;
  const split = (h: string | undefined) => (h ? h.split(':') : []);
  const head = split(halves[0]);
  const tail = split(halves[1]);
  const last = tail.length > 0 ? tail : head;
  const v4 = last.at(-1)?.includes('.') ? last.pop() : undefined;
  if (v4 !== undefined) {
    const o = v4.split('.').map((x) => (/^\d{1,3}$/.test(x) ? Number(x) : 256));
    if (o.length !== 4 || o.some((x) => x > 255)) return null;
    last.push(((o[0]! << 8) | o[1]!).toString(16), ((o[2]! << 8) | o[3]!).toString(16));
  }
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (!all.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  return all.map((g) => Number.parseInt(g, 16).toString(16));
}

export interface RateLimiters {
  /** Counts OPTIONS requests; mount before CORS, which answers preflights itself. */
  preflight: MiddlewareHandler<ApiEnv>;
  /** Counts every other request (and OPTIONS not yet counted). */
  middleware: MiddlewareHandler<ApiEnv>;
  stop(): void;
}

export function rateLimit(cfg: ApiConfig['rateLimits']): RateLimiters {
  const limiters: Record<Exclude<RouteClass, 'public'>, SlidingWindowLimiter> = {
    auth: new SlidingWindowLimiter(cfg.auth, cfg.windowMs),
    read: new SlidingWindowLimiter(cfg.read, cfg.windowMs),
    write: new SlidingWindowLimiter(cfg.write, cfg.windowMs),
    terminal: new SlidingWindowLimiter(cfg.terminal, cfg.windowMs),
    probe: new SlidingWindowLimiter(cfg.probe, cfg.windowMs),
  };
  const sweeper = setInterval(() => {
    for (const l of Object.values(limiters)) l.sweep();
  }, cfg.windowMs);
  sweeper.unref();
  const counted = new WeakSet<Request>();
  const count = (c: Parameters<MiddlewareHandler<ApiEnv>>[0]) => {
    counted.add(c.req.raw);
    const cls = classify(c.req.method, c.req.path);
    if (cls === 'public') return;
    const d = limiters[cls].hit(rateKey(c.get('clientIp')));
    if (!d.allowed) {
      throw new RuntimeError(
        'RATE_LIMITED',
        `too many ${cls} requests from this address; retry after the delay`,
        {
          details: { retry_after_ms: Math.ceil(d.retryAfterMs), class: cls },
        },
      );
    }
  };
  const preflight: MiddlewareHandler<ApiEnv> = async (c, next) => {
    if (c.req.method === 'OPTIONS') count(c);
    await next();
  };
  const middleware: MiddlewareHandler<ApiEnv> = async (c, next) => {
    if (!counted.has(c.req.raw)) count(c);
    await next();
  };
  return { preflight, middleware, stop: () => clearInterval(sweeper) };
}
