// Listing the caller's sandboxes, and one sandbox's public view.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { ApiEnv } from '../context.ts';
import type { ApiSandboxes } from '../deps.ts';
import { scopeSandboxId } from '../middleware/session.ts';
import { errors, json, SANDBOX_ERRORS, SandboxListSchema, SandboxViewSchema } from '../schemas.ts';
import { sandboxView } from '../views.ts';

const listRoute = createRoute({
  method: 'get',
  path: '/api/sandboxes',
  tags: ['sandboxes'],
  summary: "The caller's sandboxes (a scoped session sees only its sandbox)",
  security: [{ bearer: [] }],
  responses: { 200: json(SandboxListSchema, 'Sandboxes'), ...errors(401, 429) },
});

const getRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['sandboxes'],
  summary: 'One sandbox: state, resources, timers, ports, created/last activity',
  security: [{ bearer: [] }],
  responses: { 200: json(SandboxViewSchema, 'The sandbox'), ...errors(...SANDBOX_ERRORS) },
});

/** Registered on the main app, behind the session middleware. */
export function registerList(app: OpenAPIHono<ApiEnv>, sandboxes: ApiSandboxes): void {
  app.openapi(listRoute, async (c) => {
    const session = c.get('session');
    const scoped = scopeSandboxId(session.scope);
    const all = await sandboxes.list({ owner: session.address });
    const mine = all.filter(
      (r) =>
        r.state !== 'deleted' &&
        r.owner.toLowerCase() === session.address &&
        (scoped === undefined || r.id === scoped),
    );
    return c.json({ sandboxes: mine.map(sandboxView) }, 200);
  });
}

/** Registered on the sandbox sub-app (access already checked). */
export function registerGet(app: OpenAPIHono<ApiEnv>): void {
  app.openapi(getRoute, (c) => c.json(sandboxView(c.get('sandbox')), 200));
}
