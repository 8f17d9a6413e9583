// Listing the caller's sandboxes (by scope: personal, team, all), and one sandbox's public view.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { SandboxRecord } from '../../sandbox/record.ts';
import type { ApiEnv } from '../context.ts';
import type { ApiSandboxes } from '../deps.ts';
import { roleOn, scopeSandboxId } from '../middleware/session.ts';
import {
  errors,
  json,
  SANDBOX_ERRORS,
  SandboxListQuerySchema,
  SandboxListSchema,
  SandboxViewSchema,
} from '../schemas.ts';
import { sandboxView } from '../views.ts';

const listRoute = createRoute({
  method: 'get',
  path: '/api/sandboxes',
  tags: ['sandboxes'],
  summary:
    'The sandboxes the caller owns or is a member of, by scope (a scoped session sees only its sandbox)',
  security: [{ bearer: [] }],
  request: { query: SandboxListQuerySchema },
  responses: { 200: json(SandboxListSchema, 'Sandboxes'), ...errors(400, 401, 429) },
});

const getRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['sandboxes'],
  summary: 'One sandbox: state, resources, timers, ports, members, created/last activity',
  security: [{ bearer: [] }],
  responses: { 200: json(SandboxViewSchema, 'The sandbox'), ...errors(...SANDBOX_ERRORS) },
});

/** Registered on the main app, behind the session middleware. */
export function registerList(app: OpenAPIHono<ApiEnv>, sandboxes: ApiSandboxes, sshOffered: boolean): void {
  app.openapi(listRoute, async (c) => {
    const session = c.get('session');
    const { scope } = c.req.valid('query');
    const scoped = scopeSandboxId(session.scope);
    const [owned, joined] = await Promise.all([
      sandboxes.list({ owner: session.address }),
      sandboxes.list({ member: session.address }),
    ]);
    const shared = (r: SandboxRecord) => (r.members ?? []).length > 0;
    const seen = new Set<string>();
    const out = [];
    for (const r of [...owned, ...joined]) {
      // Each record's role is decided here again, from the record itself (never from which list it came in).
      const role = roleOn(r, session.address);
      if (!role || r.state === 'deleted' || seen.has(r.id)) continue;
      if (scoped !== undefined && r.id !== scoped) continue;
      if (scope === 'personal' && (role !== 'owner' || shared(r))) continue;
      if (scope === 'team' && !shared(r)) continue;
      seen.add(r.id);
      out.push(sandboxView(r, role, sshOffered));
    }
    return c.json({ sandboxes: out }, 200);
  });
}

/** Registered on the sandbox sub-app (access already checked). */
export function registerGet(app: OpenAPIHono<ApiEnv>, sshOffered: boolean): void {
  app.openapi(getRoute, (c) => c.json(sandboxView(c.get('sandbox'), c.get('role'), sshOffered), 200));
}
