// The OpenAPI 3.1 document at /api/openapi.json, generated from the routes' own zod schemas.
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { ApiEnv } from './context.ts';

const INFO = {
  title: 'Agent Sandbox operator API',
  version: '1.0.0',
  description:
    'Wallet sign-in (EIP-4361 message for {address} → PASETO v4.local), then a sandbox owner’s operations. Errors are ' +
    '{error:{code, message, request_id}}. Instance modes serve the sandbox routes under /api/sandbox/….',
};

export function openApiDocument(app: OpenAPIHono<ApiEnv>): Record<string, unknown> {
  const doc = app.getOpenAPI31Document({ openapi: '3.1.0', info: INFO }) as unknown as {
    paths?: Record<string, Record<string, { parameters?: Array<Record<string, unknown>> }>>;
    components?: Record<string, Record<string, unknown>>;
  };
  // The sandbox routes are declared once, relative to their mount; add the mount's {id} here.
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    if (!path.includes('{id}')) continue;
    for (const op of Object.values(item)) {
      if (!op || typeof op !== 'object') continue;
      op.parameters = op.parameters ?? [];
      if (!op.parameters.some((p) => p.name === 'id' && p.in === 'path')) {
        op.parameters.unshift({ name: 'id', in: 'path', required: true, schema: { type: 'string' } });
      }
    }
  }
  doc.components = doc.components ?? {};
  doc.components.securitySchemes = {
    bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'PASETO v4.local (POST /api/auth/session)' },
  };
  return doc as Record<string, unknown>;
}

export function serveOpenApiDocument(app: OpenAPIHono<ApiEnv>): void {
  let cached: Record<string, unknown> | undefined;
  app.get('/api/openapi.json', (c) => {
    cached ??= openApiDocument(app);
    return c.json(cached);
  });
}
