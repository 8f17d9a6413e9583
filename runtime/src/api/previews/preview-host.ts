// Requests on a preview host (`p<port>-<sandbox>.<PREVIEW_ORIGIN>`): nothing of the API or console
// is served there. `GET /__asb_preview?t=<ticket>` spends the one-use ticket and sets the host's
// cookie (HttpOnly, SameSite=Lax so the first navigation from the console carries it, host-only,
// Secure on https, lasting no longer than the session), then redirects to `/`. Every other request
// needs that cookie, a live session behind it and the owner still owning the sandbox; it is then
// proxied whole (path and query) to the sandbox's port.
import type { MiddlewareHandler } from 'hono';
import { RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';
import type { ApiSandboxes } from '../deps.ts';
import { roleOn } from '../middleware/session.ts';
import { proxyToPort } from '../routes/port-proxy.ts';
import { type PreviewSessions, TICKET_PATH } from '../routes/previews.ts';
import type { SandboxRouteDeps } from '../routes/types.ts';
import { cookieValues, PREVIEW_COOKIE, type PreviewCredentials } from './preview-credentials.ts';
import { matchPreviewHost, type PreviewOrigin } from './preview-origin.ts';

const closed = () =>
  new RuntimeError(
    'UNAUTHORIZED',
    'this preview is closed (expired, or signed out); open it again from the console',
  );

export function previewHost(
  d: Pick<SandboxRouteDeps, 'sandboxes' | 'config' | 'live'> & { sandboxes: ApiSandboxes },
  sessions: PreviewSessions,
  previews: PreviewCredentials,
  origin: PreviewOrigin | undefined,
): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const target = matchPreviewHost(origin, c.req.header('host'));
    if (!target) return next();
    const { sandboxId, port } = target;
    const url = new URL(c.req.url);
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
      const maxAge = Math.max(1, Math.floor((cookie.expiresAt - Date.now()) / 1000));
      const secure = origin?.protocol === 'https:' || d.config.tls;
      c.header(
        'set-cookie',
        [
          `${PREVIEW_COOKIE}=${cookie.value}`,
          'Path=/',
          `Max-Age=${maxAge}`,
          'HttpOnly',
          'SameSite=Lax',
          ...(secure ? ['Secure'] : []),
        ].join('; '),
      );
      return c.redirect('/', 303);
    }
    const grant = cookieValues(c.req.header('cookie'), PREVIEW_COOKIE)
      .map((v) => previews.verify('cookie', v, sandboxId, port))
      .find((g) => g !== undefined && sessions.isActive(g.jti));
    if (!grant) throw closed();
    const record = await d.sandboxes.get(sandboxId);
    // Whoever opened it must still own the sandbox or be one of its members (team access).
    if (!record || record.state === 'deleted' || !roleOn(record, grant.owner)) throw closed();
    const raw = c.req.raw.url;
    const pathStart = raw.indexOf('/', raw.indexOf('//') + 2);
    return proxyToPort(c, d, record, port, '', pathStart < 0 ? '/' : raw.slice(pathStart), (end) =>
      d.live.hold({ sandboxId, address: grant.owner }, end, grant.expiresAt),
    );
  };
}
