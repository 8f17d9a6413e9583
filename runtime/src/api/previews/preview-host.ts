// Requests on a preview host (`p<port>-<sandbox>.<PREVIEW_ORIGIN>`): nothing of the API or console
// is served there. Two ways in, each a host-only HttpOnly cookie (SameSite=Lax so the first
// navigation carries it, Secure on https) set by a redirecting entry path:
// - the signed-in user's own preview: `GET /__asb_preview?t=<ticket>` spends the one-use ticket;
//   the cookie lasts no longer than the session, and needs the wallet to still own the sandbox or
//   be one of its members;
// - a shareable preview link (when the operator enables them): `GET /__asb_link?t=<token>`; the
//   cookie holds the link token and works while the link is live (not expired, not revoked),
//   rate-limited per link.
// A request that passes is proxied whole (path and query) to the sandbox's port; its connection
// is held under its grant (live-access.ts), so a revocation or expiry also ends it.
import type { Context, MiddlewareHandler } from 'hono';
import { RuntimeError } from '../../errors.ts';
import type { SandboxRecord } from '../../sandbox/record.ts';
import type { ApiEnv } from '../context.ts';
import type { ApiSandboxes } from '../deps.ts';
import { roleOn } from '../middleware/session.ts';
import { SlidingWindowLimiter } from '../middleware/sliding-window.ts';
import { proxyToPort } from '../routes/port-proxy.ts';
import { type PreviewSessions, TICKET_PATH } from '../routes/previews.ts';
import type { SandboxRouteDeps } from '../routes/types.ts';
import { cookieValues, PREVIEW_COOKIE, type PreviewCredentials } from './preview-credentials.ts';
import { LINK_COOKIE, LINK_PATH, type PreviewLinks } from './preview-links.ts';
import { matchPreviewHost, type PreviewOrigin } from './preview-origin.ts';

const closed = () =>
  new RuntimeError(
    'UNAUTHORIZED',
    'this preview is closed (expired, revoked, or signed out); open it again from the console or ask for a new link',
  );

type Deps = Pick<SandboxRouteDeps, 'sandboxes' | 'config' | 'live'> & { sandboxes: ApiSandboxes };

export function previewHost(
  d: Deps,
  sessions: PreviewSessions,
  previews: PreviewCredentials,
  origin: PreviewOrigin | undefined,
  links: PreviewLinks,
): MiddlewareHandler<ApiEnv> {
  const perLink = new SlidingWindowLimiter(d.config.previewLinks.requestsPerMinute, 60_000, 10_000);
  const linksOn = () => d.config.previewLinks.enabled;
  const setCookie = (c: Context<ApiEnv>, name: string, value: string, expiresAt: number) => {
    const maxAge = Math.max(1, Math.floor((expiresAt - Date.now()) / 1000));
    const secure = origin?.protocol === 'https:' || d.config.tls;
    c.header(
      'set-cookie',
      [
        `${name}=${value}`,
        'Path=/',
        `Max-Age=${maxAge}`,
        'HttpOnly',
        'SameSite=Lax',
        ...(secure ? ['Secure'] : []),
      ].join('; '),
      { append: true },
    );
  };

  return async (c, next) => {
    const target = matchPreviewHost(origin, c.req.header('host'));
    if (!target) return next();
    const { sandboxId, port } = target;
    const url = new URL(c.req.url);
    if (url.pathname === TICKET_PATH || url.pathname === LINK_PATH) c.header('cache-control', 'no-store');
    if (url.pathname === TICKET_PATH) {
      const ticket = url.searchParams.get('t') ?? '';
      const g = previews.redeem(ticket, sandboxId, port);
      if (!g || !sessions.isActive(g.jti)) throw closed();
      const cookie = previews.mint('cookie', {
        sandboxId,
        port,
        owner: g.owner,
        jti: g.jti,
        expiresAt: g.expiresAt,
      });
      setCookie(c, PREVIEW_COOKIE, cookie.value, cookie.expiresAt);
      return c.redirect('/', 303);
    }
    if (url.pathname === LINK_PATH) {
      const link = linksOn() ? await links.open(url.searchParams.get('t') ?? '', sandboxId, port) : undefined;
      if (!link) throw closed();
      setCookie(c, LINK_COOKIE, url.searchParams.get('t')!, link.expiresAt);
      return c.redirect('/', 303);
    }
    const raw = c.req.raw.url;
    const pathStart = raw.indexOf('/', raw.indexOf('//') + 2);
    const path = pathStart < 0 ? '/' : raw.slice(pathStart);
    const live = async (): Promise<SandboxRecord | undefined> => {
      const r = await d.sandboxes.get(sandboxId);
      return r && r.state !== 'deleted' ? r : undefined;
    };

    const grant = cookieValues(c.req.header('cookie'), PREVIEW_COOKIE)
      .map((v) => previews.verify('cookie', v, sandboxId, port))
      .find((g) => g !== undefined && sessions.isActive(g.jti));
    if (grant) {
      // Whoever opened it must still own the sandbox or be one of its members (team access).
      const record = await live();
      if (!record || !roleOn(record, grant.owner)) throw closed();
      return proxyToPort(c, d, record, port, '', path, (end) =>
        d.live.hold({ sandboxId, address: grant.owner }, end, grant.expiresAt),
      );
    }

    if (!linksOn()) throw closed();
    let link: Awaited<ReturnType<PreviewLinks['open']>>;
    for (const v of cookieValues(c.req.header('cookie'), LINK_COOKIE)) {
      link = await links.open(v, sandboxId, port);
      if (link) break;
    }
    if (!link) throw closed();
    const record = await live();
    if (!record || !roleOn(record, link.createdBy)) throw closed();
    const rate = perLink.hit(link.id);
    if (!rate.allowed) {
      c.header('retry-after', String(Math.ceil(rate.retryAfterMs / 1000)));
      throw new RuntimeError(
        'RATE_LIMITED',
        'this preview link is getting too many requests; try again shortly',
        {
          details: { retry_after_ms: rate.retryAfterMs },
        },
      );
    }
    const held = link;
    return proxyToPort(c, d, record, port, '', path, (end) =>
      d.live.hold({ sandboxId, linkId: held.id }, end, held.expiresAt),
    );
  };
}
