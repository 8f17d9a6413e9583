// Port previews: `POST …/previews {port}` mints a one-use ticket for one exposed port of the caller's
// sandbox and answers the URL that redeems it on that port's own host on the preview origin
// (previews/preview-origin.ts). There the ticket becomes an HttpOnly cookie for that host alone,
// tied to the caller's session: signing out closes the port. The console's own origin never
// serves a sandbox's bytes to a browser without the Authorization header (no cookie there).
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';
import type { ApiSessions } from '../deps.ts';
import { type PreviewCredentials, TICKET_TTL_MS } from '../previews/preview-credentials.ts';
import { type PreviewOrigin, previewBase, previewOriginFor } from '../previews/preview-origin.ts';
import { errors, json, jsonBody, SANDBOX_ERRORS } from '../schemas.ts';
import type { SandboxRouteDeps } from './types.ts';

export const TICKET_PATH = '/__asb_preview';

const PreviewRequestSchema = z
  .object({ port: z.number().int().min(1).max(65_535) })
  .openapi('PreviewRequest');
const PreviewSchema = z
  .object({
    url: z.string().openapi({
      description:
        'Open it once, in a new tab with noopener: it redeems a one-use ticket on the preview host',
    }),
    origin: z.string().openapi({ description: "The preview's own origin (this sandbox port's host)" }),
    port: z.number().int(),
    expires_at: z
      .string()
      .openapi({ description: 'When the preview cookie ends at the latest (or the session, if sooner)' }),
  })
  .openapi('Preview');

const previewRoute = createRoute({
  method: 'post',
  path: '/previews',
  tags: ['sandbox'],
  summary:
    "Open a port preview: a one-use URL on the port's own preview host, where it becomes an HttpOnly cookie tied to this session",
  security: [{ bearer: [] }],
  request: { body: jsonBody(PreviewRequestSchema) },
  responses: { 200: json(PreviewSchema, 'Open `url` in a new tab'), ...errors(400, ...SANDBOX_ERRORS, 409) },
});

export function registerPreviews(
  app: OpenAPIHono<ApiEnv>,
  d: SandboxRouteDeps,
  previews: PreviewCredentials,
  previewOrigin: PreviewOrigin | undefined,
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
    const origin = previewOriginFor(previewOrigin, c.req.header('host'));
    if (!origin) {
      throw new RuntimeError(
        'CONFLICT',
        'previews need a separate origin: the operator must set PREVIEW_ORIGIN (see README, port previews)',
      );
    }
    const session = c.get('session');
    if (!session.jti) throw new RuntimeError('UNAUTHORIZED', 'sign in again to open a preview');
    const sessionEnd = typeof session.exp === 'number' ? session.exp * 1000 : Date.now() + previews.ttlMs;
    const expiresAt = Math.min(sessionEnd, Date.now() + previews.ttlMs);
    const grant = { sandboxId: record.id, port, owner: session.address, jti: session.jti };
    const ticket = previews.mint('ticket', {
      ...grant,
      expiresAt: Math.min(expiresAt, Date.now() + TICKET_TTL_MS),
    });
    const base = previewBase(origin, record.id, port);
    c.header('cache-control', 'no-store');
    return c.json(
      {
        url: `${base}${TICKET_PATH}?t=${encodeURIComponent(ticket.value)}`,
        origin: base,
        port,
        expires_at: new Date(expiresAt).toISOString(),
      },
      200,
    );
  });
}

/** The session facts a preview is checked against on every use. */
export type PreviewSessions = Pick<ApiSessions, 'isActive'>;
