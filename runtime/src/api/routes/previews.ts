// Port previews: `POST …/previews {port}` mints a short-lived credential for one exposed port of the
// caller's sandbox, set as an HttpOnly, SameSite=Strict cookie whose Path is that port's proxy prefix,
// so a browser can open the preview in a new tab with no session token in the URL. The proxy
// accepts it (sessionOrPreview) only on that sandbox and port, only until it expires.
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';
import type { ApiSessions } from '../deps.ts';
import { requireSession } from '../middleware/session.ts';
import { cookieValues, PREVIEW_COOKIE, type PreviewCredentials } from '../previews/preview-credentials.ts';
import { errors, json, jsonBody, SANDBOX_ERRORS } from '../schemas.ts';
import { parsePortPath } from './port-proxy.ts';
import type { SandboxRouteDeps } from './types.ts';

const PreviewRequestSchema = z
  .object({ port: z.number().int().min(1).max(65_535) })
  .openapi('PreviewRequest');
const PreviewSchema = z
  .object({
    url: z.string().openapi({ description: 'Path of the preview on this operator (open it in a new tab)' }),
    port: z.number().int(),
    expires_at: z.string(),
  })
  .openapi('Preview');

const previewRoute = createRoute({
  method: 'post',
  path: '/previews',
  tags: ['sandbox'],
  summary:
    'Mint a port-preview credential: an HttpOnly SameSite=Strict cookie for this sandbox and port only, short-lived',
  security: [{ bearer: [] }],
  request: { body: jsonBody(PreviewRequestSchema) },
  responses: { 200: json(PreviewSchema, 'Cookie set; open `url`'), ...errors(400, ...SANDBOX_ERRORS, 409) },
});

export function registerPreviews(
  app: OpenAPIHono<ApiEnv>,
  d: SandboxRouteDeps,
  previews: PreviewCredentials,
): void {
  app.openapi(previewRoute, async (c) => {
    const record = c.get('sandbox');
    if (record.state !== 'running') {
      throw new RuntimeError('SANDBOX_NOT_RUNNING', `sandbox is ${record.state}; resume it first`);
    }
    const { port } = c.req.valid('json');
    const exposed = d.sandboxes.exposedPort ? await d.sandboxes.exposedPort(record.id, port) : null;
    if (!(typeof exposed === 'object' ? exposed?.port : exposed)) {
      throw new RuntimeError('NOT_FOUND', `sandbox does not expose port ${port}; expose it when creating`);
    }
    const { value, expiresAt } = previews.mint(record.id, port, c.get('session').address);
    const prefix = `${c.req.path.replace(/\/previews$/, '')}/port/${port}/`;
    const attrs = [
      `${PREVIEW_COOKIE}=${value}`,
      `Path=${prefix}`,
      `Max-Age=${Math.max(1, Math.floor(previews.ttlMs / 1000))}`,
      'HttpOnly',
      'SameSite=Strict',
      ...(d.config.tls ? ['Secure'] : []),
    ];
    c.header('set-cookie', attrs.join('; '));
    c.header('cache-control', 'no-store');
    return c.json({ url: prefix, port, expires_at: new Date(expiresAt).toISOString() }, 200);
  });
}

/**
 * The session check of the sandbox routes, with one exception: a proxy request (`…/port/{port}/…`)
 * without an Authorization header may present a preview cookie for exactly this sandbox and port.
 * It then acts as the owner, scoped to this sandbox; the owner check that follows still applies.
 */
export function sessionOrPreview(
  sessions: Pick<ApiSessions, 'verify'>,
  previews: PreviewCredentials,
): MiddlewareHandler<ApiEnv> {
  const bearer = requireSession(sessions);
  return async (c, next) => {
    const cookies = cookieValues(c.req.header('cookie'), PREVIEW_COOKIE);
    if (c.req.header('authorization') || cookies.length === 0 || !c.req.path.includes('/port/')) {
      return bearer(c, next);
    }
    let port: number;
    try {
      port = parsePortPath(c.req.path).port;
    } catch {
      return bearer(c, next);
    }
    const sandboxId = c.get('sandboxId');
    const owner = cookies.map((v) => previews.verify(v, sandboxId, port)).find(Boolean);
    if (!owner) {
      throw new RuntimeError(
        'UNAUTHORIZED',
        'preview expired or not for this port; open it again from the console',
      );
    }
    c.set('session', { address: owner, scope: `sandbox:${sandboxId}`, token: '' });
    await next();
  };
}
