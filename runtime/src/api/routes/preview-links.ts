// Shareable preview links (owner only, off unless the operator enables them): `POST
// …/preview-links {port, expires_in_seconds?}` answers a URL anyone can open to reach that one
// port on its preview host; `GET …/preview-links` lists them (never their tokens);
// `DELETE …/preview-links/{link_id}` revokes one, ending its open connections at once.
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';
import { assertOwner } from '../middleware/session.ts';
import { LINK_PATH, linkState, type PreviewLink, type PreviewLinks } from '../previews/preview-links.ts';
import { type PreviewOrigin, previewBase, previewOriginFor } from '../previews/preview-origin.ts';
import { errors, json, jsonBody, SANDBOX_ERRORS } from '../schemas.ts';
import type { SandboxRouteDeps } from './types.ts';

const LinkRequestSchema = z
  .object({
    port: z.number().int().min(1).max(65_535),
    expires_in_seconds: z
      .number()
      .int()
      .min(1)
      .optional()
      .openapi({ description: "lifetime (default and ceiling: the operator's PREVIEW_LINK_TTL / _MAX_TTL)" }),
  })
  .openapi('PreviewLinkRequest');
const LinkSchema = z
  .object({
    id: z.string(),
    port: z.number().int(),
    origin: z.string().openapi({ description: "the port's preview host" }),
    state: z.enum(['active', 'revoked', 'expired']),
    created_at: z.string(),
    expires_at: z.string(),
    revoked_at: z.string().nullable(),
  })
  .openapi('PreviewLink');
const CreatedSchema = LinkSchema.extend({
  url: z
    .string()
    .openapi({ description: 'the link: shown once, share it; anyone with it reaches this port' }),
}).openapi('PreviewLinkCreated');
const LinkListSchema = z.object({ links: z.array(LinkSchema) }).openapi('PreviewLinkList');
const LinkParams = z.object({ link_id: z.string().regex(/^pl-[0-9a-f]{16}$/) });

const sec = [{ bearer: [] }];
const routes = {
  create: createRoute({
    method: 'post',
    path: '/preview-links',
    tags: ['previews'],
    summary:
      'Owner only: a shareable link to one exposed port (unguessable, expiring, revocable); 409 while the operator has them off',
    security: sec,
    request: { body: jsonBody(LinkRequestSchema) },
    responses: {
      200: json(CreatedSchema, 'The link (its URL is shown only now)'),
      ...errors(400, ...SANDBOX_ERRORS, 409),
    },
  }),
  list: createRoute({
    method: 'get',
    path: '/preview-links',
    tags: ['previews'],
    summary: "Owner only: the sandbox's preview links (without their URLs)",
    security: sec,
    responses: { 200: json(LinkListSchema, 'Links'), ...errors(...SANDBOX_ERRORS) },
  }),
  revoke: createRoute({
    method: 'delete',
    path: '/preview-links/{link_id}',
    tags: ['previews'],
    summary: 'Owner only: revoke a link; it stops working at once, open connections included',
    security: sec,
    request: { params: LinkParams },
    responses: { 200: json(LinkSchema, 'Revoked'), ...errors(400, ...SANDBOX_ERRORS) },
  }),
};

const iso = (ms: number) => new Date(ms).toISOString();

export function registerPreviewLinks(
  app: OpenAPIHono<ApiEnv>,
  d: SandboxRouteDeps,
  links: PreviewLinks,
  configured: PreviewOrigin | undefined,
): void {
  const view = (l: PreviewLink, origin: PreviewOrigin | undefined) => ({
    id: l.id,
    port: l.port,
    origin: origin ? previewBase(origin, l.sandboxId, l.port) : '',
    state: linkState(l),
    created_at: iso(l.createdAt),
    expires_at: iso(l.expiresAt),
    revoked_at: l.revokedAt === null ? null : iso(l.revokedAt),
  });

  app.openapi(routes.create, async (c) => {
    assertOwner(c, 'create preview links');
    const cfg = d.config.previewLinks;
    if (!cfg.enabled) {
      throw new RuntimeError(
        'CONFLICT',
        'preview links are off on this operator; its operator enables them with PREVIEW_LINKS=true',
      );
    }
    const record = c.get('sandbox');
    const { port, expires_in_seconds } = c.req.valid('json');
    if (!(record.exposedPorts ?? []).includes(port)) {
      throw new RuntimeError('NOT_FOUND', `sandbox does not expose port ${port}; expose it when creating`);
    }
    const ttlMs =
      expires_in_seconds === undefined ? Math.min(cfg.defaultTtlMs, cfg.maxTtlMs) : expires_in_seconds * 1000;
    if (ttlMs > cfg.maxTtlMs) {
      throw new RuntimeError(
        'VALIDATION',
        `expires_in_seconds ${expires_in_seconds} is above this operator's ceiling of ${cfg.maxTtlMs / 1000} s`,
        { details: { field: 'expires_in_seconds', max: cfg.maxTtlMs / 1000 } },
      );
    }
    const origin = previewOriginFor(configured, c.req.header('host'));
    if (!origin) {
      throw new RuntimeError(
        'CONFLICT',
        'previews need a separate origin: the operator must set PREVIEW_ORIGIN (see README, port previews)',
      );
    }
    const base = previewBase(origin, record.id, port);
    const { link, token } = await links.create({
      sandboxId: record.id,
      port,
      createdBy: c.get('session').address,
      ttlMs,
    });
    c.header('cache-control', 'no-store');
    return c.json({ ...view(link, origin), url: `${base}${LINK_PATH}?t=${token}` }, 200);
  });

  app.openapi(routes.list, async (c) => {
    assertOwner(c, 'list preview links');
    const origin = previewOriginFor(configured, c.req.header('host'));
    const all = await links.list(c.get('sandbox').id);
    return c.json({ links: all.map((l) => view(l, origin)) }, 200);
  });

  app.openapi(routes.revoke, async (c) => {
    assertOwner(c, 'revoke preview links');
    const l = await links.revoke(c.get('sandbox').id, c.req.valid('param').link_id);
    const ended = d.live.endLink(l.id);
    c.get('log').info({ sandbox_id: l.sandboxId, link_id: l.id, ended }, 'preview link revoked');
    return c.json(view(l, previewOriginFor(configured, c.req.header('host'))), 200);
  });
}
