// Phase-2 secrets: replace, wipe, and list their names (values never leave the operator). The
// owner's alone: a member (team access) gets 403 on all three.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { ApiEnv } from '../context.ts';
import { assertOwner } from '../middleware/session.ts';
import {
  errors,
  json,
  jsonBody,
  SANDBOX_ERRORS,
  SecretNamesSchema,
  SecretsRequestSchema,
  SecretsSetSchema,
  SecretsWipedSchema,
} from '../schemas.ts';
import type { SandboxRouteDeps } from './types.ts';

const setRoute = createRoute({
  method: 'post',
  path: '/secrets',
  tags: ['secrets'],
  summary:
    'Replace the user secrets (1–256 keys, key ≤ 256 chars, value ≤ 64 KiB); container recreated, id and token kept',
  security: [{ bearer: [] }],
  request: { body: jsonBody(SecretsRequestSchema) },
  responses: { 200: json(SecretsSetSchema, 'Configured'), ...errors(400, ...SANDBOX_ERRORS, 409, 413, 502) },
});

const wipeRoute = createRoute({
  method: 'delete',
  path: '/secrets',
  tags: ['secrets'],
  summary: 'Wipe the user secrets (container recreated)',
  security: [{ bearer: [] }],
  responses: { 200: json(SecretsWipedSchema, 'Wiped'), ...errors(...SANDBOX_ERRORS, 409, 502) },
});

const namesRoute = createRoute({
  method: 'get',
  path: '/secrets',
  tags: ['secrets'],
  summary: 'The names of the user secrets, never their values',
  security: [{ bearer: [] }],
  responses: { 200: json(SecretNamesSchema, 'Names'), ...errors(...SANDBOX_ERRORS) },
});

export function registerSecrets(app: OpenAPIHono<ApiEnv>, d: SandboxRouteDeps): void {
  app.openapi(setRoute, async (c) => {
    assertOwner(c, 'set secrets');
    const record = c.get('sandbox');
    const { env } = c.req.valid('json');
    await d.sandboxes.injectSecrets(record.id, env);
    return c.json({ status: 'secrets_configured' as const, sandbox_id: record.id }, 200);
  });

  app.openapi(wipeRoute, async (c) => {
    assertOwner(c, 'wipe secrets');
    const record = c.get('sandbox');
    await d.sandboxes.wipeSecrets(record.id);
    return c.json({ status: 'secrets_wiped' as const, sandbox_id: record.id }, 200);
  });

  app.openapi(namesRoute, (c) => {
    assertOwner(c, 'read secrets');
    const record = c.get('sandbox');
    return c.json({ sandbox_id: record.id, names: Object.keys(record.userEnv ?? {}).sort() }, 200);
  });
}
