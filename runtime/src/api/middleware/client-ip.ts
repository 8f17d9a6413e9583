// The client's IP for rate limiting: the socket peer, or X-Forwarded-For when (and only when) the
// peer is a configured trusted proxy.
import { getConnInfo } from '@hono/node-server/conninfo';
import type { MiddlewareHandler } from 'hono';
import type { ApiEnv } from '../context.ts';

function normalize(ip: string): string {
  const t = ip.trim().toLowerCase();
  return t.startsWith('::ffff:') && t.includes('.') ? t.slice(7) : t;
}

function ipv4ToInt(ip: string): number | null {
  const parts = ip.split('.');
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    n = n * 256 + Number(p);
  }
  return n;
}

/** A matcher for exact IPs (v4/v6) and IPv4 CIDRs like 10.0.0.0/8. */
export function proxyMatcher(trusted: string[]): (ip: string) => boolean {
  const exact = new Set<string>();
  const cidrs: Array<{ base: number; mask: number }> = [];
  for (const entry of trusted) {
    const [addr, bits] = entry.split('/');
    const base = bits !== undefined ? ipv4ToInt(addr ?? '') : null;
    if (base !== null && bits !== undefined) {
      const b = Number(bits);
      const mask = b === 0 ? 0 : (0xffffffff << (32 - b)) >>> 0;
      cidrs.push({ base: (base & mask) >>> 0, mask });
    } else {
      exact.add(normalize(entry));
    }
  }
  return (ip) => {
    const n = normalize(ip);
    if (exact.has(n)) return true;
    const v = ipv4ToInt(n);
    return v !== null && cidrs.some((c) => (v & c.mask) >>> 0 === c.base);
  };
}

/**
 * Right to left through X-Forwarded-For, skipping trusted proxies: the first untrusted hop is the
 * client (entries further left are whatever the client claimed and are not believed).
 */
export function resolveClientIp(
  peer: string,
  xff: string | undefined,
  isTrusted: (ip: string) => boolean,
): string {
  let ip = normalize(peer);
  if (!xff || !isTrusted(ip)) return ip;
  const hops = xff
    .split(',')
    .map((s) => normalize(s))
    .filter(Boolean);
  for (let i = hops.length - 1; i >= 0; i--) {
    ip = hops[i]!;
    if (!isTrusted(ip)) return ip;
  }
  return ip;
}

export function clientIp(trustedProxies: string[]): MiddlewareHandler<ApiEnv> {
  const isTrusted = proxyMatcher(trustedProxies);
  return async (c, next) => {
    // app.fetch() without a socket (in-process callers) has no peer; they share one bucket.
    const hasSocket = Boolean((c.env as { incoming?: unknown } | undefined)?.incoming);
    const peer = hasSocket ? (getConnInfo(c).remote.address ?? 'unknown') : 'unknown';
    c.set('clientIp', resolveClientIp(peer, c.req.header('x-forwarded-for'), isTrusted));
    await next();
  };
}
